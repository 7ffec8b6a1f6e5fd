"""The served store under load: ``python -m benchmarks.serve --data ../shared/data/locomo/locomo10_dev.json
--out bench/serve.json`` (``make bench-serve``; ``--quick`` for a short run with the hash embedder).

1. Starts a served store (local Ray, Ray Serve, the real MiniLM encoder) on a free port, the rate limit off.
2. Loads the dev dialogues through the HTTP API under several tenants (samples dealt round-robin, one key each).
3. Asks every dev question through HTTP and in-process against the same shards at the same ``now``: the hits
   must be the same (ids and order); recall@10 of both; the latency of both, one query at a time (the
   server's overhead as a ratio at one client).
4. Drives a mixed open-loop workload (:data:`benchmarks.serve_load.MIX`) at each ``clients:rate`` level and
   reports per endpoint throughput, p50/p95/p99 (from each request's scheduled start) and errors.
5. Checks that every acknowledged message is in the log exactly once.

With ``--cpu`` steps 3–4 are replaced by a CPU account (:mod:`benchmarks.serve_cpu`): every process's CPU idle,
then per answered request of each kind alone and of the mix, by process (replica, shards, Serve, Ray).

With ``--overload`` steps 3–4 are replaced by the overload suite (:mod:`benchmarks.serve_overload`): the mixed
load ramped until goodput stops rising (``capacity_req_s``), then held at 2× and 4× that (goodput, refusals,
accepted and refusal latency, other errors); the search-only capacity; and a modest tenant's p95 beside a
tenant flooding at ``--flood-factor`` × its share, against its p95 alone. Every level records the load average.

The figures depend on the machine and on what else runs on it: a shared VM makes them noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import dataset as ds
from benchmarks import serve_cpu
from benchmarks.provenance import stamp
from benchmarks.serve_load import MIX, Tenancy, Workload, exactly_once, load_dialogues, open_loop, same_hits
from benchmarks.serve_overload import draw, drive, fairness, ramp
from palimpsest.server.ports import free_port

LEVELS = "1:2,8:8,32:16,64:32"
QUICK_LEVELS = "1:4,8:8"
SEARCH_P95_MS = 100.0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.serve", description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="a LoCoMo-format JSON file")
    p.add_argument("--out", required=True, help="where to write the JSON report")
    p.add_argument("--quick", action="store_true", help="one sample, 10 questions, 2 short levels, hash embedder")
    p.add_argument("--levels", help=f"clients:requests-per-second,... (default {LEVELS}; quick {QUICK_LEVELS})")
    p.add_argument("--seconds", type=float, help="length of each level (default 20; quick 3)")
    p.add_argument("--tenants", type=int, default=3, help="tenants the samples are dealt to (default 3)")
    p.add_argument("--embedder", choices=["minilm", "hash"], help="default minilm; quick: hash")
    p.add_argument("--limit-samples", type=int, help="only the first N samples (quick: 1)")
    p.add_argument("--questions", type=int, help="only the first N questions (quick: 10)")
    p.add_argument("--replicas", type=int, default=1)
    p.add_argument("--shards", type=int, help="shard actors of the benchmark's store (default: one per core)")
    p.add_argument("--ingress", choices=["auto", "direct", "proxy"], default="auto",
                   help="how requests reach the replicas (default auto: direct for one replica)")
    o = p.add_argument_group("--overload")
    o.add_argument("--overload", action="store_true", help="the overload suite instead of the fixed levels")
    o.add_argument("--ramp-start", type=float, default=20.0, help="first offered rate of the ramp (req/s)")
    o.add_argument("--ramp-factor", type=float, default=1.3, help="each ramp step offers this much more")
    o.add_argument("--step-seconds", type=float, default=8.0, help="length of each ramp step")
    o.add_argument("--hold-seconds", type=float, default=15.0, help="length of the 2x and 4x levels")
    o.add_argument("--max-rate", type=float, default=3000.0, help="the ramp stops here at the latest")
    o.add_argument("--connections", type=int, default=512, help="the load generator's connections")
    o.add_argument("--flood-factor", type=float, default=10.0, help="the flooding tenant's rate over its share")
    o.add_argument("--modest-share", type=float, default=0.1,
                   help="the modest tenant's rate, as a share of capacity")
    o.add_argument("--capacity", type=float, metavar="REQ_S",
                   help="skip both ramps and take this as the mixed-load capacity (a figure an earlier run measured): "
                        "the overload levels and the fairness run alone, for a quicker check; the report says it was given")
    o.add_argument("--fairness-only", action="store_true",
                   help="with --capacity: only the fairness run (no 2x and 4x levels), to check a change to it quickly")
    c = p.add_argument_group("--cpu")
    c.add_argument("--cpu", action="store_true",
                   help="where the CPU goes instead of the fixed levels: each process's CPU idle, then per answered "
                        "request of each kind alone and of the mix (benchmarks.serve_cpu)")
    c.add_argument("--cpu-rate", type=float, default=30.0, help="each kind's offered rate, req/s (default %(default)s)")
    c.add_argument("--cpu-seconds", type=float, help="length of each kind's level (default 10; quick 2)")
    c.add_argument("--idle-seconds", type=float, help="length of the idle measure (default 10; quick 2)")
    args = p.parse_args(argv)
    if args.cpu and args.overload:
        p.error("--cpu and --overload are two modes: choose one")
    quick = args.quick
    args.cpu_seconds = (2.0 if quick else 10.0) if args.cpu_seconds is None else args.cpu_seconds
    args.idle_seconds = (2.0 if quick else 10.0) if args.idle_seconds is None else args.idle_seconds
    if min(args.cpu_rate, args.cpu_seconds, args.idle_seconds) <= 0:
        p.error("--cpu-rate, --cpu-seconds and --idle-seconds: give positive numbers")
    args.levels = [tuple(float(x) for x in level.split(":")) for level in
                   (args.levels or (QUICK_LEVELS if quick else LEVELS)).split(",")]
    args.seconds = args.seconds or (3.0 if quick else 20.0)
    args.embedder = args.embedder or ("hash" if quick else "minilm")
    args.limit_samples = args.limit_samples or ((2 if args.overload else 1) if quick else None)  # two tenants
    args.questions = args.questions or (10 if quick else None)
    if args.capacity is not None and (args.capacity <= 0 or not args.overload):
        p.error("--capacity: give a positive rate in req/s, with --overload")
    if args.fairness_only and args.capacity is None:
        p.error("--fairness-only: give the capacity it shares out with --capacity")
    return args


def load(url: str, keys: dict[str, str], data: ds.Dataset, args: argparse.Namespace):
    """Step 2: the samples dealt to the tenants and loaded over HTTP; ``(tenancy, load report, questions)``."""
    tenants = sorted(keys)
    tenancy = Tenancy(url, keys, {s.sample_id: tenants[i % len(tenants)] for i, s in enumerate(data.samples)})
    print(f"loading {len(data.messages)} turns of {len(data.samples)} samples over HTTP ({len(tenants)} tenants)",
          file=sys.stderr)
    loaded = load_dialogues(tenancy, data.samples)
    return tenancy, loaded, data.questions[:args.questions] if args.questions else data.questions


def measure(url: str, memory, keys: dict[str, str], data: ds.Dataset, args: argparse.Namespace) -> dict:
    """Steps 2–5 against a running server whose keys are ``keys`` (tenant -> key); the report."""
    tenancy, loaded, questions = load(url, keys, data, args)
    print(f"asking {len(questions)} questions through HTTP and in-process", file=sys.stderr)
    hits = same_hits(tenancy, memory, questions)
    workload = Workload(tenancy, questions, [m["text"] for m in data.messages])
    levels = []
    for clients, rate in args.levels:
        print(f"open loop: {int(clients)} clients, {rate:g} requests/s for {args.seconds:g}s", file=sys.stderr)
        levels.append(open_loop(tenancy, workload, int(clients), rate, args.seconds))
    within = [lv for lv in levels if lv["errors"] == lv.get("refused", 0) == 0
              and (lv["endpoints"]["search"]["p95_ms"] or 1e9) <= SEARCH_P95_MS]
    at32 = [lv for lv in levels if lv["clients"] == 32]
    return {
        "load": loaded,
        "same_hits": hits,
        "levels": levels,
        "max_rate_with_search_p95_le_100ms": max((lv["achieved_rate_per_s"] for lv in within), default=None),
        "search_p95_ms_at_32_clients": at32[0]["endpoints"]["search"]["p95_ms"] if at32 else None,
        "overhead_ratio_at_1_client": hits["overhead_ratio_p50"],
        "errors_total": loaded["errors"] + sum(lv["errors"] for lv in levels),
        "exactly_once": exactly_once(tenancy, memory),
    }


def settle(url: str, memory, tenancy: Tenancy, questions, connections: int) -> float:
    """Measured warm: the shards' idle-time work after the load (snapshots, read indexes, the replica's quiet
    consolidation) done, every question's first search asked once, and one read of each other kind (what a kind's
    first request starts once, such as the MCP side, is not in a timed level); the seconds the idle work took."""
    time.sleep(2.0)  # the replica consolidates once quiet for a second
    settle_s = memory.wait_idle()
    warm = [("search", "POST", f"/v1/users/{q.user_id}/search", {"query": q.question, "k": 10},
             tenancy.headers(q.user_id), None) for q in questions]
    warm += [Workload(tenancy, questions[:1], [], mix={kind: 1}).next()
             for kind in MIX if kind not in ("search", "ingest")]
    drive(url, warm, 40.0, len(warm) / 40.0, connections)
    return round(settle_s, 1)


def measure_cpu(url: str, memory, keys: dict[str, str], data: ds.Dataset, args: argparse.Namespace) -> dict:
    """CPU per request kind and process (:mod:`benchmarks.serve_cpu`) after the dialogues are loaded; the report."""
    tenancy, loaded, questions = load(url, keys, data, args)
    texts = [m["text"] for m in data.messages]
    loaded["idle_work_after_load_s"] = settle(url, memory, tenancy, questions, args.connections)
    kinds = [*MIX, "mix"]
    workload_for = lambda kind: Workload(tenancy, questions, texts, seed=23, prefix=f"cpu-{kind}",  # noqa: E731
                                         mix=None if kind == "mix" else {kind: 1})
    cpu = serve_cpu.measure(url, workload_for, kinds, rate=args.cpu_rate, seconds=args.cpu_seconds,
                            idle_s=args.idle_seconds, on_ack=tenancy.ack, settle=lambda: _quiet(memory),
                            log=lambda line: print(line, file=sys.stderr, flush=True))
    return {"load": loaded, "cpu": cpu, "errors_total": loaded["errors"] + sum(
        lv["other_errors"] for lv in cpu["kinds"].values()), "exactly_once": exactly_once(tenancy, memory)}


def _quiet(memory) -> None:
    """What the last level left done: its staged graph memories consolidated, the shards' idle-time work."""
    memory.consolidate()
    memory.wait_idle()


