"""Stale-facts feedback benchmark: can the learning loop retire a fact the user has since changed?

    python -m benchmarks.feedback_stale --out bench/feedback_stale.json [--users 6] [--seed 3]

The feedback benchmark (:mod:`benchmarks.feedback`) has no stale facts, so
the dispatcher's invalidation has nothing to act on there. Here it has
(:mod:`benchmarks.stale_facts`): ``--users`` English and ``--users``
Chinese users each state eight facts, and four months later their new
values. Everything goes through the public Memory API on Ray with the
packaged MiniLM encoder.

Protocol. Two feedback rounds (a week apart, a month after the change): for
each fact the agent builds a ``--budget``-token context for one question
(round 1: wording 1, round 2: wording 2) and answers from it. When the
context carries the old value the agent's reply repeats the lines that carry
it and the user corrects it as outdated ("No, that's outdated, I moved to
Porto.", "不对，我早就搬家了，现在住在成都。"); when it carries only the new
value the reply repeats those lines (recorded, so they are reinforced as
used) and the user says "Thanks, that's right!"; when it carries neither,
"No, that's wrong." about its first lines. The Feedback Judge and the
Evolution Dispatcher run on every reaction. Then, a month later, the
held-back questions: wordings 3 and 4 (``paraphrase``) and wording 1 again
(``repeat``), measured with the loop (``palimpsest``) and without it
(``palimpsest_no_feedback``, the adjustments ignored) on the same store:

- ``stale@5`` / ``current@5``: share of questions whose top 5 hits carry the
  old / the new value; ``stale_in_context`` / ``current_in_context``: the
  same for the ``--budget``-token context; ``clean_context``: the context
  carries the new value and not the old one (an agent reading it cannot
  answer with the stale value).

The counts say how many signals said stale, what the dispatcher did, which
turns and notes it invalidated (``turn:old``: the old value's statement,
``turn:new``: the new one's — a mistake —, ``turn:chatter``; ``note:…`` the
same for notes) and whether a replay of every log reproduces it
(``replay_equal``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

from benchmarks.stale_facts import FEEDBACK_AT, HELD_BACK_AT, REACTIONS, START, Fact, Script, scripts
from projections.adapters.embedding import encode_whole_queries

TENANT = "stale"
K = 5
SYSTEMS = ("palimpsest", "palimpsest_no_feedback")
METRICS = ("stale@5", "current@5", "stale_in_context", "current_in_context", "clean_context")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.feedback_stale", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, type=Path, help="result JSON")
    p.add_argument("--users", type=int, default=6, help="users per language (default 6: 96 facts)")
    p.add_argument("--slots", type=int, default=8, help="facts per user, 1 to 8 (default 8)")
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("--budget", type=int, default=150, help="context token budget (default 150)")
    p.add_argument("--num-shards", type=int, default=2)
    p.add_argument("--embedder", default="minilm", choices=("minilm", "hash"))
    args = p.parse_args(argv)
    if args.users < 1:
        p.error("--users must be at least 1")
    if not 1 <= args.slots <= 8:
        p.error("--slots must be from 1 to 8")
    if args.budget < 20:
        p.error("--budget must be at least 20 tokens (one line)")
    return args


def react(mem, fact: Fact, question: str, at, budget: int) -> dict:
    """The agent answers ``question`` from its context; the simulated user reacts. Returns what happened."""
    ctx = mem.build_context(TENANT, fact.user_id, question, token_budget=budget, now=at)
    stale = [i.line for i in ctx.items if fact.carries(i.line)[0]]
    current = [i.line for i in ctx.items if fact.carries(i.line)[1]]
    positive, wrong = REACTIONS[fact.language]
    if stale:
        reply, said, outcome = " ".join(stale), fact.correction, "stale"
    elif current:
        reply, said, outcome = " ".join(current), positive, "current"
        mem.record_reply(TENANT, fact.user_id, reply, ctx, query=question)
    else:
        reply, said, outcome = " ".join(i.line for i in ctx.items[:3]) or "I don't know.", wrong, "neither"
    verdict = mem.judge_feedback(TENANT, fact.user_id, said, reply, retrieved=ctx, now=at + timedelta(minutes=1))
    return {"outcome": outcome, "type": verdict["type"], "stale_hint": "invalidate" in verdict["action_hints"],
            "adjustments": [f"{a['layer']}:{a['action']}" for a in verdict["adjustments"]],
            "slot": fact.slot, "user": fact.user_id}


def measure(mem, fact: Fact, question: str, vector, fusion, budget: int) -> dict[str, bool]:
    """One held-back question on one system: read-only (no touches), asked a month after the feedback."""
    from actors import commands as c

    at = START + HELD_BACK_AT
    hits = mem.shards.ask(TENANT, fact.user_id, c.Search(
        tenant=TENANT, user_id=fact.user_id, query=question, query_vector=vector, k=K, now=at, scope="active",
        fusion=fusion, touch_reason=None))
    ctx = mem.shards.ask(TENANT, fact.user_id, c.BuildContext(
        tenant=TENANT, user_id=fact.user_id, query=question, query_vector=vector, now=at, token_budget=budget,
        fusion=fusion))
    top = [fact.carries(h.text) for h in hits]
    lines = [fact.carries(i.line) for i in ctx.items]
    in_ctx = (any(o for o, _ in lines), any(n for _, n in lines))
    return {"stale@5": any(o for o, _ in top), "current@5": any(n for _, n in top),
            "stale_in_context": in_ctx[0], "current_in_context": in_ctx[1],
            "clean_context": in_ctx[1] and not in_ctx[0],
            "stale_ids": [i.memory_id for i, (o, _) in zip(ctx.items, lines) if o]}


def rates(rows: list[dict[str, bool]]) -> dict[str, float]:
    return {m: round(sum(r[m] for r in rows) / len(rows), 4) for m in METRICS} if rows else {}


def stale_left(mem, facts: list[Fact], loop_rows: list[dict], said: list[int]) -> dict:
    """What still carries the old value in the loop's held-back contexts, as ``<rounds>x:<kind>:<made>``: how many
    feedback rounds corrected the fact, a turn or a note, and what the dispatcher did to it (``none``, ``working``
    penalties only — expired a month later —, a ``stable`` penalty)."""
    out: Counter = Counter()
    notes: dict[str, set[str]] = {}
    for f, row, n in zip(facts, loop_rows, said):
        if f.user_id not in notes:
            notes[f.user_id] = {x["note_id"] for x in mem.notes(TENANT, f.user_id, include_inactive=True)}
        for item in row["stale_ids"]:
            made = {a["layer"] for a in mem.adjustments(TENANT, f.user_id, target_id=item) if a["reverted_at"] is None}
            how = "stable" if "stable" in made else "working" if made else "none"
            out[f"{n}x:{'note' if item in notes[f.user_id] else 'turn'}:{how}"] += 1
    return dict(sorted(out.items()))


def classify(users: list[Script], ids: dict[str, list[str]], notes: dict[str, list[dict]]) -> dict[str, str]:
    """Memory or note id → ``turn:old`` / ``turn:new`` / ``turn:chatter`` (``note:…`` for a note): what it says."""
    kinds = {}
    for s in users:
        texts = [("turn", m["text"], i) for m, i in zip(s.messages, ids[s.user_id])]
        texts += [("note", n["text"], n["note_id"]) for n in notes[s.user_id]]
        for what, text, item_id in texts:
            olds = any(f.carries(text)[0] for f in s.facts)
            news = any(f.carries(text)[1] for f in s.facts)
            kinds[item_id] = f"{what}:{'old' if olds else 'new' if news else 'chatter'}"
    return kinds


def run(args: argparse.Namespace) -> dict:
    from actors.ray_init import shutdown_ray
    from benchmarks.variants import VARIANTS
    from palimpsest.memory import Memory

    users = scripts(args.seed, args.users, args.slots)
    facts = [f for s in users for f in s.facts]
    print(f"stale facts: {len(users)} users, {len(facts)} facts, seed {args.seed}", file=sys.stderr)
    store = Path(tempfile.mkdtemp(prefix="palimpsest-stale-"))
    timings: dict[str, float] = {}
    mem = Memory.open(store, num_shards=args.num_shards, embedder=args.embedder)
    try:
        started = time.perf_counter()
        ids = {s.user_id: mem.add_messages(list(s.messages), tenant=TENANT, user_id=s.user_id).memory_ids
               for s in users}
        mem.consolidate()
        timings["ingest_seconds"] = time.perf_counter() - started

        started = time.perf_counter()
        rounds = [[react(mem, f, f.questions[r], START + at, args.budget) for f in facts]
                  for r, at in enumerate(FEEDBACK_AT)]
        timings["feedback_seconds"] = time.perf_counter() - started

        started = time.perf_counter()
        asked = [(f, kind, f.questions[n]) for f in facts for kind, n in (("paraphrase", 2), ("paraphrase", 3),
                                                                           ("repeat", 0))]
        texts = sorted({q for _, _, q in asked})
        vectors = dict(zip(texts, encode_whole_queries(mem.embedder, texts)))
        rows = {name: [measure(mem, f, q, vectors[q], VARIANTS[name], args.budget) for f, _, q in asked]
                for name in SYSTEMS}
        timings["held_back_seconds"] = time.perf_counter() - started

        adjustments = [a for s in users for a in mem.adjustments(TENANT, s.user_id)]
        said = {id(f): sum(rs[i]["outcome"] == "stale" for rs in rounds) for i, f in enumerate(facts)}
        left = stale_left(mem, [f for f, _, _ in asked], rows["palimpsest"], [said[id(f)] for f, _, _ in asked])
        notes = {s.user_id: mem.notes(TENANT, s.user_id, include_inactive=True) for s in users}
        replays = mem.replay()
    finally:
        mem.close()
        shutdown_ray()
        shutil.rmtree(store, ignore_errors=True)
    return report(args, users, facts, rounds, asked, rows, adjustments, classify(users, ids, notes), replays, timings,
                  left)


def report(args, users, facts, rounds, asked, rows, adjustments, kinds, replays, timings, left) -> dict:
    def subset(keep) -> dict:
        return {name: rates([r for (f, kind, _), r in zip(asked, rows[name]) if keep(f, kind)]) for name in SYSTEMS}

    invalidated = [t for a in adjustments if a["action"] == "invalidate" for t in a["target_ids"]]
    lost = sum(a["current_in_context"] and not b["current_in_context"]
               for a, b in zip(rows["palimpsest_no_feedback"], rows["palimpsest"]))
    cleared = sum(a["stale_in_context"] and not b["stale_in_context"]
                  for a, b in zip(rows["palimpsest_no_feedback"], rows["palimpsest"]))
    per_round = [{"outcomes": dict(Counter(r["outcome"] for r in rs)),
                  "signals_by_type": dict(Counter(r["type"] for r in rs)),
                  "said_stale": sum(r["stale_hint"] for r in rs),
                  "adjustments_by_kind": dict(Counter(k for r in rs for k in r["adjustments"]))} for rs in rounds]
    all_rows = subset(lambda f, kind: True)
    said = {id(f): sum(rs[i]["outcome"] == "stale" for rs in rounds) for i, f in enumerate(facts)}
    return {
        "users": len(users), "facts": len(facts), "held_back_questions": len(asked),
        "systems": all_rows,
        "delta": {m: round(all_rows["palimpsest"][m] - all_rows["palimpsest_no_feedback"][m], 4) for m in METRICS},
        "by_kind": {kind: subset(lambda f, k, kind=kind: k == kind) for kind in ("paraphrase", "repeat")},
        "by_language": {lang: subset(lambda f, k, lang=lang: f.language == lang) for lang in ("en", "zh")},
        # by how many feedback rounds carried the old value (2: corrected twice, where invalidation can act)
        "by_stale_rounds": {str(n): subset(lambda f, k, n=n: said[id(f)] == n) for n in range(len(rounds) + 1)},
        "feedback_rounds": per_round,
        "counts": {
            "signals": sum(len(rs) for rs in rounds),
            # facts whose context carried the old value in 0, 1 or both feedback rounds (2: the user said stale twice)
            "facts_by_stale_rounds": dict(Counter(said.values())),
            "adjustments": len(adjustments),
            "adjustments_by_kind": dict(Counter(f"{a['layer']}:{a['action']}" for a in adjustments)),
            # what the invalidations hit: the old value's turns and notes (right), the new value's (wrong), others
            "invalidated": dict(Counter(kinds.get(t, "other") for t in invalidated)),
            "held_back_stale_cleared_from_context": cleared,
            "held_back_current_lost_from_context": lost,
            # the items still carrying the old value in the loop's held-back contexts, by the facts' stale rounds,
            # kind and the adjustments made to them (working penalties have expired by then)
            "stale_left_in_context": left,
        },
        "replay_equal": all(r.equal for r in replays),
        "timings": timings,
        "config": {"seed": args.seed, "users_per_language": args.users, "slots": args.slots, "k": K,
                   "budget": args.budget, "embedder": args.embedder, "num_shards": args.num_shards},
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    result = run(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False), encoding="utf-8")
    print(json.dumps({k: result[k] for k in ("systems", "delta", "by_kind", "by_stale_rounds", "feedback_rounds",
                                              "counts", "replay_equal")}, indent=2, ensure_ascii=False))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
