"""Peak resident memory of the driver and of this run's Ray processes.

Covers: the driver (``getrusage(RUSAGE_SELF).ru_maxrss``: model, tokenizer,
baseline indexes, results) plus every Ray worker started by this driver's
local Ray instance (descendant processes whose command line starts with
``ray::`` -- the shard and directory actors and idle workers), each at its
kernel high-water mark (``VmHWM`` in ``/proc/<pid>/status``), so no sampling
is needed. The sum of per-process peaks is an upper bound on the combined
peak. Ray's own daemons (raylet, gcs_server, ...) are reported apart as
``ray_infra_peak_mb``. Linux only; elsewhere (or on an external cluster via
``RAY_ADDRESS``, whose workers are not our descendants) only the driver is
counted. psutil is not needed: it cannot read peaks on Linux anyway.
"""

from __future__ import annotations

import os
import resource
import sys
from pathlib import Path

PROC = Path("/proc")


def _ppid_map() -> dict[int, int]:
    out = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            out[int(entry.name)] = int(stat[stat.rindex(")") + 2 :].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return out


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, ppid in _ppid_map().items():
        children.setdefault(ppid, []).append(pid)
    out, stack = [], [root]
    while stack:
        for child in children.get(stack.pop(), []):
            out.append(child)
            stack.append(child)
    return out


def _cmdline(pid: int) -> str:
    try:
        return (PROC / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def _hwm_mb(pid: int) -> float:
    try:
        for line in (PROC / str(pid) / "status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    return 0.0


def driver_peak_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def peak_rss() -> dict:
    """Call before closing the store (workers must still be alive)."""
    driver = driver_peak_mb()
    workers: list[float] = []
    infra: list[float] = []
    if PROC.is_dir():
        for pid in _descendants(os.getpid()):
            cmd = _cmdline(pid)
            if not cmd:
                continue
            (workers if cmd.startswith("ray::") else infra).append(_hwm_mb(pid))
    return {
        "peak_rss_mb": driver + sum(workers),
        "driver_peak_mb": driver,
        "ray_workers_peak_mb": sum(workers),
        "ray_workers": len(workers),
        "ray_infra_peak_mb": sum(infra),
        "ray_infra_processes": len(infra),
        "covers": "driver ru_maxrss + VmHWM of this run's ray:: worker processes (sum of per-process peaks); "
        "Ray daemons reported apart",
    }


def cpu_snapshot() -> dict[int, tuple[str, float]]:
    """CPU seconds (user + system) so far of this process and of every process under it, by pid, with its role:
    ``driver``, ``ray_workers`` (``ray::`` processes: the shards) or ``ray_infra`` (Ray's daemons)."""
    ticks = os.sysconf("SC_CLK_TCK")
    me = os.getpid()
    out = {}
    for pid in [me, *(_descendants(me) if PROC.is_dir() else [])]:
        try:
            stat = (PROC / str(pid) / "stat").read_text()
            fields = stat[stat.rindex(")") + 2:].split()
        except (OSError, ValueError):
            continue
        role = "driver" if pid == me else "ray_workers" if _cmdline(pid).startswith("ray::") else "ray_infra"
        out[pid] = (role, (int(fields[11]) + int(fields[12])) / ticks)
    return out


def cpu_between(before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]]) -> dict[str, float]:
    """CPU seconds each role used between two :func:`cpu_snapshot` (a process started in between counts from 0;
    one that ended in between is not counted), and their total."""
    used: dict[str, float] = {"driver": 0.0, "ray_workers": 0.0, "ray_infra": 0.0}
    for pid, (role, seconds) in after.items():
        used[role] += seconds - before.get(pid, (role, 0.0))[1]
    used["total"] = sum(used.values())
    return {k: round(v, 2) for k, v in used.items()}
