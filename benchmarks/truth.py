"""Memory truth benchmark: is the current value found first, are superseded values kept out of the context, and do
constraints reach a small context?

    python -m benchmarks.truth --out bench/truth.json [--embedder minilm] [--users 8] [--seed 7] [--quick]

Scripted users (:mod:`benchmarks.truth_script`, phrases in :mod:`benchmarks.truth_dialogues`), English and Chinese,
talk with an assistant in three sessions weeks apart: preferences that change (drink, editor, city, phone, weekend
hobby), project decisions reversed (database, meeting time, hosting, launch date), constraints (allergy, health,
a data rule of the project, diet) and statements of two facts in one turn ("I'm vegetarian and I hate cilantro"),
among everyday chatter. Everything goes through the public Python API: each session is ingested with its times, then
consolidated; between sessions the user asks things (each a ``--budget``-token context built at that moment, which
counts as an access, so reads can reinforce what they find). Two weeks after the last session an archival sweep
reports what the forgetting curve would let go (a dry run: nothing archived; ``--sweep`` archives it before the
questions), and each fact's question is asked: a search (top 3) and a ``--budget``-token context, and for a
constraint a context for a task that should respect it ("What should I cook for dinner tonight?"). The metrics (per
language, per kind of fact, overall) are defined in :mod:`benchmarks.truth_metrics`:

- ``current@1`` / ``current@3``: the top hit / one of the top 3 carries the current value;
- ``current_in_context``: the question's context does;
- ``stale@3`` / ``stale_in_context`` (facts that changed): a superseded value appears there, not labelled superseded;
- ``constraint_recall``: the task's context carries the constraint;
- ``current_archived``: the sweep takes every turn that states the current value (for a constraint: the constraint).
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

from benchmarks.provenance import stamp
from benchmarks.truth_dialogues import CONSTRAINT, DECISION, PREFERENCE
from benchmarks.truth_metrics import METRICS, STALE, Evidence, carried, rates, score
from benchmarks.truth_script import SESSIONS, Fact, Script, scripts

TENANT = "truth"
K = 3
MISSES = 15  # examples kept per kind of miss


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.truth", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, type=Path, help="result JSON")
    p.add_argument("--embedder", default="minilm", metavar="KIND",
                   help="the store's encoder: minilm (default), multilingual-e5-small, hash, ...")
    p.add_argument("--users", type=int, default=8, help="users per language (default 8: 224 facts)")
    p.add_argument("--quick", action="store_true", help="one user per language (28 facts), for a smoke test")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--budget", type=int, default=300, help="context token budget (default 300)")
    p.add_argument("--num-shards", type=int, default=2)
    p.add_argument("--sweep", action="store_true",
                   help="archive what the sweep finds before the questions (default: a dry run, nothing archived)")
    args = p.parse_args(argv)
    from events.errors import EncoderError
    from projections.adapters.encoder_kinds import parse

    try:
        parse(args.embedder, "--embedder")
    except EncoderError as exc:
        p.error(str(exc))
    if args.users < 1:
        p.error("--users must be at least 1")
    if args.budget < 20:
        p.error("--budget must be at least 20 tokens (one line)")
    if args.num_shards < 1:
        p.error("--num-shards must be at least 1")
    return args


def _ingest(mem, users: list[Script], budget: int) -> tuple[dict[str, str], dict]:
    """Every session in time order, each consolidated, with the users' reads after it; client id → memory id."""
    memory_id: dict[str, str] = {}
    timings = {"ingest_seconds": 0.0, "reads_seconds": 0.0, "reads": 0}
    for phase in range(SESSIONS):
        started = time.perf_counter()
        for s in users:
            report = mem.add_messages(list(s.sessions[phase]), tenant=TENANT, user_id=s.user_id)
            memory_id.update(zip((m["client_message_id"] for m in s.sessions[phase]), report.memory_ids, strict=True))
        mem.consolidate()
        timings["ingest_seconds"] += time.perf_counter() - started
        started = time.perf_counter()
        for s in users:
            for when, query in s.reads[phase]:
                mem.build_context(TENANT, s.user_id, query, token_budget=budget, now=when)
                timings["reads"] += 1
        timings["reads_seconds"] += time.perf_counter() - started
    return memory_id, timings