def measure_overload(url: str, memory, keys: dict[str, str], data: ds.Dataset, args: argparse.Namespace) -> dict:
    """The overload suite against a running server (after the dialogues are loaded); the report."""
    tenancy, loaded, questions = load(url, keys, data, args)
    texts = [m["text"] for m in data.messages]
    log = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    loaded["idle_work_after_load_s"] = settle(url, memory, tenancy, questions, args.connections)
    common = {"factor": args.ramp_factor, "seconds": args.step_seconds, "max_rate": args.max_rate,
              "connections": args.connections, "log": log}
    given = {"capacity_req_s": args.capacity, "capacity_search_p95_le_100ms_req_s": None, "steps": [], "given": True}
    if args.capacity:
        log(f"mixed load: capacity given, {args.capacity:g} req/s (no ramp)")
        mixed = given
    else:
        log("mixed load: ramp until goodput stops rising")
        mixed = ramp(url, Workload(tenancy, questions, texts, prefix="ramp"), tenancy.ack, start=args.ramp_start,
                     **common)
    capacity = mixed["capacity_req_s"]
    held = Workload(tenancy, questions, texts, seed=11, prefix="hold")
    overload = {}
    for times in () if args.fairness_only else (2, 4):
        rate = times * capacity
        log(f"holding {times}x capacity: {rate:.1f} req/s for {args.hold_seconds:g}s")
        level = drive(url, draw(held, int(rate * args.hold_seconds)), rate, args.hold_seconds, args.connections,
                      tenancy.ack)
        overload[f"{times}x"] = {**level, "goodput_over_capacity": round(level["goodput_req_s"] / capacity, 3)}
    if args.capacity:
        search = {**given, "capacity_req_s": None}
    else:
        log("search only: ramp until goodput stops rising")
        search = ramp(url, Workload(tenancy, questions, texts, seed=13, mix={"search": 1}), None,
                      start=max(args.ramp_start, capacity / 2), **common)
    asking = sorted({tenancy.tenant_of[q.user_id] for q in data.questions})
    if len(asking) < 2:
        raise SystemExit("--overload's fairness needs questions of two tenants: give at least two samples")
    modest_t, flood_t = asking[0], asking[1]
    share = capacity / 2
    mine = lambda t: [q for q in data.questions if tenancy.tenant_of[q.user_id] == t]  # noqa: E731
    modest = draw(Workload(tenancy, mine(modest_t), texts, seed=17, mix={"search": 1}), 2000)
    flood_rate = args.flood_factor * share
    flood = draw(Workload(tenancy, mine(flood_t), texts, seed=19, prefix="flood"),
                 int(flood_rate * (args.hold_seconds + 2)))
    # the modest tenant's p95 alone is the ratio's yardstick: measured on a settled store, not beside what the
    # ramps left behind (the graph memories their ingests staged, which the replica consolidates once quiet for a
    # second, and the shards' idle-time snapshots)
    settled = {"staged_consolidated": memory.consolidate().get("staged", 0),
               "idle_work_s": round(memory.wait_idle(), 1)}
    log(f"settled before the fairness run: {settled['staged_consolidated']} staged graph memories consolidated, "
        f"idle work done in {settled['idle_work_s']}s")
    log(f"fairness: {modest_t} searching at {args.modest_share * capacity:.1f} req/s alone, then beside {flood_t} "
        f"at {flood_rate:.1f} req/s ({args.flood_factor:g}x its share)")
    fair = fairness(url, modest, flood, modest_rate=max(1.0, args.modest_share * capacity), flood_rate=flood_rate,
                    seconds=args.hold_seconds, connections=args.connections, on_ack=tenancy.ack)
    fair.update(modest_tenant=modest_t, flood_tenant=flood_t, flood_factor=args.flood_factor,
                settled=settled)
    return {"load": loaded, "capacity_req_s": capacity, "capacity_given": bool(args.capacity),
            "capacity_search_p95_le_100ms_req_s": mixed["capacity_search_p95_le_100ms_req_s"],
            "search_only_capacity_req_s": search["capacity_req_s"],
            "search_only_capacity_p95_le_100ms_req_s": search["capacity_search_p95_le_100ms_req_s"],
            "ramp": mixed["steps"], "search_only_ramp": search["steps"], "overload": overload, "fairness": fair,
            "errors_total": loaded["errors"], "exactly_once": exactly_once(tenancy, memory)}


