"""Which other processes hold a lock on files (DuckDB holds one on a log while it has it open), asked without
opening the file: on Linux, from ``/proc/locks``.

Opening and closing the file to ask (``fcntl`` ``F_GETLK``) would release every POSIX lock this process holds on
it, a DuckDB connection's included, so the file is only ``stat``-ed. Elsewhere, or when the list cannot be read,
no holder is known and the caller goes on as before.
"""

from __future__ import annotations

import os
from pathlib import Path

PROC_LOCKS = Path("/proc/locks")


def lock_holders(paths: list[Path], locks: Path = PROC_LOCKS) -> dict[Path, list[int]]:
    """For each of ``paths`` that processes other than this one hold a lock on, their pids; the lock list is read
    once for all of them (no holder known: left out)."""
    wanted = {}
    for path in paths:
        try:
            st = path.stat()
        except OSError:
            continue
        wanted[(os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)] = path
    try:
        lines = locks.read_text().splitlines() if wanted else []
    except OSError:
        return {}
    found: dict[Path, set[int]] = {}
    for line in lines:
        # "1: POSIX  ADVISORY  WRITE 12847 fe:00:2148219 0 EOF"; a waiting request has "->" after the number
        fields = line.split()
        if len(fields) < 6 or fields[1] == "->":
            continue
        try:
            major, minor, inode = fields[5].split(":")
            path = wanted.get((int(major, 16), int(minor, 16), int(inode)))
            pid = int(fields[4])
        except ValueError:
            continue
        if path is not None and pid > 0 and pid != os.getpid():
            found.setdefault(path, set()).add(pid)
    return {path: sorted(pids) for path, pids in found.items()}
