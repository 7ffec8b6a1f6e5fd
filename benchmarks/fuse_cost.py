"""The CPU one fusion configuration costs per query against another, in process (no Ray, no encoding).

    python -m benchmarks.fuse_cost --data FILE --store DIR --base palimpsest_before_keys --variant palimpsest [--writes N]

On a store ``benchmarks.locomo --store`` kept, folded like :mod:`benchmarks.lab` does: every question is fused
once per configuration to warm the per-user derived indexes, then twice more, the two configurations
interleaved (order swapped on the second pass), timing ``fuse`` with the thread's CPU clock (the machine's
load inflates wall time, not this). Prints p50/p95/mean CPU ms per configuration and the CPU to build each
per-user derived index from scratch (key_index, the conversation index, the stage tables) for every user.
With ``--writes N``, last, N questions (spread over the file) are each asked right after one new turn is
folded into the asker's memory, once per configuration: the CPU of that first ``fuse`` after a write (the
derived indexes and tables catch up in it, in place).
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from benchmarks import dataset as ds
from benchmarks.lab import Lab, load_state, query_vectors
from benchmarks.variants import ALL
from events.envelope import PendingEvent, seal
from events.model import MessageRecorded
from palimpsest.locomo import TENANT
from projections.folds.policy import DEFAULT_POLICY
from projections.folds.state import fold
from projections.queries import key_index, rerank, session_docs
from projections.queries.retrieval import fuse


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.fuse_cost", description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, type=Path)
    p.add_argument("--store", required=True, type=Path, help="a store benchmarks.locomo kept (--store)")
    p.add_argument("--base", default="palimpsest_before_keys", help="a configuration of benchmarks.variants")
    p.add_argument("--variant", default="palimpsest", help="a configuration of benchmarks.variants")
    p.add_argument("--writes", type=int, default=0, help="also time the first fuse after a new turn, N questions")
    args = p.parse_args(argv)
    unknown = [n for n in (args.base, args.variant) if n not in ALL]
    if unknown:
        p.error(f"unknown configuration {unknown[0]!r} (--base/--variant): see benchmarks/variants.py")
    data = ds.load(args.data)
    lab = Lab(load_state(args.store))
    vecs = query_vectors([q.question for q in data.questions],
                         json.loads((args.store / "store.json").read_text())["model_id"])
    names = (args.base, args.variant)
    cost: dict[str, list[float]] = {n: [] for n in names}
    for q in data.questions:  # warm-up: the derived indexes are built on a user's first search
        for n in names:
            fuse(lab.state.user(TENANT, q.user_id), q.question, [], 10, ALL[n], vecs[q.question])
    for rep in range(2):
        for q in data.questions:
            memory, vec = lab.state.user(TENANT, q.user_id), vecs[q.question]
            dense = lab.dense(q.user_id, vec, 100)
            for n in names if rep == 0 else names[::-1]:
                t = time.thread_time()
                fuse(memory, q.question, dense, 100, ALL[n], vec, now=q.asked_at, policy=DEFAULT_POLICY)
                cost[n].append(1000 * (time.thread_time() - t))
    for n, c in cost.items():
        print(f"{n}: fuse CPU ms p50 {np.percentile(c, 50):.2f} p95 {np.percentile(c, 95):.2f} "
              f"mean {np.mean(c):.2f} (n={len(c)})")
    users = sorted({q.user_id for q in data.questions})
    turns = np.mean([len(lab.state.user(TENANT, u).messages.order) for u in users])
    builders = {f"{kind} index": lambda m, kind=kind: key_index.build(m, kind)
                for kind in ("facts", "context", "subwords")}
    builders.update({"conversation index": session_docs.build, "stage tables": rerank.build_tables})
    for what, build in builders.items():  # what a whole-user rebuild costs (the indexes now follow writes in place)
        ts = []
        for u in users:
            t = time.thread_time()
            build(lab.state.user(TENANT, u))
            ts.append(1000 * (time.thread_time() - t))
        print(f"build {what} per user: CPU ms mean {np.mean(ts):.1f} max {np.max(ts):.1f} "
              f"({len(users)} users, {turns:.0f} turns each on average)")
    if args.writes:
        after_write(lab, data, vecs, names, args.writes)
    return 0


def after_write(lab: Lab, data: ds.Dataset, vecs: dict, names: tuple[str, ...], n: int) -> None:
    """CPU of the first ``fuse`` after one new turn is folded into the asker's memory (per configuration)."""
    step = max(1, len(data.questions) // n)
    cost: dict[str, list[float]] = {name: [] for name in names}
    for i, q in enumerate(data.questions[::step][:n]):
        vec = vecs[q.question]
        dense = lab.dense(q.user_id, vec, 100)
        for name in names:
            memory = lab.state.user(TENANT, q.user_id)
            last = memory.messages.by_id[memory.messages.order[-1]]
            event = MessageRecorded(conversation_id=last.conversation_id, role="user", speaker=last.speaker,
                                    text=f"One more thing I wanted to tell you, number {i}.",
                                    occurred_at=last.occurred_at, client_message_id=f"fuse-cost-{name}-{i}")
            env = seal(PendingEvent(TENANT, q.user_id, f"fuse-cost-{name}-{i}", event), memory.head + 1,
                       datetime.now(UTC))
            fold(lab.state, [env])
            t = time.thread_time()
            fuse(memory, q.question, dense, 100, ALL[name], vec, now=None, policy=DEFAULT_POLICY)
            cost[name].append(1000 * (time.thread_time() - t))
    for name, c in cost.items():
        print(f"{name}: first fuse after a new turn, CPU ms p50 {np.percentile(c, 50):.2f} "
              f"p95 {np.percentile(c, 95):.2f} mean {np.mean(c):.2f} (n={len(c)})")


if __name__ == "__main__":
    raise SystemExit(main())