def run(args: argparse.Namespace) -> dict:
    from actors.ray_init import ensure_ray, shutdown_ray
    from palimpsest.server.admission import AdmissionSettings
    from palimpsest.server.keys import KeyRing
    from palimpsest.server.run import start
    from palimpsest.server.settings import ServeSettings

    data = ds.load(args.data, args.limit_samples)
    store = Path(tempfile.mkdtemp(prefix="palimpsest-serve-bench-")) / "store"
    load_start, started = os.getloadavg(), time.perf_counter()
    ensure_ray()
    admission = AdmissionSettings.from_env()  # PALIMPSEST_READ_SLOTS, ... as for palimpsest serve
    settings = ServeSettings(store=str(store), port=free_port(), replicas=args.replicas, rate_per_s=0,
                             ingress=args.ingress, admission=admission)
    running = start(settings, embedder=args.embedder, num_shards=args.shards)
    try:
        running.memory.consolidate_every = 0  # consolidation rounds would land inside the timed levels
        ring = KeyRing(store)
        keys = {f"tenant-{i}": ring.create(f"tenant-{i}", label="benchmarks.serve")[0] for i in range(args.tenants)}
        mode = measure_overload if args.overload else measure_cpu if args.cpu else measure
        report = mode(running.url, running.memory, keys, data, args)
    finally:
        running.stop()
        shutdown_ray()
        shutil.rmtree(store.parent, ignore_errors=True)
    report["config"] = {"data": str(args.data), "samples": len(data.samples), "turns": len(data.messages),
                        "embedder": args.embedder, "tenants": args.tenants, "replicas": args.replicas,
                        "shards": running.memory.config.num_shards,
                        "ingress": running.ingress, "admission": vars(admission),
                        "seconds_per_level": args.seconds, "quick": args.quick,
                        "cpus": os.cpu_count(), "load_average_before": load_start, "load_average_after": os.getloadavg(),
                        "wall_seconds": round(time.perf_counter() - started, 1)}
    return report


