"""Chaos run: writers ingest while a killer ``kill -9``s shard actors, the directory, Ray workers, the driver.

    python -m benchmarks.chaos --out bench/chaos.json            # 52 cycles, 4 fault kinds, one node
    python -m benchmarks.chaos --nodes 3 --kinds node,shard,driver --cycles 12 --out bench/chaos_nodes.json
    python -m benchmarks.chaos --probe --out bench/chaos_probe.json  # audit SQL, ids, kill -9 of serve (~1 min)

The harness starts its own Ray cluster (``ray.cluster_utils.Cluster``: a head, and with ``--nodes N``
N-1 more nodes of one CPU each) and runs the drivers (:mod:`benchmarks.chaos_driver`) as subprocesses
that join it. Each cycle: a driver opens the store (through the public API), checks it against the
histories every earlier driver fsynced, and runs its writers; once every writer has had a batch acknowledged
(a driver just started: its writers' first calls wait for cold shards), after a random 1-3 s (``warmup``) the
fault of the cycle hits (round robin over ``--kinds``):

- ``shard``: SIGKILL of a shard actor's process (Ray restarts it; the calls in flight are retried),
- ``directory``: SIGKILL of the directory actor's process,
- ``worker``: SIGKILL of a random Ray worker process of the cluster (an actor or an idle worker),
- ``driver``: SIGKILL of the driver (its actors die with it); a new driver opens the store at once,
- ``node``: a non-head node holding a shard is removed without warning (its raylet and workers die),
  the shard restarts on a survivor, and a fresh node joins.

Recovery time is from the kill until every writer had a batch acknowledged again (for a driver kill,
without the new driver's own check of the store). Then the store is checked against the histories: by
default the running driver checks it while its writers go on (every shard killed was reopened by Ray
from its log), and a driver kill means a new driver opens the store and checks it before writing; with
``--reopen-every-cycle`` every cycle ends with the driver stopped and the next one opening and checking.
A last driver opens the store and checks it once more at the end.
Only processes this harness started are killed: descendants of its own process (its Ray cluster's
workers, found in ``/proc``) and the pids its drivers report.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tqdm import tqdm

from benchmarks.chaos_driver import WRITERS, read_rows
from benchmarks.ray_local import cmdline, descendants, start_cluster

KINDS = ("shard", "directory", "worker", "driver")
STATUS_TIMEOUT_S = 900.0  # an open or a check (a replay of the whole log) on a loaded machine
RECOVERY_TIMEOUT_S = 600.0


AGENTS = ("ray::DashboardAgent", "ray::RuntimeEnvAgent")


def ray_workers(root: int, exclude: set[int]) -> list[int]:
    """Ray worker processes (their title is ``ray::<actor or IDLE>``; the raylet, whose command line names
    ``default_worker.py`` too, and the agents are not workers)."""
    return [p for p in descendants(root) if p not in exclude
            and cmdline(p).startswith("ray::") and not cmdline(p).startswith(AGENTS)]


def percentiles(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    s = sorted(values)
    pick = lambda q: s[min(len(s) - 1, round(q * (len(s) - 1)))]  # noqa: E731
    return {"n": len(s), "min": round(s[0], 3), "p50": round(pick(0.5), 3), "p90": round(pick(0.9), 3),
            "max": round(s[-1], 3), "mean": round(statistics.fmean(s), 3)}


class Chaos:
    """The drivers, the faults and the per-cycle records of one run."""

    def __init__(self, work: Path, address: str, *, cluster=None, seed: int = 7, num_shards: int = 2,
                 pause: float = 0.1, warmup: tuple[float, float] = (1.0, 3.0), log=None) -> None:
        self.work, self.address, self.cluster = work, address, cluster
        self.store = work / "store"
        self.rng = random.Random(seed)
        self.num_shards, self.pause, self.warmup = num_shards, pause, warmup
        self.log = log or (lambda msg: None)
        self.root = os.getpid()
        self.cycles: list[dict] = []
        self.partial = None  # called with the report after every cycle
        self.checks: list[dict] = []
        self.drivers: list[subprocess.Popen] = []
        work.mkdir(parents=True, exist_ok=True)

    # -- drivers -------------------------------------------------------------
    def start_driver(self, *, verify_only: bool = False) -> tuple[subprocess.Popen, dict]:
        (self.work / "stop").unlink(missing_ok=True)
        cmd = [sys.executable, "-m", "benchmarks.chaos_driver", "--work", str(self.work), "--store", str(self.store),
               "--address", self.address, "--num-shards", str(self.num_shards), "--pause", str(self.pause)]
        with (self.work / "drivers.log").open("ab") as err:
            proc = subprocess.Popen(cmd + (["--verify-only"] if verify_only else []), stdout=err, stderr=err,
                                    env={**os.environ, "HF_HUB_OFFLINE": "1"})
        self.drivers.append(proc)
        deadline = time.monotonic() + STATUS_TIMEOUT_S
        status_file = self.work / f"driver-{proc.pid}.json"
        while not status_file.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"driver {proc.pid} did not open the store (exit {proc.poll()}); "
                                   f"see {self.work / 'drivers.log'}")
            time.sleep(0.05)
        status = json.loads(status_file.read_text())
        self.checks.append(status["verify"])
        if not status["verify"]["ok"]:
            self.log(f"CHECK FAILED after cycle {len(self.cycles)}: {json.dumps(status['verify'])[:500]}")
        return proc, status

    def stop_driver(self, proc: subprocess.Popen) -> dict:
        (self.work / "stop").touch()
        try:
            proc.wait(120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        done = self.work / f"driver-{proc.pid}.done.json"
        return json.loads(done.read_text()) if done.exists() else {}

    def check(self, proc: subprocess.Popen, n: int) -> float | None:
        """The running driver checks the store (while its writers go on); returns how long that took, or
        ``None`` if it did not answer in time."""
        started = time.monotonic()
        request = self.work / f"check-{n}.req"
        request.touch()
        answer = request.with_suffix(".json")
        while not answer.exists():
            if proc.poll() is not None or time.monotonic() - started > STATUS_TIMEOUT_S:
                return None  # the caller replaces the driver: the new one opens the store and checks it
            time.sleep(0.05)
        result = json.loads(answer.read_text())
        self.checks.append(result)
        if not result["ok"]:
            self.log(f"CHECK FAILED after cycle {n}: {json.dumps(result)[:500]}")
        return round(time.monotonic() - started, 3)

    # -- faults --------------------------------------------------------------
    def first_acks_after(self, t: float) -> dict[int, float]:
        out = {}
        for w in range(len(WRITERS)):
            later = [row["t_ack"] for row in read_rows(self.work / f"ack-{w}.jsonl") if row["t_ack"] > t]
            if later:
                out[w] = min(later)
        return out

    def wait_acknowledged(self, t: float) -> float | None:
        """Seconds from ``t`` until every writer had a batch acknowledged after it (``None``: not within
        ``RECOVERY_TIMEOUT_S``)."""
        deadline = time.monotonic() + RECOVERY_TIMEOUT_S
        while time.monotonic() < deadline:
            firsts = self.first_acks_after(t)
            if len(firsts) == len(WRITERS):
                return max(firsts.values()) - t
            time.sleep(0.05)
        return None

    def inject(self, kind: str, proc: subprocess.Popen, status: dict) -> tuple[dict, subprocess.Popen, dict]:
        """Apply one fault; returns what was hit, and the driver (a new one after a driver kill)."""
        if kind == "shard":
            i = self.rng.randrange(len(status["shards"]))
            hit = {"shard": i, "pid": status["shards"][i]["pid"]}
            os.kill(hit["pid"], signal.SIGKILL)
        elif kind == "directory":
            hit = {"pid": status["directory"]}
            os.kill(hit["pid"], signal.SIGKILL)
        elif kind == "worker":
            pids = ray_workers(self.root, {d.pid for d in self.drivers})
            hit = {"pid": self.rng.choice(pids)}
            hit["role"] = ("shard" if hit["pid"] in {s["pid"] for s in status["shards"]} else
                           "directory" if hit["pid"] == status["directory"] else "other worker")
            os.kill(hit["pid"], signal.SIGKILL)
        elif kind == "driver":
            hit = {"pid": proc.pid}
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        elif kind == "node":
            hit = self.kill_node(status)
        else:
            raise ValueError(f"unknown fault kind {kind!r}; use one of {', '.join(KINDS)}, node")
        return hit, proc, status

    def kill_node(self, status: dict) -> dict:
        if self.cluster is None or not self.cluster.worker_nodes:
            raise ValueError("the node fault needs a multi-node cluster: run with --nodes 2 or more")
        holding = {s["node_id"] for s in status["shards"]}
        nodes = list(self.cluster.worker_nodes)
        targets = [n for n in nodes if n.node_id in holding] or nodes
        node = self.rng.choice(targets)
        shards = [i for i, s in enumerate(status["shards"]) if s["node_id"] == node.node_id]
        self.cluster.remove_node(node, allow_graceful=False)
        self.cluster.add_node(num_cpus=1)  # capacity back; the shards have restarted on the survivors by then
        return {"node": node.node_id[:12], "shards_on_it": shards}

    # -- the run -------------------------------------------------------------
    def status_of(self, proc: subprocess.Popen) -> dict:
        """The driver's latest view of its actors (it rewrites the file as they restart)."""
        return json.loads((self.work / f"driver-{proc.pid}.json").read_text())

    def run(self, cycles: int, kinds: list[str], *, reopen_every_cycle: bool = False, final_check: bool = True,
            progress: bool = False) -> dict:
        """``cycles`` faults, the store checked after each; with ``reopen_every_cycle`` each cycle ends with
        the driver stopped and the next one opening and checking the store; without, the running driver
        checks after each fault and takes the next one, until a driver kill replaces it."""
        started = time.time()
        bar = tqdm(total=cycles, unit="cycle", desc="chaos", disable=not progress)
        proc = None
        for n in range(cycles):
            kind = kinds[n % len(kinds)]
            if proc is None:
                proc, status = self.start_driver()
                self.wait_acknowledged(status["verified"])  # the fault hits a store with acknowledged writes
            time.sleep(self.rng.uniform(*self.warmup))
            t_fault = time.time()
            hit, proc, status = self.inject(kind, proc, self.status_of(proc))
            check_s = 0.0
            if kind == "driver":
                proc, status = self.start_driver()
                check_s = status["verified"] - status["opened"]
            recovery = self.wait_acknowledged(t_fault)
            record = {"cycle": n, "kind": kind, "hit": hit, "check_after_s": round(check_s, 3),
                      "recovery_s": None if recovery is None else round(recovery - check_s, 3)}
            if kind == "driver":
                record["reopen_s"] = round(status["opened"] - t_fault, 3)  # process start, Ray join, actors up
                record["ray_join_s"] = round(status["connected"] - status["started"], 3)
            time.sleep(0.5)
            if not reopen_every_cycle and kind != "driver":
                record["check_s"] = self.check(proc, n)
                if record["check_s"] is None:  # no answer: kill it; the next driver opens and checks
                    self.log(f"driver {proc.pid} did not answer check {n}; replaced")
                    proc.kill()
                    proc.wait()
                    proc, _ = self.start_driver()
            if reopen_every_cycle or n == cycles - 1:
                record["driver"] = self.stop_driver(proc)
                proc = None
            self.cycles.append(record)
            if self.partial is not None:  # the report so far, in case the run is cut short
                self.partial(self.report(time.time() - started))
            bar.update(1)
            bar.set_postfix(kind=kind, recovery=record["recovery_s"])
        bar.close()
        if final_check:
            proc, status = self.start_driver(verify_only=True)
            proc.wait(120)
        return self.report(time.time() - started)

    def report(self, seconds: float) -> dict:
        final = self.checks[-1]
        failed = [i for i, c in enumerate(self.checks) if not c["ok"]]
        by_kind = {}
        for kind in dict.fromkeys(c["kind"] for c in self.cycles):
            rows = [c for c in self.cycles if c["kind"] == kind]
            by_kind[kind] = {"cycles": len(rows), "recovery_s": percentiles(
                [c["recovery_s"] for c in rows if c["recovery_s"] is not None]),
                "not_recovered": sum(c["recovery_s"] is None for c in rows)}
            if kind == "driver":
                by_kind[kind]["reopen_s"] = percentiles([c["reopen_s"] for c in rows])
            if kind == "worker":
                by_kind[kind]["roles_hit"] = dict(sorted(
                    {r: sum(c["hit"]["role"] == r for c in rows) for r in {c["hit"]["role"] for c in rows}}.items()))
        return {
            "cycles": len(self.cycles),
            "seconds": round(seconds, 1),
            "checks": len(self.checks),
            "checks_failed": failed,
            "acknowledged_messages": final["acknowledged"],
            "events_in_log": final["events"],
            "lost": len(set().union(*(c["lost"] for c in self.checks))),
            "duplicated": len(set().union(*(c["duplicated"] for c in self.checks))),
            "half_batches": len(set().union(*(c["half_batches"] for c in self.checks))),
            "wrong_memory_id": len(set().union(*(c["wrong_memory_id"] for c in self.checks))),
            "replay_equal_every_check": all(c["replay_equal"] for c in self.checks),
            "lancedb_rows_equal_every_check": all(c["lancedb_rows_equal"] for c in self.checks),
            "recovery_s": percentiles([c["recovery_s"] for c in self.cycles if c["recovery_s"] is not None]),
            "by_kind": by_kind,
            "writer_errors": sum(len(c.get("driver", {}).get("writer_errors", [])) for c in self.cycles),
            "searches": sum(c.get("driver", {}).get("searches", 0) for c in self.cycles),
            "search_errors": sum(c.get("driver", {}).get("search_errors", 0) for c in self.cycles),
            "cycle_records": self.cycles,
        }

    def close(self) -> None:
        for proc in self.drivers:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="kill -9 cycles during ingest; every acknowledged message must survive")
    p.add_argument("--out", help="the JSON report (default bench/chaos.json; with --probe bench/chaos_probe.json)")
    p.add_argument("--probe", action="store_true",
                   help="instead: the short adversarial probe of a served store (benchmarks.chaos_probe)")
    p.add_argument("--cycles", type=int, default=52)
    p.add_argument("--kinds", default=",".join(KINDS), help=f"fault kinds, round robin ({', '.join(KINDS)}, node)")
    p.add_argument("--nodes", type=int, default=1, help="Ray nodes on this machine (the node fault needs 2+)")
    p.add_argument("--shards", type=int, default=2)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--pause", type=float, default=0.3, help="seconds each writer waits between batches")
    p.add_argument("--reopen-every-cycle", action="store_true",
                   help="stop the driver after every cycle; the next one opens and checks the store (slower)")
    p.add_argument("--work", help="keep the store and histories here (default: a temporary directory)")
    args = p.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.probe:
        from benchmarks.chaos_probe import main as probe

        return probe(Path(args.out or "bench/chaos_probe.json"), Path(args.work) if args.work else None)
    args.out = args.out or "bench/chaos.json"
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="palimpsest-chaos-"))
    cluster = start_cluster(args.nodes, connect=False, head_cpus=2 if args.nodes == 1 else 1)
    chaos = Chaos(work, cluster.address, cluster=cluster, seed=args.seed, num_shards=args.shards,
                  pause=args.pause, log=lambda m: print(m, file=sys.stderr))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    load = lambda: [round(x, 1) for x in os.getloadavg()]  # noqa: E731 - this machine is shared
    head = {"nodes": args.nodes, "reopen_every_cycle": args.reopen_every_cycle, "kinds": args.kinds.split(","),
            "seed": args.seed, "shards": args.shards, "writers": len(WRITERS), "pause": args.pause,
            "load_average": load()}
    chaos.partial = lambda r: out.write_text(json.dumps({**head, "complete": False, **r}, indent=2,
                                                        ensure_ascii=False) + "\n")
    try:
        report = chaos.run(args.cycles, args.kinds.split(","), reopen_every_cycle=args.reopen_every_cycle,
                           progress=True)
    finally:
        chaos.close()
        cluster.shutdown()
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    report = {**head, "complete": True, "load_average": {"start": head["load_average"], "end": load()}, **report}
    out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    keys = ("cycles", "acknowledged_messages", "events_in_log", "lost", "duplicated", "half_batches",
            "replay_equal_every_check", "lancedb_rows_equal_every_check", "recovery_s", "writer_errors")
    print(json.dumps({k: report[k] for k in keys}, indent=2))
    print(f"wrote {out}")
    return 0 if not report["checks_failed"] and report["lost"] == report["duplicated"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
