"""Which other processes hold a lock on a file (DuckDB holds one on a log while it has it open), asked without
opening the file: on Linux, from ``/proc/locks``.

Opening and closing the file to ask (``fcntl`` ``F_GETLK``) would release every POSIX lock this process holds on
it, a DuckDB connection's included, so the file is only ``stat``-ed. Elsewhere, or when the list cannot be read,
no holder is known and the caller goes on as before.
"""

from __future__ import annotations

import os
from pathlib import Path

PROC_LOCKS = Path("/proc/locks")


def lock_holders(path: Path, locks: Path = PROC_LOCKS) -> list[int]:
    """The pids, other than this process, that hold a lock on ``path`` (none known: [])."""
    try:
        st = path.stat()
        lines = locks.read_text().splitlines()
    except OSError:
        return []
    wanted = (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    pids = []
    for line in lines:
        # "1: POSIX  ADVISORY  WRITE 12847 fe:00:2148219 0 EOF"; a waiting request has "->" after the number
        fields = line.split()
        if len(fields) < 6 or fields[1] == "->":
            continue
        try:
            major, minor, inode = fields[5].split(":")
            held = (int(major, 16), int(minor, 16), int(inode))
            pid = int(fields[4])
        except ValueError:
            continue
        if held == wanted and pid > 0 and pid != os.getpid():
            pids.append(pid)
    return sorted(set(pids))
