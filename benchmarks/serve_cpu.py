"""``benchmarks.serve --cpu``: where a served store's CPU goes, per request kind and per process (used by
:mod:`benchmarks.serve`).

Capacity on a small machine is CPU: a request kind's cost is the CPU every process of the served store spends on
it. This mode sums, from ``/proc``, the CPU time of this process and of every process it started (the local Ray:
its GCS and raylet, Serve's controller and proxy, the replica, the shard actors, the store's other actors), by
role (:func:`role`):

- **idle**: with no request at all, each role's CPU per second (Ray's and Serve's periodic work: a served store's
  floor, paid whatever the load);
- **per kind**: one kind of request alone (:data:`benchmarks.serve_load.MIX`'s kinds, then the mix itself) sent at
  a fixed rate well under capacity, and the CPU each role spent over the level and the moment after it (the
  background work the level left: touches, snapshots), per answered request, as measured and above the idle floor
  (the idle rate times the window, taken out: what a request of that kind costs).

A kind's requests are refused (503) when its class is saturated (an ingest's write slot): such a level's
figures are per *answered* request and the refusals are reported beside them. The load generator (this process)
is a role of its own: on a 2-core machine it shares the cores it measures.
"""

from __future__ import annotations

import os
import time

from benchmarks.serve_overload import draw, drive

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# Ray's process titles (``ray::<Actor>``) and executables, in the order they are tried: the first match names the role
ROLES = (
    ("ray::ShardActor", "shard"),
    ("ray::ServeReplica", "replica"),
    ("ray::ServeController", "serve controller"),
    ("ray::ProxyActor", "serve proxy"),
    ("ray::DirectoryActor", "directory"),
    ("ray::RateLimiterActor", "rate limiter"),
    ("raylet", "raylet"),
    ("gcs_server", "gcs"),
    ("ray::DashboardAgent", "ray dashboard agent"),
    ("ray::IDLE", "ray idle worker"),
    ("log_monitor", "ray log monitor"),
    ("autoscaler", "ray monitor"),
    ("dashboard", "ray dashboard"),
    ("ray::", "ray other"),
)


def role(cmdline: str, pid: int, me: int) -> str:
    """The role of process ``pid`` whose command line is ``cmdline`` (``me``: the load generator's pid)."""
    if pid == me:
        return "load generator"
    for marker, name in ROLES:
        if marker in cmdline:
            return name
    return "other"


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds) of ``pid``, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def snapshot(root: int | None = None) -> dict[int, tuple[str, float]]:
    """pid -> (role, CPU seconds) of ``root`` (default: this process) and every process descending from it."""
    root = os.getpid() if root is None else root
    stats = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (s := _stat(int(name))) is not None:
            stats[int(name)] = s
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in stats.items():
        children.setdefault(parent, []).append(pid)
    tree, stack = [], [root]
    while stack:
        pid = stack.pop()
        if pid in stats:
            tree.append(pid)
            stack.extend(children.get(pid, ()))
    return {pid: (role(_cmdline(pid), pid, root), stats[pid][1]) for pid in tree}


def spent(before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]]) -> dict[str, float]:
    """CPU seconds by role between two snapshots (a process started in between counts from zero; one gone in
    between is not counted: its last seconds are lost, which only understates)."""
    out: dict[str, float] = {}
    for pid, (name, cpu) in after.items():
        was = before.get(pid)
        out[name] = out.get(name, 0.0) + cpu - (was[1] if was is not None and was[0] == name else 0.0)
    return out


def idle(seconds: float) -> dict:
    """Each role's CPU per second with no request."""
    before, started = snapshot(), time.perf_counter()
    time.sleep(seconds)
    elapsed = time.perf_counter() - started
    by_role = spent(before, snapshot())
    return {"seconds": round(elapsed, 2), "total_ms_per_s": round(1000 * sum(by_role.values()) / elapsed, 1),
            "ms_per_s": _sorted({k: 1000 * v / elapsed for k, v in by_role.items()})}


def level(url: str, requests: list, rate: float, seconds: float, *, idle_ms_per_s: dict[str, float],
          after_s: float = 1.5, connections: int = 64, on_ack=None) -> dict:
    """``requests`` sent at ``rate`` for ``seconds``, then ``after_s`` of quiet; CPU ms by role per answered
    request, as measured and above the idle floor ``idle_ms_per_s``."""
    before, started = snapshot(), time.perf_counter()
    driven = drive(url, requests, rate, seconds, connections, on_ack)
    time.sleep(after_s)
    window = time.perf_counter() - started
    by_role = spent(before, snapshot())
    answered = sum(e["n"] for e in driven["by_endpoint"].values())
    per = max(answered, 1)
    measured = {k: 1000 * v / per for k, v in by_role.items()}
    above = {k: max(0.0, 1000 * v - idle_ms_per_s.get(k, 0.0) * window) / per for k, v in by_role.items()}
    return {"offered_req_s": rate, "goodput_req_s": driven["goodput_req_s"],
            "refused_req_s": driven["refused_total_req_s"], "other_errors": driven["other_errors"],
            "accepted_p50_ms": driven["accepted_p50_ms"], "accepted_p95_ms": driven["accepted_p95_ms"],
            "answered": answered, "window_s": round(window, 2),
            "cpu_ms_per_request": round(sum(measured.values()), 2),
            "cpu_ms_per_request_above_idle": round(sum(above.values()), 2),
            "by_role_ms": _sorted(measured), "by_role_above_idle_ms": _sorted(above)}


def measure(url: str, workload_for, kinds: list[str], *, rate: float, seconds: float, idle_s: float,
            on_ack=None, settle=lambda: None, log=print) -> dict:
    """The idle floor, then one :func:`level` per kind (``workload_for(kind)``: a workload of that kind alone, or of
    the mix for ``"mix"``), ``settle()`` before each (the work a level left behind, such as the graph memories its
    ingests staged, done outside the next one's window)."""
    settle()
    floor = idle(idle_s)
    log(f"idle: {floor['total_ms_per_s']} ms of CPU per second ({_top(floor['ms_per_s'])})")
    kinds_out = {}
    for kind in kinds:
        settle()
        lv = level(url, draw(workload_for(kind), int(rate * seconds)), rate, seconds,
                   idle_ms_per_s=floor["ms_per_s"], on_ack=on_ack)
        kinds_out[kind] = lv
        log(f"{kind:>8}: {lv['goodput_req_s']} answered/s (refused {lv['refused_req_s']}/s), "
            f"{lv['cpu_ms_per_request']} ms CPU per answered request, {lv['cpu_ms_per_request_above_idle']} above "
            f"idle ({_top(lv['by_role_above_idle_ms'])})")
    return {"rate_req_s": rate, "seconds": seconds, "idle": floor, "kinds": kinds_out}


def _sorted(values: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 2) for k, v in sorted(values.items(), key=lambda kv: -kv[1])}


def _top(values: dict[str, float], n: int = 4) -> str:
    return ", ".join(f"{k} {v:g}" for k, v in list(values.items())[:n])
