"""The guard of ``palimpsest serve`` (issue 41), on real processes without Ray: when the server is killed, the
processes it started (a listener on a port, one that ignores SIGTERM, one in a session of its own) are ended
and the port is free at once; nothing else is signalled; a clean exit leaves the guard nothing to do. A
direct replica's sockets bind with SO_REUSEADDR; a port still held is waited for, then named."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from events.errors import InvalidInputError
from palimpsest.server import guard, ingress
from palimpsest.server.ports import is_free
from palimpsest.server.settings import ServeSettings

pytestmark = pytest.mark.skipif(not guard.supported(), reason="the guard reads /proc (Linux)")
ROOT = Path(__file__).resolve().parents[2]

# The server's listener draws its own port, another when a process of another test took the drawn one first, and
# says which in the file it is given (written whole) once it listens.
LISTENER = textwrap.dedent("""
    import os, socket, sys, time
    from palimpsest.server.ports import free_port
    s = socket.socket()
    while True:
        try:
            s.bind(("127.0.0.1", free_port()))
            break
        except OSError:
            pass
    s.listen()
    with open(sys.argv[1] + ".part", "w") as f:
        f.write(str(s.getsockname()[1]))
    os.replace(sys.argv[1] + ".part", sys.argv[1])
    time.sleep(600)
""")
SERVER = textwrap.dedent("""
    import os, subprocess, sys, time
    from palimpsest.server.guard import start_guard
    LISTENER = %r
    start_guard()
    kids = [
        subprocess.Popen([sys.executable, "-c", LISTENER, sys.argv[1]]),
        subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, "
                          "signal.SIG_IGN); time.sleep(600)"]),
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True),
    ]
    print(" ".join(str(k.pid) for k in kids), flush=True)
    if sys.argv[2] == "exit":
        sys.stdin.readline()
        for k in kids:
            k.kill()
            k.wait()
        sys.exit(0)
    time.sleep(600)
""")


def start_server(port_file: Path, how: str) -> tuple[subprocess.Popen, list[int]]:
    """The server (``how``: ``stay`` after starting its children, or ``exit`` when told) and its children's pids; its
    listener's port is in ``port_file`` once it listens."""
    proc = subprocess.Popen([sys.executable, "-c", SERVER % LISTENER, str(port_file), how], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    pids = [int(p) for p in proc.stdout.readline().split()]
    return proc, pids


def guards_of(server: int) -> list[int]:
    return [p for p, (parent, _, _) in guard.process_table().items() if parent == server
            and b"palimpsest.server.guard" in Path(f"/proc/{p}/cmdline").read_bytes()]


def until(predicate, seconds: float) -> float | None:
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        if predicate():
            return time.monotonic() - started
        time.sleep(0.05)
    return None


def test_a_killed_servers_processes_are_ended_and_its_port_freed_at_once(tmp_path):
    port_file = tmp_path / "port"
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])  # not the server's
    server, pids = start_server(port_file, "stay")
    try:
        [watcher] = guards_of(server.pid)
        watcher = {watcher: guard.process_table()[watcher][1]}
        assert until(port_file.exists, 30) is not None  # the child listens
        port = int(port_file.read_text())
        assert not is_free("127.0.0.1", port, reuse=True)
        time.sleep(guard.POLL_S * 3)  # the guard has recorded the children
        procs = {p: t for p, t in guard.descendants(server.pid).items() if p in pids}
        assert len(procs) == 3
        server.kill()
        server.wait()
        took = until(lambda: not guard.running(procs), 10)
        assert took is not None and took < guard.GRACE_S + 2.0, guard.running(procs)
        assert is_free("127.0.0.1", port, reuse=True)
        assert until(lambda: not guard.running(watcher), 5) is not None  # and then the guard itself ends
        assert bystander.poll() is None  # nothing it did not record is signalled
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        bystander.kill()
        bystander.wait()
        if server.poll() is None:
            server.kill()
            server.wait()


def test_after_a_clean_exit_the_guard_ends_too(tmp_path):
    server, pids = start_server(tmp_path / "port", "exit")
    [watcher] = guards_of(server.pid)
    watcher = {watcher: guard.process_table()[watcher][1]}
    time.sleep(guard.POLL_S * 2)
    assert guard.running(watcher)  # it watches while the server runs
    server.communicate("stop\n", timeout=30)  # the server ends its children itself, then exits
    assert server.returncode == 0
    assert until(lambda: not guard.running(watcher), 10) is not None  # the pipe closed: nothing left, it ends


def test_a_recycled_pid_is_not_taken_for_a_recorded_process():
    me = guard.process_table()[os.getpid()][1]
    assert guard.running({os.getpid(): me}) == {os.getpid(): me}
    assert guard.running({os.getpid(): me + 1}) == {}  # same pid, another start time: another process
    assert guard.end({os.getpid(): me + 1}, grace_s=0.1) == {}  # so it is never signalled


def test_a_direct_replicas_http_sockets_bind_with_reuse_address():
    from ray.serve._private import http_util

    assert ingress.reuse_address() and ingress.reuse_address()  # once, however often it is called
    with http_util.socket.socket(http_util.socket.AF_INET, http_util.socket.SOCK_STREAM) as sock:
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR) == 1
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT) == 0  # a live listener keeps its port


def test_a_port_still_held_is_waited_for_then_named_with_its_fix(capsys):
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        started = time.monotonic()
        with pytest.raises(InvalidInputError) as err:
            ingress.plan(ServeSettings(store="s", port=port), port_wait_s=0.6)
        assert time.monotonic() - started >= 0.6
    assert err.value.problems[0][0] == "port" and "waited 0.6s" in str(err.value) and "--port" in str(err.value)
    assert f"port {port} on 127.0.0.1 is still in use" in capsys.readouterr().err
    assert ingress.plan(ServeSettings(store="s", port=port), port_wait_s=5).mode == "direct"  # free again