def _sweep(mem, users: list[Script], facts: list[Fact], evidence: dict[str, Evidence], dry_run: bool) -> tuple[
        set[str], dict]:
    """What the forgetting curve lets go by each user's question time (archived unless ``dry_run``), and by kind."""
    archived = {m for s in users for row in mem.sweep(s.asked_at, tenant=TENANT, user_id=s.user_id, dry_run=dry_run)
                for m in row["memory_ids"]}
    constraint = {m for f in facts if f.kind == CONSTRAINT for m in evidence[f.fact_id].current}
    current = {m for f in facts if f.kind != CONSTRAINT for m in evidence[f.fact_id].current}
    stale = {m for f in facts for m in evidence[f.fact_id].stale}
    return archived, {"dry_run": dry_run, "archived": len(archived), "constraint_statements": len(archived & constraint),
                      "current_statements": len(archived & current),
                      "superseded_statements_and_replies": len(archived & stale),
                      "constraint_statements_total": len(constraint), "current_statements_total": len(current)}


def _ask(mem, s: Script, f: Fact, budget: int) -> dict:
    hits = mem.search(TENANT, s.user_id, f.question, k=K, now=s.asked_at)
    ctx = mem.build_context(TENANT, s.user_id, f.question, token_budget=budget, now=s.asked_at)
    task = mem.build_context(TENANT, s.user_id, f.task, token_budget=budget, now=s.asked_at) if f.task else None
    return {"hits": hits, "context": ctx, "task": task}


def _lines(f: Fact, ev: Evidence, turns: set[str], note_sources: dict[str, set[str]], asked: dict) -> dict:
    """What each hit and context line carried of ``f``."""
    def item(item_id, text, meta, provenance):
        sources = set(provenance.get("event_ids", ())) | note_sources.get(item_id, set())
        return carried(f, ev, item_id, sources, text, item_id in turns, meta)

    hits = [item(h.memory_id, h.text, h.breakdown, h.provenance) for h in asked["hits"]]
    ctx = [item(i.memory_id, i.line, i.provenance, i.provenance) for i in asked["context"].items]
    task = None if asked["task"] is None else [item(i.memory_id, i.line, i.provenance, i.provenance)
                                                for i in asked["task"].items]
    return {"hits": hits, "context": ctx, "task": task}


def _miss(f: Fact, asked: dict, lines: dict, row: dict) -> dict:
    out = {"fact": f.fact_id, "question": f.question, "values": list(f.values),
           "top_hit": asked["hits"][0].text if asked["hits"] else None}
    if row.get("stale_in_context"):
        out["stale_lines"] = [i.line for i, c in zip(asked["context"].items, lines["context"]) if c == STALE]
    if row.get("constraint_recall") is False:
        out["task"] = f.task
        out["task_context"] = [i.line for i in asked["task"].items][:8]
    return out


def _stale_sources(facts: list[Fact], asked: list[dict], lines: list[dict], turns: set[str], replies: set[str]) -> dict:
    """Over the changed facts whose context carries a superseded value: how many carry it in a user's turn, in an
    assistant's reply, in a note, and only in replies (which no note labels)."""
    kinds = []
    for f, a, x in zip(facts, asked, lines):
        if f.changed:
            stale = [i.memory_id for i, c in zip(a["context"].items, x["context"]) if c == STALE]
            kinds.append({"reply" if m in replies else "user_turn" if m in turns else "note" for m in stale})
    return {"with_user_turn": sum("user_turn" in k for k in kinds), "with_reply": sum("reply" in k for k in kinds),
            "with_note": sum("note" in k for k in kinds), "only_replies": sum(k == {"reply"} for k in kinds)}


