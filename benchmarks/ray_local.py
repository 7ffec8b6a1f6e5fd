"""A Ray cluster of this process's own on this machine, and the processes under it (read from /proc).

Everything here touches only what this process started: its own cluster (in a Ray temp dir of its own)
and its own descendants, never another user's Ray on the same machine.
"""

from __future__ import annotations

import os
import time
import tempfile
from pathlib import Path

from actors.ray_init import SYSTEM_CONFIG


def descendants(root: int) -> list[int]:
    """Every process below ``root`` (read from /proc): what this harness started, and nothing else."""
    parent = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parent[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    out, frontier = [], [root]
    while frontier:
        pid = frontier.pop()
        kids = [p for p, pp in parent.items() if pp == pid]
        out += kids
        frontier += kids
    return out


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


# A node that stops answering is declared dead after ~3 s (Ray's defaults take about 30 s): its actors restart
# on the survivors sooner. A deployment sets these on its head node (ray start --system-config).
FAST_NODE_DEATH = {"health_check_initial_delay_ms": 0, "health_check_period_ms": 1000,
                   "health_check_timeout_ms": 1000, "health_check_failure_threshold": 3, **SYSTEM_CONFIG}


def start_cluster(nodes: int, *, pin: bool = False, connect: bool = True, head_cpus: int = 1):
    """A head and ``nodes``-1 more Ray nodes of one CPU each, on this machine, in a Ray temp dir of our own:
    Ray writes a cluster's address to ``<temp>/ray/ray_current_cluster``, where a plain ``ray.init()`` of
    anyone else on the machine would find it and join."""
    from ray.cluster_utils import Cluster

    os.environ["RAY_TMPDIR"] = tempfile.mkdtemp(prefix="plm-ray-", dir="/tmp")
    for attempt in range(3):  # Ray gives a raylet 30 s to register: a loaded machine may need another go
        try:
            cluster = Cluster(initialize_head=True, connect=connect, head_node_args={
                "num_cpus": head_cpus, "include_dashboard": False, "_system_config": FAST_NODE_DEATH})
            break
        except Exception as exc:  # noqa: BLE001 - Ray raises a bare Exception for this timeout
            if "timed out during startup" not in str(exc) or attempt == 2:
                raise
    for _ in range(nodes - 1):
        cluster.add_node(num_cpus=1)
    if connect:
        wait_for_resources(cluster, head_cpus + nodes - 1)
    if pin:
        for i, node in enumerate([cluster.head_node, *cluster.worker_nodes]):
            pin_node(node, i % (os.cpu_count() or 1))
    return cluster


def wait_for_resources(cluster, cpus: int, timeout: float = 60.0) -> None:
    """Until every node is alive and the scheduler counts all their CPUs: the resource view lags a node's
    registration, and actors placed before it catches up all land on the nodes it already counts."""
    import ray

    cluster.wait_for_nodes(timeout)
    deadline = time.monotonic() + timeout
    while ray.cluster_resources().get("CPU", 0) < cpus:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the Ray cluster counts {ray.cluster_resources().get('CPU', 0)} CPUs, not {cpus}")
        time.sleep(0.2)
    # The count above is the GCS's; a SPREAD placement is decided by the driver's raylet, whose view of the other
    # nodes can lag it (all three shards once landed on the head). Wait until SPREAD probes reach every node.
    nodes = len(cluster.list_all_nodes())

    @ray.remote(num_cpus=0)
    def node_id() -> str:
        return ray.get_runtime_context().get_node_id()

    while len(set(ray.get([node_id.options(scheduling_strategy="SPREAD").remote() for _ in range(2 * nodes)]))) < nodes:
        if time.monotonic() > deadline:
            raise TimeoutError(f"SPREAD placements do not reach all {nodes} nodes of the Ray cluster")
        time.sleep(0.5)


def pin_node(node, core: int) -> None:
    """Pin a node's raylet and the processes under it to one core (workers it starts later inherit it)."""
    raylet = node.all_processes["raylet"][0].process.pid
    for pid in [raylet, *descendants(raylet)]:
        try:
            os.sched_setaffinity(pid, {core})
        except ProcessLookupError:
            pass
