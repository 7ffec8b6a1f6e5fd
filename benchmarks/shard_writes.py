"""What a shard's writes cost its reads: ``python -m benchmarks.shard_writes --data ../shared/data/locomo/locomo10_dev.json
--out bench/shard_writes.json``.

One shard actor's class runs in this process (no Ray: its ``__init__`` needs none), on a real DuckDB log and
LanceDB table in a temporary directory, with the hash encoder. A reader user holds the first sample's turns and is
searched back to back (its questions, no touches recorded) while a writer thread records proxy-like turns (a user
message and a reply, one ``RecordTurns`` command) for 16 other users of the shard, back to back. Each round times
the searches with the writer idle, then busy with the commit holding the projections' lock during its durable
append (``held``: how the shard wrote before 1729fc7) and letting go of it (``let_go``: now), the two alternated.
Reported: search p50/p95/p99 per variant, the writes per second, the load average before and after. The figures
depend on the machine and on what else runs on it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import threading
import time
from contextlib import nullcontext
from datetime import UTC, datetime, timedelta
from pathlib import Path

from benchmarks.provenance import stamp


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.shard_writes", description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="a LoCoMo-format JSON file (its first sample is the reader's)")
    p.add_argument("--out", default="bench/shard_writes.json", help="where to write the JSON report")
    p.add_argument("--rounds", type=int, default=3, help="rounds, each idle, held and let_go (default 3)")
    p.add_argument("--seconds", type=float, default=5.0, help="searching per variant and round (default 5)")
    return p.parse_args(argv)


def percentiles(values: list[float]) -> dict:
    ordered = sorted(values)
    at = lambda q: round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)  # noqa: E731 - nearest rank
    return {"n": len(ordered), "p50_ms": at(0.50), "p95_ms": at(0.95), "p99_ms": at(0.99),
            "mean_ms": round(statistics.fmean(ordered), 2)}


class Writer(threading.Thread):
    """Records a turn (user message and reply) for one of 16 users after another, until stopped."""

    def __init__(self, actor, vectors, model_id: str) -> None:
        super().__init__(daemon=True, name="writer")
        self.actor, self.vectors, self.model_id = actor, vectors, model_id
        self.writes, self.stop, self._n = 0, threading.Event(), 0

    def run(self) -> None:
        from actors import commands as c
        from events.commands import validate_messages

        when = datetime(2024, 6, 1, tzinfo=UTC)
        while not self.stop.is_set():
            self._n += 1
            n, user = self._n, f"writer-{self._n % 16}"
            at = (when + timedelta(seconds=n)).isoformat()
            messages = validate_messages([
                {"tenant": "bench", "user_id": user, "role": "user", "text": f"What should I drink on day {n}?",
                 "occurred_at": at, "conversation_id": "proxy", "client_message_id": f"{n}-u"},
                {"tenant": "bench", "user_id": user, "role": "assistant", "text": f"Green tea on day {n}.",
                 "occurred_at": at, "conversation_id": "proxy", "client_message_id": f"{n}-a"}])
            self.actor.handle([c.RecordTurns(messages=c.RecordMessages(
                messages=tuple(messages), vectors=self.vectors, model_id=self.model_id))])
            self.writes += 1


def searches(actor, queries, seconds: float) -> list[float]:
    from actors import commands as c

    out, deadline, i = [], time.monotonic() + seconds, 0
    while time.monotonic() < deadline:
        text, vector = queries[i % len(queries)]
        i += 1
        started = time.perf_counter()
        actor.query([c.Search(tenant="bench", user_id="reader", query=text, query_vector=vector, k=10,
                              touch_reason=None)])
        out.append(1000 * (time.perf_counter() - started))
    return out


def run(args: argparse.Namespace, workdir: Path) -> dict:
    from actors.shard import ShardActor
    from actors.spec import ShardSpec
    from benchmarks.dataset import load
    from events.commands import validate_messages
    from actors import commands as c
    from projections.adapters.embedding import HashEmbedder

    embed = HashEmbedder()
    sample = load(args.data, limit_samples=1).samples[0]
    spec = ShardSpec(index=0, log_path=workdir / "shard-000.duckdb", lance_dir=workdir / "vectors",
                     model_id=embed.model_id, dim=embed.dim)
    actor = ShardActor.__ray_metadata__.modified_class(spec)
    let_go = actor._core.appending
    try:
        history = validate_messages([{**m, "tenant": "bench", "user_id": "reader"} for m in sample.messages])
        actor.handle([c.RecordMessages(messages=tuple(history), model_id=embed.model_id,
                                       vectors=embed.encode([m.index_text() for m in history]))])
        texts = [q.question for q in sample.questions[:50]]
        queries = list(zip(texts, embed.encode(texts)))
        pair = embed.encode(["What should I drink?", "Green tea."])
        searches(actor, queries, 1.0)  # warm: indexes built, caches filled
        timed: dict[str, list[float]] = {"idle": [], "held": [], "let_go": []}
        writes: dict[str, list[float]] = {"held": [], "let_go": []}
        for _ in range(args.rounds):
            timed["idle"] += searches(actor, queries, args.seconds)
            for variant, appending in (("held", nullcontext), ("let_go", let_go)):
                actor._core.appending = appending
                writer = Writer(actor, pair, embed.model_id)
                writer.start()
                started = time.monotonic()
                timed[variant] += searches(actor, queries, args.seconds)
                writer.stop.set()
                writer.join()
                writes[variant].append(writer.writes / (time.monotonic() - started))
        actor._core.appending = let_go
        return {"reader_turns": len(history),
                "search": {k: percentiles(v) for k, v in timed.items()},
                "writes_per_s": {k: round(statistics.fmean(v), 1) for k, v in writes.items()}}
    finally:
        actor.close()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    before = [round(x, 2) for x in os.getloadavg()]
    with tempfile.TemporaryDirectory(prefix="shard-writes-") as tmp:
        result = run(args, Path(tmp))
    result["load_average"] = {"before": before, "after": [round(x, 2) for x in os.getloadavg()]}
    result["provenance"] = stamp("benchmarks.shard_writes", argv)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2), encoding="utf-8")
    print("variant  search p50/p95/p99 ms   writes/s")
    for variant, figures in result["search"].items():
        rate = result["writes_per_s"].get(variant, 0.0)
        print(f"{variant:<8} {figures['p50_ms']:>7}/{figures['p95_ms']}/{figures['p99_ms']}   {rate}")
    print(f"load average before {before}, after {result['load_average']['after']}; wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