def run(args: argparse.Namespace) -> dict:
    from palimpsest import Memory

    users = scripts(args.seed, 1 if args.quick else args.users)
    facts = [f for s in users for f in s.facts]
    by_user = {s.user_id: s for s in users}
    print(f"truth: {len(users)} users, {len(facts)} facts, {sum(len(x) for s in users for x in s.sessions)} messages, "
          f"embedder {args.embedder}, seed {args.seed}", file=sys.stderr)
    load_at_start = round(os.getloadavg()[0], 2)
    store = Path(tempfile.mkdtemp(prefix="palimpsest-truth-"))
    started = time.perf_counter()
    mem = Memory.open(store, num_shards=args.num_shards, embedder=args.embedder)
    try:
        memory_id, timings = _ingest(mem, users, args.budget)
        evidence = {f.fact_id: Evidence.of(f, memory_id) for f in facts}
        archived, swept = _sweep(mem, users, facts, evidence, dry_run=not args.sweep)
        asking = time.perf_counter()
        asked = [_ask(mem, by_user[f.user_id], f, args.budget) for f in facts]
        timings["questions_seconds"] = time.perf_counter() - asking
        note_sources: dict[str, set[str]] = {}
        for s in users:
            for note in mem.notes(TENANT, s.user_id, include_inactive=True, now=s.asked_at):
                note_sources.setdefault(note["note_id"], set()).update(x["memory_id"] for x in note["sources"])
    finally:
        mem.close()
        shutil.rmtree(store, ignore_errors=True)
    timings["total_seconds"] = time.perf_counter() - started
    turns = set(memory_id.values())
    lines = [_lines(f, evidence[f.fact_id], turns, note_sources, a) for f, a in zip(facts, asked)]
    rows = [score(f, x["hits"], x["context"], x["task"], evidence[f.fact_id].current <= archived)
            for f, x in zip(facts, lines)]
    replies = {memory_id[m["client_message_id"]] for s in users for x in s.sessions for m in x if m["role"] != "user"}
    result = report(args, users, facts, rows, asked, lines, swept, timings, load_at_start)
    result["stale_in_context_by_source"] = _stale_sources(facts, asked, lines, turns, replies)
    return result


def report(args, users, facts, rows, asked, lines, swept, timings, load_at_start) -> dict:
    def group(keep) -> dict:
        chosen = [(f, r) for f, r in zip(facts, rows) if keep(f)]
        return rates([f for f, _ in chosen], [r for _, r in chosen])

    misses = {m: [_miss(f, a, x, r) for f, a, x, r in zip(facts, asked, lines, rows) if r.get(m) is bad][:MISSES]
              for m, bad in (("current@1", False), ("stale_in_context", True), ("constraint_recall", False))}
    return {
        "benchmark": "truth",
        "overall": group(lambda f: True),
        "by_language": {lang: group(lambda f, lang=lang: f.language == lang) for lang in ("en", "zh")},
        "by_kind": {**{kind: group(lambda f, kind=kind: f.kind == kind) for kind in (PREFERENCE, DECISION, CONSTRAINT)},
                    "multi_clause": group(lambda f: f.multi_clause)},
        "counts": {"users": len(users), "facts": len(facts), "changed": sum(f.changed for f in facts),
                   "constraints": sum(f.task is not None for f in facts),
                   "multi_clause": sum(f.multi_clause for f in facts),
                   "messages": sum(len(x) for s in users for x in s.sessions), "reads": timings.pop("reads")},
        "sweep": swept,
        "misses": misses,
        "timings": {k: round(v, 2) for k, v in timings.items()},
        "config": {"embedder": args.embedder, "seed": args.seed, "users_per_language": 1 if args.quick else args.users,
                   "quick": args.quick, "budget": args.budget, "k": K, "num_shards": args.num_shards,
                   "sweep": args.sweep, "load_average_1m_at_start": load_at_start},
    }


def table(result: dict) -> str:
    """The figures as a plain-text table: one row per language, per kind of fact, and overall."""
    head = ("", "facts", *METRICS)
    rows = [("overall", result["overall"]), *result["by_language"].items(), *result["by_kind"].items()]

    def cell(r: dict, m: str) -> str:
        return "–" if r[m] is None else f"{r[m]:.3f} ({r['n_' + m]})"

    body = [(name, str(r["facts"]), *(cell(r, m) for m in METRICS)) for name, r in rows]
    widths = [max(len(x[i]) for x in (head, *body)) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths)) for line in (head, *body))


def execute(args: argparse.Namespace, argv: list[str] | None) -> dict:
    """Run, stamp, write ``--out`` and print the table (Ray stays as it is: :func:`main` shuts it down)."""
    result = run(args)
    result["provenance"] = stamp("benchmarks.truth", argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"budget {args.budget} tokens, embedder {args.embedder}; each cell: rate (questions)")
    print(table(result))
    print("sweep:", json.dumps(result["sweep"]))
    print("questions with a stale line in the context, by source:", json.dumps(result["stale_in_context_by_source"]))
    print(f"wrote {args.out}", file=sys.stderr)
    return result


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from actors.ray_init import shutdown_ray

    try:
        execute(args, argv)
    finally:
        shutdown_ray()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
