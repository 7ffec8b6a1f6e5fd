"""Feedback benchmark: does the learning loop (judge → dispatcher → adjustments, then Molt) help retrieval?

    python -m benchmarks.feedback --data ../shared/data/locomo/locomo10_dev.json --out bench/feedback_dev.json

Protocol. Every turn of the file is ingested through the real system (the
packaged MiniLM encoder). Each conversation's questions are split in two
alternating halves. On the first half a simulated user reacts to the agent:
the agent builds a 1000-token context for the question and answers from its
first lines; when the context holds an evidence turn the agent's reply
repeats the evidence turns and the user says "Thanks, that's right!"
(positive; the reply is recorded, so the evidence is reinforced as used),
otherwise the user says "No, that's wrong." about a reply drawn from the top
three lines (negative). The Feedback Judge and the Evolution Dispatcher run
on every reaction; then the Molt controller runs once per conversation,
replaying the recorded queries. On the held-back half, recall@10 and budget
recall at 1000 tokens are measured with the loop (``palimpsest``), without it
(``palimpsest_no_feedback``: the adjustments and the learned policy ignored),
and with each of its mechanisms alone (``palimpsest_penalties_only``: the
dispatcher's adjustments; ``palimpsest_policy_only``: the Molt policy), on
the same store; ``held_back_moved`` says which adjustments applied to the
evidence the loop pushed out of the top 10 (:mod:`benchmarks.feedback_losses`). Writes JSON with both systems and the counts of
signals, adjustments and policy changes.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from tqdm import tqdm

from benchmarks import dataset as ds
from benchmarks.feedback_losses import losses
from benchmarks.metrics import aggregate, metric_keys, score
from benchmarks.systems import PalimpsestSystem, provenance_turns
from benchmarks.variants import VARIANTS
from palimpsest.locomo import TENANT
from projections.adapters.embedding import encode_whole_queries

K_VALUES = (5, 10)
BUDGETS = (1000,)  # one budget: four systems are measured on the held-back half
POSITIVE = "Thanks, that's right!"
NEGATIVE = "No, that's wrong."
# the loop, without it, and each of its mechanisms alone (the dispatcher's adjustments; the Molt policy)
SYSTEMS = ("palimpsest", "palimpsest_no_feedback", "palimpsest_penalties_only", "palimpsest_policy_only")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.feedback", description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, type=Path, help="a LoCoMo-format JSON file")
    p.add_argument("--out", required=True, type=Path, help="result JSON")
    p.add_argument("--limit-samples", type=int, metavar="N", help="only the first N conversations")
    p.add_argument("--num-shards", type=int, help="shards of the new store (default: CPU count)")
    p.add_argument("--embedder", default="minilm", choices=("minilm", "hash"))
    p.add_argument("--ingested", type=Path, metavar="DIR",
                   help="a copy of the store right after ingesting --data: made there on the first run, "
                        "reused by the next runs on the same file (the learning loop itself always runs anew)")
    args = p.parse_args(argv)
    if not args.data.is_file():
        p.error(f"--data {args.data}: no such file; pass a LoCoMo JSON file, e.g. "
                "--data ../shared/data/locomo/locomo10_dev.json")
    if args.limit_samples is not None and args.limit_samples < 1:
        p.error("--limit-samples must be at least 1")
    return args


def split(questions: list[ds.Question]) -> tuple[list[ds.Question], list[ds.Question]]:
    """Alternating halves per conversation: (feedback half, held-back half)."""
    seen: Counter = Counter()
    first, second = [], []
    for q in questions:
        (first if seen[q.sample_id] % 2 == 0 else second).append(q)
        seen[q.sample_id] += 1
    return first, second


def react(mem, q: ds.Question) -> dict:
    """The simulated user's reaction to the agent's answer to ``q``; returns the verdict with ``hit``."""
    ctx = mem.build_context(TENANT, q.user_id, q.question, token_budget=1000, now=q.asked_at)
    found = [i for i in ctx.items if provenance_turns(i.turn_id, i.provenance) & q.evidence]
    if found:
        reply = " ".join(i.line for i in found)
        mem.record_reply(TENANT, q.user_id, reply, ctx, query=q.question)
        verdict = mem.judge_feedback(TENANT, q.user_id, POSITIVE, reply, retrieved=ctx, now=q.asked_at)
    else:
        reply = " ".join(i.line for i in ctx.items[:3]) or "I don't know."
        verdict = mem.judge_feedback(TENANT, q.user_id, NEGATIVE, reply, retrieved=ctx, now=q.asked_at)
    return {**verdict, "hit": bool(found)}


def run(args: argparse.Namespace) -> dict:
    from actors.ray_init import shutdown_ray
    from palimpsest.memory import Memory

    data = ds.load(args.data, args.limit_samples)
    feedback_half, held_back = split(data.questions)
    print(f"{data.name}: {len(data.samples)} conversations, {len(data.messages)} turns, {len(feedback_half)} "
          f"feedback questions, {len(held_back)} held back", file=sys.stderr)
    store = Path(tempfile.mkdtemp(prefix="palimpsest-feedback-"))
    timings: dict[str, float] = {}
    started = time.perf_counter()
    if args.ingested is not None and (args.ingested / "store.json").exists():
        shutil.copytree(args.ingested, store, dirs_exist_ok=True)  # the same file ingested before, no feedback yet
        mem = Memory.open(store)
    else:
        mem = Memory.open(store, num_shards=args.num_shards, embedder=args.embedder)
        mem.add_messages(data.messages, tenant=TENANT, batch_size=256, progress=True)
        mem.consolidate()
        if args.ingested is not None:
            mem.close()
            shutil.copytree(store, args.ingested)
            mem = Memory.open(store)
    timings["ingest_seconds"] = time.perf_counter() - started
    try:
        started = time.perf_counter()
        reactions = [react(mem, q) for q in tqdm(feedback_half, desc="feedback", unit="q", mininterval=1.0)]
        timings["feedback_seconds"] = time.perf_counter() - started
        started = time.perf_counter()
        asked = {q.user_id: q.asked_at for q in data.questions}
        molts = [o for user, at in tqdm(sorted(asked.items()), desc="molt", unit="user")
                 for o in mem.molt(TENANT, user, asked_at=at)]
        timings["molt_seconds"] = time.perf_counter() - started

        started = time.perf_counter()
        keys = metric_keys(K_VALUES, BUDGETS)
        results, rows = {}, {}
        texts = sorted({q.question for q in held_back})
        vectors = dict(zip(texts, encode_whole_queries(mem.embedder, texts)))  # encoded once for every system
        for name in SYSTEMS:
            system = PalimpsestSystem(mem, k=max(K_VALUES), budgets=BUDGETS, name=name, fusion=VARIANTS[name],
                                      query_vectors=vectors)
            rows[name] = [score(q, system.retrieve(q), K_VALUES, BUDGETS, max(BUDGETS))
                          for q in tqdm(held_back, desc=name, unit="q", mininterval=1.0)]
            results[name] = aggregate(rows[name], keys)
        moved = losses(mem, held_back, rows["palimpsest"], rows["palimpsest_no_feedback"],
                       VARIANTS["palimpsest"], VARIANTS["palimpsest_no_feedback"])
        timings["held_back_seconds"] = time.perf_counter() - started

        adjustments = [a for user in asked for a in mem.adjustments(TENANT, user)]
        history = [r for user in asked for r in mem.policy_history(TENANT, user)["history"]]
        replays = mem.replay()
    finally:
        mem.close()
        shutdown_ray()
        shutil.rmtree(store, ignore_errors=True)

    counts = {
        "signals": len(reactions),
        "signals_by_type": dict(Counter(r["type"] for r in reactions)),
        "feedback_context_hits": sum(r["hit"] for r in reactions),
        "adjustments": len(adjustments),
        "adjustments_by_kind": dict(Counter(f"{a['layer']}:{a['action']}" for a in adjustments)),
        "adjusted_memories": len({t for a in adjustments for t in a["target_ids"]}),
        "policy_changes": sum(r["status"] == "applied" for r in history),
        "rejected_proposals": sum(r["status"] == "rejected" for r in history),
        "policy_changes_detail": [{"parameters": r["parameters"], "before": r["before"], "after": r["after"],
                                   "queries": r["queries"]} for r in history if r["status"] == "applied"],
        "molt_triggers": dict(Counter(t.split(" ")[0] for o in molts for t in o["triggers"])),
    }
    pick = ("recall@10", "budget_recall@1000")
    return {
        "data": str(args.data), "conversations": len(data.samples), "feedback_questions": len(feedback_half),
        "held_back_questions": len(held_back),
        "systems": results,
        "summary": {name: {k: results[name][k] for k in pick} for name in results},
        "delta": {name: {k: results[name][k] - results["palimpsest_no_feedback"][k] for k in pick}
                  for name in results if name != "palimpsest_no_feedback"},
        "held_back_moved": moved,
        "counts": counts,
        "replay_equal": all(r.equal for r in replays),
        "timings": timings,
        "config": {"embedder": args.embedder, "k": list(K_VALUES), "budgets": list(BUDGETS),
                   "positive": POSITIVE, "negative": NEGATIVE, "limit_samples": args.limit_samples},
    }


def main(argv: list[str] | None = None) -> int:
    import json

    args = parse_args(argv)
    result = run(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False), encoding="utf-8")
    print(json.dumps({"summary": result["summary"], "delta": result["delta"],
                      "held_back_moved": result["held_back_moved"],
                      "counts": {k: v for k, v in result["counts"].items() if k != "policy_changes_detail"},
                      "replay_equal": result["replay_equal"]}, indent=2))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
