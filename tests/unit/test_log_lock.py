"""``lock_holders``: the other processes holding a lock on a file, read from /proc/locks without opening the file
(closing a descriptor of it would drop this process's own DuckDB lock)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import duckdb
import pytest

from events.log_lock import lock_holders

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/locks is Linux's")
HOLD = "import duckdb, sys, time\ncon = duckdb.connect(sys.argv[1])\nprint('held', flush=True)\ntime.sleep(120)\n"


def held_by_child(path):
    child = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "held"
    return child


def test_another_process_holding_a_duckdb_file_is_named_and_this_process_is_not(tmp_path):
    path = tmp_path / "log.duckdb"
    duckdb.connect(str(path)).close()
    assert lock_holders([path]) == {}
    child = held_by_child(path)
    try:
        assert lock_holders([path]) == {path: [child.pid]}
    finally:
        child.kill()
        child.wait()
    deadline = time.monotonic() + 10
    while lock_holders([path]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert lock_holders([path]) == {}

    own = duckdb.connect(str(path))  # this process's own lock is not another's, and asking leaves it held
    try:
        assert lock_holders([path]) == {}
        probe = subprocess.run([sys.executable, "-c", "import duckdb, sys; duckdb.connect(sys.argv[1])", str(path)],
                               capture_output=True, text=True, timeout=60)
        assert probe.returncode != 0 and "lock" in probe.stderr.lower()
    finally:
        own.close()


def test_the_lock_list_is_read_line_by_line_and_a_missing_file_has_no_holder(tmp_path):
    path = tmp_path / "f"
    path.write_text("x")
    st = path.stat()
    where = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    locks = tmp_path / "locks"
    locks.write_text("\n".join([
        f"1: POSIX  ADVISORY  WRITE 4242 {where} 0 EOF",
        f"1: -> POSIX  ADVISORY  WRITE 4343 {where} 0 EOF",  # a process waiting for the lock does not hold it
        f"2: OFDLCK ADVISORY  WRITE -1 {where} 0 EOF",  # an open file description's lock has no process
        f"3: POSIX  ADVISORY  WRITE 4444 {where}0 0 EOF",  # another inode
        "garbage", "",
        f"4: POSIX  ADVISORY  READ {os.getpid()} {where} 0 EOF",  # this process
    ]))
    other = tmp_path / "g"
    other.write_text("y")
    assert lock_holders([path, other], locks) == {path: [4242]}  # the list read once for both
    assert lock_holders([tmp_path / "missing"], locks) == {}
    assert lock_holders([path], tmp_path / "no-such-list") == {}