def print_overload(r: dict) -> None:
    print(f"load: {r['load']['messages']} turns over HTTP at {r['load']['messages_per_s']} msg/s; "
          f"load average (1 min) before {r['config']['load_average_before'][0]:.2f}, after "
          f"{r['config']['load_average_after'][0]:.2f}")
    given = " (given with --capacity, not measured: no ramp ran)" if r.get("capacity_given") else ""
    print(f"capacity (mixed): {r['capacity_req_s']} req/s{given}; with search p95 <= 100 ms and nothing refused: "
          f"{r['capacity_search_p95_le_100ms_req_s']} req/s; search only: {r['search_only_capacity_req_s']} req/s "
          f"(p95 <= 100 ms: {r['search_only_capacity_p95_le_100ms_req_s']})")
    print("| level | offered req/s | goodput req/s | goodput / capacity | refused req/s (503, 429) | accepted p95 ms "
          "| refusal p95 ms | other errors | load 1m |")
    print("|---|---|---|---|---|---|---|---|---|")
    rows = [(f"ramp {s['offered_req_s']:g}", s) for s in r["ramp"]] + list(r["overload"].items())
    for name, lv in rows:
        ratio = lv.get("goodput_over_capacity", round(lv["goodput_req_s"] / r["capacity_req_s"], 3))
        refused = ", ".join(f"{v}" for v in (lv["refused_req_s"].get("503", 0), lv["refused_req_s"].get("429", 0)))
        print(f"| {name} | {lv['offered_req_s']} | {lv['goodput_req_s']} | {ratio} | {refused} | "
              f"{lv['accepted_p95_ms']} | {lv['refusal_p95_ms']} | {lv['other_errors']} | {lv['load_1m_after']} |")
    for name, lv in r["overload"].items():
        by = "; ".join(f"{k} " + ", ".join(f"{reason} {n}" for reason, n in v.items())
                       for k, v in lv.get("refused_by_gate", {}).items())
        print(f"refused at {name} (gate: reason count): {by or 'none'}")
    f = r["fairness"]
    print(f"fairness: {f['modest_tenant']} at {f['modest_rate_req_s']:.1f} req/s p95 "
          f"{f['modest_p95_unloaded_ms']} ms alone, {f['modest_p95_beside_flood_ms']} ms beside {f['flood_tenant']} "
          f"at {f['flood_rate_req_s']:.1f} "
          f"req/s (x{f['modest_p95_ratio']}; modest refused {f['modest_beside_flood']['refused_total_req_s']}/s, "
          f"flood goodput {f['flood']['goodput_req_s']}/s, refused {f['flood']['refused_total_req_s']}/s)")
    for name in ("modest_unloaded", "modest_beside_flood"):
        spent = f[name].get("server_phases", {})
        print(f"  {name.replace('_', ' ')}, in the server p50 / p95 ms: "
              + ", ".join(f"{k} {v['p50_ms']} / {v['p95_ms']}" for k, v in spent.items()))
    once = r["exactly_once"]
    print(f"writes: acknowledged {once['acknowledged']}, lost {once['lost']}, duplicated {once['duplicated']}")


