"""The work of one scale-benchmark process: build a synthetic shard, or measure one way of starting it.

Each measurement runs in a fresh process (``python -m benchmarks.scale_run``),
so its peak RSS (``ru_maxrss``) is that configuration's alone. The shard is a
real :class:`~actors.core.ShardCore` (DuckDB log, LanceDB table, snapshots) with
the hash embedder, driven in process (no Ray: the actor adds a call's ~2 ms).
"""

from __future__ import annotations

import json
import random
import resource
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from actors import commands as c
from actors.core import ShardCore
from actors.spec import ShardSpec
from events.commands import RecordMessage
from projections.adapters.embedding import HashEmbedder
from projections.adapters.lance_import import import_lancedb

EMBED = HashEmbedder()
T0 = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
TOPICS = ["hiking", "coffee", "the launch", "my sister", "the dentist", "Rust", "PostgreSQL", "our dog", "Lisbon",
          "the garden", "a new bike", "jazz", "the budget", "sourdough", "yoga", "the move"]
VERBS = ["talked about", "planned", "worried about", "finished", "started", "loved", "postponed", "asked about"]
CHINESE = ["我喜欢在周末去爬山", "我们讨论了预算", "明天去看牙医", "我最近在学做面包"]


def user_id(shard: int, n: int) -> str:
    return f"s{shard}-u{n:05d}"


def spec_for(store: Path, shard: int, *, snapshots: bool = True, cap: int | None = None) -> ShardSpec:
    return ShardSpec(index=shard, log_path=store / "log" / f"shard-{shard:03d}.duckdb", lance_dir=store / "vectors",
                     model_id=EMBED.model_id, dim=EMBED.dim, snapshot_dir=store / "snapshots" if snapshots else None,
                     max_resident_users=cap)


def messages(shard: int, n: int, per_user: int) -> list[RecordMessage]:
    rng = random.Random(f"{shard}/{n}")
    out = []
    for i in range(per_user):
        text = (rng.choice(CHINESE) if i % 7 == 6 else
                f"Day {i}: I {rng.choice(VERBS)} {rng.choice(TOPICS)} and {rng.choice(TOPICS)} ({rng.randint(1, 999)})")
        out.append(RecordMessage(tenant=f"t{n % 10}", user_id=user_id(shard, n), conversation_id=f"c{i // 8}",
                                 role="user" if i % 2 == 0 else "assistant", speaker="Sam" if i % 2 == 0 else "bot",
                                 text=text, occurred_at=T0 + timedelta(hours=n % 24, minutes=7 * i),
                                 client_message_id=f"{n}-{i}"))
    return out


def build(store: Path, shard: int, users: int, per_user: int, batch_users: int = 64) -> dict:
    """Record ``per_user`` messages for each of ``users`` users; a clean close writes every snapshot."""
    started = time.perf_counter()
    core = ShardCore(spec_for(store, shard, cap=None))
    for first in range(0, users, batch_users):
        batch = [m for n in range(first, min(first + batch_users, users)) for m in messages(shard, n, per_user)]
        core.handle([c.RecordMessages(messages=tuple(batch), vectors=EMBED.encode([m.index_text() for m in batch]),
                                      model_id=EMBED.model_id)])
        if first % (batch_users * 20) == 0:
            print(f"shard {shard}: {first + batch_users}/{users} users, {core.log.count()} events, "
                  f"{time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    events = core.log.count()
    closing = time.perf_counter()
    core.close()
    return {"events": events, "build_seconds": round(closing - started, 1),
            "close_seconds": round(time.perf_counter() - closing, 1)}


def refresh(store: Path, shard: int) -> dict:
    """Open the shard (stale snapshots are ignored: the code changed) and close it: every snapshot is current."""
    started = time.perf_counter()
    core = ShardCore(spec_for(store, shard))
    core.close()
    return {"refresh_seconds": round(time.perf_counter() - started, 1)}


def start(store: Path, shard: int, *, snapshots: bool, cap: int | None, users: int, queries: int) -> dict:
    """Start the shard one way, then ask ``queries`` searches of random users; timings and peak RSS."""
    started = time.perf_counter()
    core = ShardCore(spec_for(store, shard, snapshots=snapshots, cap=cap))
    start_s = time.perf_counter() - started
    rss_after_start = peak_mb()
    resident_after_start = len(core.state.users.resident)
    rng = random.Random(7)
    texts = [f"what did I say about {t}?" for t in TOPICS]
    vectors = EMBED.encode(texts)
    first_ms, again_ms = [], []
    asked = [user_id(shard, rng.randrange(users)) for _ in range(queries)]
    for round_ms in (first_ms, again_ms):  # first touch of each user, then the same users again
        for i, user in enumerate(asked):
            q = c.Search(tenant=f"t{int(user.split('-u')[1]) % 10}", user_id=user, query=texts[i % len(texts)],
                         query_vector=vectors[i % len(texts)], k=10, touch_reason=None)
            t = time.perf_counter()
            hits = core.query(q)
            round_ms.append((time.perf_counter() - t) * 1000)
            assert hits, f"no hit for {user}"
    loads = core.users.load_seconds
    out = {"snapshots": snapshots, "max_resident_users": cap, "start_seconds": round(start_s, 2),
           "resident_after_start": resident_after_start, "peak_rss_mb_after_start": rss_after_start,
           "search_first_p50_ms": pct(first_ms, 50), "search_first_p95_ms": pct(first_ms, 95),
           "search_again_p50_ms": pct(again_ms, 50), "search_again_p95_ms": pct(again_ms, 95),
           "cold_loads": len(loads), "cold_load_p50_ms": pct([s * 1000 for s in loads], 50),
           "cold_load_p95_ms": pct([s * 1000 for s in loads], 95), "resident_at_end": len(core.state.users.resident),
           "peak_rss_mb": peak_mb()}
    core.log.close()  # no close(): a measurement must not rewrite the snapshots
    return out


def pct(values: list[float], q: float) -> float | None:
    return round(float(np.percentile(values, q)), 2) if values else None


def peak_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def main(argv: list[str]) -> None:
    task = json.loads(argv[0])
    store = Path(task.pop("store"))
    kind = task.pop("kind")
    import_lancedb()  # imported before any clock starts, as every shard process does
    result = {"build": build, "refresh": refresh, "start": start}[kind](store, **task)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
