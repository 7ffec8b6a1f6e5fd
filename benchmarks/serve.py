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

The figures depend on the machine and on what else runs on it: a shared VM makes them noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import dataset as ds
from benchmarks.provenance import stamp
from benchmarks.serve_load import Tenancy, Workload, exactly_once, load_dialogues, open_loop, same_hits

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
    p.add_argument("--ingress", choices=["auto", "direct", "proxy"], default="auto",
                   help="how requests reach the replicas (default auto: direct for one replica)")
    args = p.parse_args(argv)
    quick = args.quick
    args.levels = [tuple(float(x) for x in level.split(":")) for level in
                   (args.levels or (QUICK_LEVELS if quick else LEVELS)).split(",")]
    args.seconds = args.seconds or (3.0 if quick else 20.0)
    args.embedder = args.embedder or ("hash" if quick else "minilm")
    args.limit_samples = args.limit_samples or (1 if quick else None)
    args.questions = args.questions or (10 if quick else None)
    return args


def measure(url: str, memory, keys: dict[str, str], data: ds.Dataset, args: argparse.Namespace) -> dict:
    """Steps 2–5 against a running server whose keys are ``keys`` (tenant -> key); the report."""
    tenants = sorted(keys)
    tenancy = Tenancy(url, keys, {s.sample_id: tenants[i % len(tenants)] for i, s in enumerate(data.samples)})
    print(f"loading {len(data.messages)} turns of {len(data.samples)} samples over HTTP ({len(tenants)} tenants)",
          file=sys.stderr)
    loaded = load_dialogues(tenancy, data.samples)
    questions = data.questions[:args.questions] if args.questions else data.questions
    print(f"asking {len(questions)} questions through HTTP and in-process", file=sys.stderr)
    hits = same_hits(tenancy, memory, questions)
    workload = Workload(tenancy, questions, [m["text"] for m in data.messages])
    levels = []
    for clients, rate in args.levels:
        print(f"open loop: {int(clients)} clients, {rate:g} requests/s for {args.seconds:g}s", file=sys.stderr)
        levels.append(open_loop(tenancy, workload, int(clients), rate, args.seconds))
    within = [lv for lv in levels if lv["errors"] == 0 and (lv["endpoints"]["search"]["p95_ms"] or 1e9) <= SEARCH_P95_MS]
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(args: argparse.Namespace) -> dict:
    from actors.ray_init import ensure_ray, shutdown_ray
    from palimpsest.server.keys import KeyRing
    from palimpsest.server.run import start
    from palimpsest.server.settings import ServeSettings

    data = ds.load(args.data, args.limit_samples)
    store = Path(tempfile.mkdtemp(prefix="palimpsest-serve-bench-")) / "store"
    load_start, started = os.getloadavg(), time.perf_counter()
    ensure_ray()
    settings = ServeSettings(store=str(store), port=free_port(), replicas=args.replicas, rate_per_s=0,
                             ingress=args.ingress)
    running = start(settings, embedder=args.embedder)
    try:
        running.memory.consolidate_every = 0  # consolidation rounds would land inside the timed levels
        ring = KeyRing(store)
        keys = {f"tenant-{i}": ring.create(f"tenant-{i}", label="benchmarks.serve")[0] for i in range(args.tenants)}
        report = measure(running.url, running.memory, keys, data, args)
    finally:
        running.stop()
        shutdown_ray()
        shutil.rmtree(store.parent, ignore_errors=True)
    report["config"] = {"data": str(args.data), "samples": len(data.samples), "turns": len(data.messages),
                        "embedder": args.embedder, "tenants": args.tenants, "replicas": args.replicas,
                        "ingress": running.ingress,
                        "seconds_per_level": args.seconds, "quick": args.quick,
                        "cpus": os.cpu_count(), "load_average_before": load_start, "load_average_after": os.getloadavg(),
                        "wall_seconds": round(time.perf_counter() - started, 1)}
    return report


def print_report(r: dict) -> None:
    h = r["same_hits"]
    print(f"load: {r['load']['messages']} turns over HTTP at {r['load']['messages_per_s']} msg/s, "
          f"{r['load']['errors']} errors")
    print(f"same hits served vs in-process: {h['same_hits']}/{h['questions']}; recall@10 {h['recall@10']}")
    print(f"one client, one query at a time: served search p50 {h['served_search']['p50_ms']} ms, in-process "
          f"{h['in_process_search']['p50_ms']} ms, overhead ×{h['overhead_ratio_p50']} "
          f"(+{h.get('overhead_ms_p50')} ms; ingress {r['config']['ingress']})")
    print(f"{'clients':>7} {'rate':>6} {'done/s':>7} {'errors':>6}  " + "  ".join(f"{k + ' p50/p95/p99':>22}" for k in
                                                                             r["levels"][0]["endpoints"]))
    for lv in r["levels"]:
        cells = "  ".join(f"{str(e['p50_ms']) + '/' + str(e['p95_ms']) + '/' + str(e['p99_ms']):>22}"
                          for e in lv["endpoints"].values())
        print(f"{lv['clients']:>7} {lv['target_rate_per_s']:>6g} {lv['achieved_rate_per_s']:>7} {lv['errors']:>6}  {cells}")
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
    print_report(report)
    print(f"wrote {out}")
    once = report["exactly_once"]
    return 0 if report["errors_total"] == 0 and once["lost"] == 0 and once["duplicated"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