def print_cpu(r: dict) -> None:
    cpu = r["cpu"]
    print(f"idle: {cpu['idle']['total_ms_per_s']} ms of CPU per second: "
          + ", ".join(f"{k} {v:g}" for k, v in cpu["idle"]["ms_per_s"].items() if v))
    print(f"each kind alone at {cpu['rate_req_s']:g} req/s for {cpu['seconds']:g}s, CPU ms per answered request:")
    print("| kind | answered/s | refused/s | accepted p95 ms | CPU ms | above idle | above idle, by process |")
    print("|---|---|---|---|---|---|---|")
    for kind, lv in cpu["kinds"].items():
        roles = ", ".join(f"{k} {v:g}" for k, v in lv["by_role_above_idle_ms"].items() if v >= 0.05)
        print(f"| {kind} | {lv['goodput_req_s']} | {lv['refused_req_s']} | {lv['accepted_p95_ms']} | "
              f"{lv['cpu_ms_per_request']} | {lv['cpu_ms_per_request_above_idle']} | {roles} |")
    once = r["exactly_once"]
    print(f"errors {r['errors_total']}; writes: acknowledged {once['acknowledged']}, lost {once['lost']}, "
          f"duplicated {once['duplicated']}")


def print_report(r: dict) -> None:
    h = r["same_hits"]
    print(f"load: {r['load']['messages']} turns over HTTP at {r['load']['messages_per_s']} msg/s, "
          f"{r['load']['errors']} errors")
    print(f"same hits served vs in-process: {h['same_hits']}/{h['questions']}; recall@10 {h['recall@10']}")
    print(f"one client, one query at a time: served search p50 {h['served_search']['p50_ms']} ms, in-process "
          f"{h['in_process_search']['p50_ms']} ms, overhead ×{h['overhead_ratio_p50']} "
          f"(+{h.get('overhead_ms_p50')} ms; ingress {r['config']['ingress']})")
    print(f"{'clients':>7} {'rate':>6} {'done/s':>7} {'errors':>6} {'refused':>7}  "
          + "  ".join(f"{k + ' p50/p95/p99':>22}" for k in r["levels"][0]["endpoints"]))
    for lv in r["levels"]:
        cells = "  ".join(f"{str(e['p50_ms']) + '/' + str(e['p95_ms']) + '/' + str(e['p99_ms']):>22}"
                          for e in lv["endpoints"].values())
        print(f"{lv['clients']:>7} {lv['target_rate_per_s']:>6g} {lv['achieved_rate_per_s']:>7} {lv['errors']:>6} "
              f"{lv.get('refused', 0):>7}  {cells}")
    once = r["exactly_once"]
    print(f"max rate with search p95 <= 100 ms: {r['max_rate_with_search_p95_le_100ms']} req/s; search p95 at 32 "
          f"clients: {r['search_p95_ms_at_32_clients']} ms; errors {r['errors_total']}; acknowledged "
          f"{once['acknowledged']}, lost {once['lost']}, duplicated {once['duplicated']}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    report = run(args)
    report["provenance"] = stamp("benchmarks.serve", argv)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, default=str), encoding="utf-8")
    (print_overload if args.overload else print_cpu if args.cpu else print_report)(report)
    print(f"wrote {out}")
    once = report["exactly_once"]
    return 0 if report["errors_total"] == 0 and once["lost"] == 0 and once["duplicated"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
