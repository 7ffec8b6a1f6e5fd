"""Scale benchmark: a synthetic multi-tenant store of 1M+ events, started from snapshots vs a full fold, with
and without a residency cap.

    python -m benchmarks.scale --out bench/scale.json            # make bench-scale
    python -m benchmarks.scale --users-per-shard 500 --out bench/scale_small.json   # a quick look

Builds ``--shards`` shards of ``--users-per-shard`` users (10 tenants) with
``--messages-per-user`` synthetic English/Chinese messages each, through the
real shard core (deciders, folds, DuckDB log, LanceDB, snapshots on close;
hash embedder). Then, per shard and in a fresh process each (both shards at
once, one per core): start by folding the whole log; start from the
snapshots; start from the snapshots with at most ``--cap`` users resident.
After each start, ``--queries`` searches of random users, twice (first use,
then again): start-up seconds, peak RSS, search p50/p95 and, capped, the
cold-load time of a user. Writes JSON and a Markdown summary next to it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.scale", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, type=Path, help="result JSON; the Markdown summary goes next to it (.md)")
    p.add_argument("--shards", type=int, default=2)
    p.add_argument("--users-per-shard", type=int, default=10_000)
    p.add_argument("--messages-per-user", type=int, default=16)
    p.add_argument("--cap", type=int, default=1_000, help="max resident users per shard in the capped start")
    p.add_argument("--queries", type=int, default=2_000,
                   help="searches of random users after each start (more than --cap, so users leave memory)")
    p.add_argument("--store", type=Path, help="a new or empty directory (default: a temp dir, removed after)")
    p.add_argument("--reuse", action="store_true",
                   help="--store already holds a store built by this benchmark: measure it without building")
    args = p.parse_args(argv)
    for name in ("shards", "users_per_shard", "messages_per_user", "cap", "queries"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.reuse and not (args.store and (args.store / "log").is_dir()):
        p.error("--reuse needs --store DIR holding a store this benchmark built (DIR/log)")
    if not args.reuse and args.store and args.store.exists() and any(args.store.iterdir()):
        p.error(f"--store {args.store}: not empty; give a new directory (or --reuse to measure it again)")
    return args


def run_task(task: dict) -> dict:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.run([sys.executable, "-m", "benchmarks.scale_run", json.dumps(task)], cwd=ROOT, env=env,
                          stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"scale task {task['kind']} of shard {task['shard']} failed (exit {proc.returncode})")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def per_shard(shards: int, make_task) -> list[dict]:
    with ThreadPoolExecutor(max_workers=shards) as pool:
        return list(pool.map(lambda s: run_task(make_task(s)), range(shards)))


def markdown(result: dict) -> str:
    cfg = result["config"]
    lines = [f"# Scale benchmark: {result['events']:,} events, {cfg['shards']} shards × {cfg['users_per_shard']:,} "
             f"users × {cfg['messages_per_user']} messages", "",
             f"Built in {result['build_seconds']} s; snapshots on disk {result['snapshot_mb']} MB.", "",
             "| start | shard | start s | peak RSS MB | search p50/p95 first ms | again p50/p95 ms | cold load p50/p95 ms |",
             "|---|---|---|---|---|---|---|"]
    for name, rows in result["starts"].items():
        for shard, r in enumerate(rows):
            lines.append(f"| {name} | {shard} | {r['start_seconds']} | {r['peak_rss_mb']} | "
                         f"{r['search_first_p50_ms']}/{r['search_first_p95_ms']} | "
                         f"{r['search_again_p50_ms']}/{r['search_again_p95_ms']} | "
                         f"{r['cold_load_p50_ms']}/{r['cold_load_p95_ms']} |")
    lines += ["", "Ratios (shard means): " + ", ".join(f"{k} {v}" for k, v in result["ratios"].items()), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    store = args.store or Path(tempfile.mkdtemp(prefix="palimpsest-scale-"))
    store.mkdir(parents=True, exist_ok=True)
    common = {"store": str(store.resolve())}
    try:
        started = time.perf_counter()
        built_file = store / "built.json"
        if args.reuse:
            built = json.loads(built_file.read_text())
        else:
            built = per_shard(args.shards, lambda s: {**common, "kind": "build", "shard": s,
                                                      "users": args.users_per_shard, "per_user": args.messages_per_user})
            built_file.write_text(json.dumps(built))
        build_s = round(time.perf_counter() - started, 1) if not args.reuse else sum(b["build_seconds"] for b in built)
        print("refreshing snapshots (the fold code may have changed since the build)", file=sys.stderr, flush=True)
        refreshed = per_shard(args.shards, lambda s: {**common, "kind": "refresh", "shard": s})
        starts = {}
        for name, snapshots, cap in (("full_fold", False, None), ("snapshots", True, None),
                                     ("snapshots_capped", True, args.cap)):
            print(f"measuring start: {name}", file=sys.stderr, flush=True)
            starts[name] = per_shard(args.shards, lambda s: {
                **common, "kind": "start", "shard": s, "snapshots": snapshots, "cap": cap,
                "users": args.users_per_shard, "queries": args.queries})
        mean = lambda name, key: sum(r[key] for r in starts[name]) / args.shards  # noqa: E731
        snap_bytes = sum(f.stat().st_size for f in (store / "snapshots").rglob("*.snap"))
        result = {
            "config": vars(args) | {"out": str(args.out), "store": str(args.store) if args.store else None},
            "events": sum(b["events"] for b in built), "events_per_shard": [b["events"] for b in built],
            "build_seconds": build_s, "build": built, "refresh": refreshed, "snapshot_mb": round(snap_bytes / 2**20, 1), "starts": starts,
            "ratios": {
                "start_full_fold_over_snapshots": round(mean("full_fold", "start_seconds")
                                                        / max(mean("snapshots", "start_seconds"), 1e-3), 1),
                "peak_rss_uncapped_over_capped": round(mean("snapshots", "peak_rss_mb")
                                                       / mean("snapshots_capped", "peak_rss_mb"), 2),
                "replay_events_per_s_per_shard": round(sum(b["events"] for b in built) / args.shards
                                                       / mean("full_fold", "start_seconds")),
            },
        }
    finally:
        if not args.store:  # a temp store goes; a named one stays for --reuse
            shutil.rmtree(store, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    text = markdown(result)
    args.out.with_suffix(".md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
