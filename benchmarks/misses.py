"""A failure sample: misses of one configuration, each with where its evidence ranked and an automatic cause.

    python -m benchmarks.misses --data FILE --store STORE [--variant NAME] [--sample 10] [--seed 0]

A miss is an evidence turn of a scored question outside the top 10. Causes,
from the full fused list (``candidates`` long): ``near`` (ranked 11-20: the
order is the problem), ``deep`` (21 and below: the candidate is found but
weak), ``absent`` (no list found it: a vocabulary or world-knowledge gap
between question and turn). ``adjacent`` marks a miss next to a top-10 turn
in the same conversation, ``partial`` a question of which another evidence
turn was found. Prints the counts per cause over every miss, then a seeded
sample with the question, the answer and the missed turn's text.
"""

from __future__ import annotations

import argparse
import random
from collections import Counter
from pathlib import Path

from benchmarks import dataset as ds
from benchmarks.lab import Lab, load_state, query_vectors
from benchmarks.variants import ALL
from palimpsest.locomo import TENANT
from projections.folds.policy import DEFAULT_POLICY
from projections.queries import rerank
from projections.queries.retrieval import fuse


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.misses", description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, type=Path)
    p.add_argument("--store", required=True, type=Path)
    p.add_argument("--variant", default="palimpsest")
    p.add_argument("--sample", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    data = ds.load(args.data)
    lab = Lab(load_state(args.store))
    config = ALL[args.variant]
    vecs = query_vectors([q.question for q in data.questions], "sentence-transformers/all-MiniLM-L6-v2")
    misses, causes = [], Counter()
    for q in data.questions:
        memory = lab.state.user(TENANT, q.user_id)
        vec = vecs[q.question]
        hits = fuse(memory, q.question, lab.dense(q.user_id, vec, config.candidates), config.candidates, config, vec,
                    now=q.asked_at, policy=DEFAULT_POLICY)
        rank = {h.turn_id: i + 1 for i, h in enumerate(hits)}
        top = {h.memory_id for h in hits[:10]}
        found = [e for e in q.evidence if rank.get(e, 999) <= 10]
        prev_next = rerank.TABLES.get(memory).prev_next
        by_turn = {m.turn_id: m for m in memory.messages.by_id.values()}
        for e in sorted(q.evidence):
            r = rank.get(e)
            if r is not None and r <= 10 or e not in by_turn:
                continue
            cause = "near" if r is not None and r <= 20 else "deep" if r is not None else "absent"
            msg = by_turn[e]
            flags = [f for f, on in (("adjacent", bool(set(prev_next.get(msg.event_id, ())) & top)),
                                     ("partial", bool(found))) if on]
            causes[cause] += 1
            causes.update(flags)
            misses.append((q, e, r, cause, flags, msg))
    print(f"{data.name}, {args.variant}: {len(misses)} missed evidence turns; " +
          ", ".join(f"{k} {v}" for k, v in causes.most_common()))
    for q, e, r, cause, flags, msg in random.Random(args.seed).sample(misses, min(args.sample, len(misses))):
        print(f"- [cat {q.category} {data.category_names.get(q.category, '')}] {q.question}  (answer: {q.answer})\n"
              f"  missed {e} rank {r or '-'} {cause} {' '.join(flags)}: {msg.speaker}: {msg.text[:140]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
