"""Write throughput of a served store under concurrent writers: ``python -m benchmarks.serve_writes --writers 16
--seconds 20 --out bench/serve_writes.json``.

A store is served (local Ray, one replica, direct ingress, MiniLM by default) twice in the same run: with
concurrent ingests of a busy shard sent one by one (``merge_writes=False``, the baseline), then merged
(:mod:`palimpsest.server.ingest_batches`, the default). Each time ``--writers`` clients post one-message batches
back to back over HTTP (English and Chinese turns, each client to users of its own, every message with its own
client id) for ``--seconds``; the write slots equal the writers and the admission's wait budget is long, so every
request is admitted and the figures are the store's, not the admission's. Reported per variant: messages per
second, request latency p50/p95, refusals and errors, the load average before and after; and the ratio merged /
one by one. The figures depend on the machine and on what else runs on it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from benchmarks.provenance import stamp

TEXTS = ["I moved to Lisbon last spring and I love the light there.", "我喜欢喝绿茶，每天早上一杯。",
         "We decided to use PostgreSQL for the Atlas project.", "我妹妹住在奥斯陆，她养了两只猫。"]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.serve_writes", description=__doc__.splitlines()[0])
    p.add_argument("--out", default="bench/serve_writes.json", help="the JSON report (default %(default)s)")
    p.add_argument("--writers", type=int, default=16, help="concurrent writing clients (default %(default)s)")
    p.add_argument("--seconds", type=float, default=20.0, help="length of each variant's run (default %(default)s)")
    p.add_argument("--embedder", default="minilm", help="the store's encoder (default %(default)s; hash: no model)")
    args = p.parse_args(argv)
    if args.writers < 1 or args.seconds <= 0:
        p.error("--writers must be at least 1 and --seconds above 0")
    return args


def percentile(ordered: list[float], q: float) -> float | None:
    return round(1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2) if ordered else None


async def _writers(url: str, key: str, writers: int, seconds: float, prefix: str) -> dict:
    import httpx

    latencies, failures = [], {}
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=httpx.Limits(max_connections=writers)) as client:
        async def post(user: str, n: int, text: str) -> int:
            body = {"messages": [{"text": text, "client_message_id": f"{prefix}-{user}-{n}",
                                  "occurred_at": f"2026-01-01T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}+00:00"}]}
            return (await client.post(f"/v1/users/{user}/messages", json=body, headers=headers)).status_code

        async def writer(i: int) -> None:
            n, end = 0, time.perf_counter() + seconds
            while time.perf_counter() < end:
                n += 1
                began = time.perf_counter()
                status = await post(f"w{i}", n, TEXTS[(i + n) % len(TEXTS)])
                if status == 200:
                    latencies.append(time.perf_counter() - began)
                else:
                    failures[str(status)] = failures.get(str(status), 0) + 1

        await asyncio.gather(*(post(f"w{i}", 0, "hello") for i in range(writers)))  # users routed, code warm
        began = time.perf_counter()
        await asyncio.gather(*(writer(i) for i in range(writers)))
        wall = time.perf_counter() - began
    ordered = sorted(latencies)
    return {"messages": len(ordered), "seconds": round(wall, 2), "messages_per_s": round(len(ordered) / wall, 1),
            "p50_ms": percentile(ordered, 0.50), "p95_ms": percentile(ordered, 0.95), "failures": failures}


def run_variant(args: argparse.Namespace, merge: bool) -> dict:
    from actors.ray_init import ensure_ray, shutdown_ray
    from benchmarks.serve import free_port
    from palimpsest.server.admission import AdmissionSettings
    from palimpsest.server.keys import KeyRing
    from palimpsest.server.run import start
    from palimpsest.server.settings import ServeSettings

    store = Path(tempfile.mkdtemp(prefix="palimpsest-serve-writes-")) / "store"
    load_before = os.getloadavg()[0]
    ensure_ray()
    admission = replace(AdmissionSettings(), write_slots=args.writers, queue=max(32, args.writers), wait_ms=60_000)
    settings = ServeSettings(store=str(store), port=free_port(), replicas=1, rate_per_s=0, ingress="direct",
                             admission=admission, merge_writes=merge)
    running = start(settings, embedder=args.embedder)
    try:
        running.memory.consolidate_every = 0
        key = KeyRing(store).create("writes", label="benchmarks.serve_writes")[0]
        result = asyncio.run(_writers(running.url, key, args.writers, args.seconds, "merged" if merge else "alone"))
    finally:
        running.stop()
        shutdown_ray()
        shutil.rmtree(store.parent, ignore_errors=True)
    return {**result, "merge_writes": merge, "load_1m_before": round(load_before, 2),
            "load_1m_after": round(os.getloadavg()[0], 2)}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    variants = {"one_by_one": run_variant(args, merge=False), "merged": run_variant(args, merge=True)}
    base, merged = variants["one_by_one"]["messages_per_s"], variants["merged"]["messages_per_s"]
    report = {"writers": args.writers, "seconds": args.seconds, "embedder": args.embedder, "cpus": os.cpu_count(),
              "variants": variants, "merged_over_one_by_one": round(merged / base, 2) if base else None,
              "provenance": stamp("benchmarks.serve_writes", argv)}
    for name, v in variants.items():
        print(f"{name:>10}: {v['messages_per_s']} msg/s, p50 / p95 {v['p50_ms']} / {v['p95_ms']} ms, failures "
              f"{v['failures'] or 0}, load {v['load_1m_before']} -> {v['load_1m_after']}")
    print(f"merged / one by one: x{report['merged_over_one_by_one']} ({args.writers} writers, {args.embedder})")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
