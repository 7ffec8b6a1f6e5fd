"""The guard of ``palimpsest serve``'s processes: when the server dies without stopping (``kill -9``, the OOM
killer), nothing it started is left running and its port is free again at once.

``palimpsest serve`` runs a local Ray as its descendants (GCS, raylet, Ray's dashboard and runtime-env
agents, the shard, directory and Serve workers; a direct-ingress replica holds the HTTP port). A clean stop
shuts them down. After a kill, Ray's own fate-sharing is slow and partial: the replica keeps the port for
seconds (a restart is refused) and the agents outlive it as orphans.

The guard is a small process in a session of its own, started by the server before Ray. Its stdin is a
pipe whose other end only the server holds, so it learns of the server's end at once, however it ended
(EOF). Until then it records the server's descendants (pid and start time, read from ``/proc``) every
:data:`POLL_S` seconds. After the EOF it sends SIGTERM to the recorded processes still running, and SIGKILL
to those still running :data:`GRACE_S` later; a process counts as recorded only if its pid *and* start time
match (a recycled pid is never signalled). The pipe stays open until the server's process exits, after Ray's
own shutdown: after a clean stop there is nothing left to signal. The guard ignores SIGTERM, SIGINT and SIGHUP:
a stop sent to every process of the server (systemd's default ``KillMode=control-group``) must not end the guard
before the server it outlives. Linux only (``/proc``): elsewhere no guard is started.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

POLL_S = 1.0  # a /proc scan costs a few ms of CPU; a worker started since the last one exits with its raylet
# The server is gone and every write it acknowledged is durable (fsynced before the answer): its processes get
# a moment to exit on SIGTERM, not a drain. A direct-ingress replica holds the port until it is gone.
GRACE_S = 0.5
Procs = dict[int, int]  # pid → start time (clock ticks since boot, /proc/<pid>/stat field 22)


def supported() -> bool:
    return sys.platform.startswith("linux") and Path("/proc/self/stat").exists()


def process_table() -> dict[int, tuple[int, int, str]]:
    """Every process: pid → (parent pid, start time, state letter)."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
        except OSError:  # it ended while the table was read
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after "(command)", which may hold spaces
        out[int(name)] = (int(fields[1]), int(fields[19]), fields[0])
    return out


def descendants(pid: int, table: dict[int, tuple[int, int, str]] | None = None) -> Procs:
    """The processes below ``pid`` (children, their children, ...) with their start times."""
    table = table if table is not None else process_table()
    children: dict[int, list[int]] = {}
    for child, (parent, _, _) in table.items():
        children.setdefault(parent, []).append(child)
    found, todo = {}, [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found[child] = table[child][1]
                todo.append(child)
    return found


def running(procs: Procs) -> Procs:
    """Those of ``procs`` still running as the same processes (same pid and start time; zombies are done)."""
    table = process_table()
    return {p: t for p, t in procs.items() if p in table and table[p][1] == t and table[p][2] != "Z"}


def left_after(procs: Procs, wait_s: float) -> Procs:
    """Those of ``procs`` still running after up to ``wait_s`` seconds (a stopped server's, as they exit)."""
    deadline = time.monotonic() + wait_s
    while (left := running(procs)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def end(procs: Procs, grace_s: float = GRACE_S) -> Procs:
    """SIGTERM to each of ``procs`` still running, SIGKILL to those left after ``grace_s``; what was left."""
    left = running(procs)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in left:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + (grace_s if sig == signal.SIGTERM else 1.0)
        while left and time.monotonic() < deadline:
            time.sleep(0.05)
            left = running(left)
        if not left:
            break
    return left


def watch(server: int) -> Procs:
    """Record ``server``'s descendants until stdin ends (the server ended), then end those still running."""
    seen: Procs = {}
    me = os.getpid()
    ended = threading.Event()

    def wait_for_eof() -> None:
        while sys.stdin.buffer.read(1):
            pass
        ended.set()

    threading.Thread(target=wait_for_eof, daemon=True).start()
    while not ended.wait(POLL_S):
        seen.update({p: t for p, t in descendants(server).items() if p != me})
    seen.update({p: t for p, t in descendants(server).items() if p != me})  # a clean stop leaves none
    return end(seen)


_guard: subprocess.Popen | None = None  # held until the interpreter ends: its pipe closes with this process


def start_guard() -> subprocess.Popen | None:
    """Start this process's guard (once); None where it is not supported."""
    global _guard
    if _guard is None and supported():
        _guard = subprocess.Popen(
            [sys.executable, "-m", "palimpsest.server.guard", str(os.getpid())], stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
    return _guard


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


if __name__ == "__main__":
    for stop in STOP_SIGNALS:  # the server's end (EOF) ends the guard; SIGKILL still does
        signal.signal(stop, signal.SIG_IGN)
    watch(int(sys.argv[1]))
