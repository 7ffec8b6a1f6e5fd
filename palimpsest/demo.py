"""`make demo`: a fresh store, the shipped sample dialogue, a few queries with
provenance, a move to the multilingual encoder (re-embedding as events) and
a question across languages, a token-budgeted context (notes first), episodes, the forgetting
curve, notes with their supersession chains, archival and restore, the
memory tiers, a replay whose digests match, and an audit query straight on
the DuckDB logs.
"""

from __future__ import annotations

import shutil
import time
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

from events.audit import AuditReader
from palimpsest import config as store_config
from palimpsest.demo_learning import run_learning
from palimpsest.formats import read_jsonl
from projections.adapters import encoder_kinds
from projections.queries import stages

EDITOR = "Which editor does Maya use now?"
QUERIES = [
    ("What database does Atlas use?", "a decision, and the later change of mind"),
    ("What does Maya drink in the morning?", "a preference that changed"),
    ("周末去哪里爬山？", "a Chinese question about a Chinese turn"),
    (EDITOR, "an English question about a Chinese turn: the default encoder reads English"),
    ("What must we never store?", "a constraint"),
]
# The demo asks as of two days after its last conversation: retention (the forgetting curve) is part of a hit's
# score, so asking at the current time would print other rankings as the sample dialogue ages.
ASKED = datetime(2024, 5, 8, 9, 0, tzinfo=UTC)
MULTILINGUAL = encoder_kinds.E5


def _rule(title: str) -> None:
    print(f"\n=== {title} " + "=" * max(0, 70 - len(title)))


def run_demo(store: Path) -> int:
    from palimpsest.memory import Memory

    if store.exists():
        shutil.rmtree(store)
    sample = resources.files("palimpsest") / "data" / "sample_dialogue.jsonl"
    with resources.as_file(sample) as path:
        messages = read_jsonl(Path(path))

    _rule("1. open a store: local Ray, DuckDB logs, LanceDB, the default encoder")
    started = time.perf_counter()
    mem = Memory.open(store)
    print(f"store {store} with {mem.config.num_shards} shard actors ready in {time.perf_counter() - started:.1f}s; "
          f"encoder {mem.config.embedder}")

    try:
        _rule("2. ingest the sample dialogue (6 conversations over 9 weeks, English and Chinese)")
        report = mem.add_messages(messages, progress=True)
        print(f"{report.created} messages stored, embedded once and recorded as events")
        again = mem.add_messages(messages)
        print(f"ingesting the same file again: {again.created} new, {again.duplicates} recognised by client id")

        _rule(f"3. hybrid search (dense + BM25, rank fusion) with provenance, asked on {ASKED.date()}")
        for query, why in QUERIES:
            ask(mem, query, why)

        _rule(f"3b. another encoder: re-embed with {MULTILINGUAL} (about 100 languages), recorded as events")
        previous = mem.config.embedder
        moved = mem.reembed(MULTILINGUAL)
        print(f"{moved['messages']} messages and {moved['labels']} graph labels encoded in {moved['seconds']:.1f}s and "
              f"recorded beside the {previous} vectors, then {_users(moved['switched'])} switched to them "
              f"(one embedder_switched event each); the rest of the demo runs on {mem.config.embedder}")
        ask(mem, EDITOR, "an English question about a Chinese turn, asked again")

        _rule("4. context for an agent's prompt, cut to 120 tokens (notes first)")
        ctx = mem.build_context("demo", "maya", "Tell me about the Atlas database and deployment", token_budget=120,
                                now=ASKED)
        print(ctx.text)
        print(f"-- {ctx.tokens}/{ctx.budget} tokens; sources: {', '.join(i.turn_id or '-' for i in ctx.items)}")

        _rule("5. episodes found in the dialogue (topic shifts, time gaps, conversation boundaries)")
        for ep in mem.episodes("demo", "maya"):
            turns = f"{ep['turn_ids'][0]}..{ep['turn_ids'][-1]}" if ep["turn_ids"] else "-"
            print(f"  {ep['start'][:10]} {turns:<22} {ep['reason']:<20} {ep['title']}")

        _rule(f"6. forgetting curve: retention on {ASKED.date()} (the context above counted as an access)")
        rows = sorted(mem.retention("demo", "maya", now=ASKED), key=lambda r: -r["retention"])
        print(f"{'R':>6} {'S(d)':>6} {'uses':>4}  {'type':<10} text")
        for r in rows[:4] + rows[-3:]:
            print(f"{r['retention']:6.3f} {r['stability']:6.1f} {r['access_count']:4d}  {r['memory_type']:<10} {r['text'][:55]}")
        touched = [r for r in rows if r["access_count"]]
        untouched = [r for r in rows if not r["access_count"]]
        if touched and untouched:
            print(f"touched memories: R {min(r['retention'] for r in touched):.3f}..{max(r['retention'] for r in touched):.3f}; "
                  f"untouched: R {min(r['retention'] for r in untouched):.3f}..{max(r['retention'] for r in untouched):.3f} "
                  f"({sum(r['archive'] for r in rows)} below the archival floor)")

        _rule("7. notes: what Maya stated, and how it changed (superseded versions are kept)")
        notes = mem.notes("demo", "maya")
        for n in notes:
            print(f"  [{n['category']:<10}] v{n['version']} {n['text']}  (since {n['valid_from'][:10]})")
        for n in (n for n in notes if n["supersedes"]):
            chain = mem.note_history(n["note_id"], tenant="demo")["chain"]
            print(f"\n  palimpsest note-history {n['note_id']}")
            for v in chain:
                until = v["valid_to"][:10] if v["valid_to"] else "now"
                print(f"    v{v['version']} {v['status']:<10} {v['valid_from'][:10]} → {until}  {v['text']}")
                for src in v["sources"]:
                    print(f"        source {src['turn_id']} ({src['occurred_at'][:10]}) {src['speaker']}: {src['text'][:60]}")
                if v["superseded_by"]:
                    print(f"        superseded by {v['superseded_by'][:12]}: {chain[v['version']]['reason'][:80]}")

        _rule("8. archival: sweep on 2024-06-01; faded memories leave default retrieval, nothing is deleted")
        june = datetime(2024, 6, 1, tzinfo=UTC)
        swept = mem.sweep(june, tenant="demo", user_id="maya")
        archived = [m for row in swept for m in row["memory_ids"]]
        print(f"archived {len(archived)} memories (retention below the floor on {june.date()}): "
              + "; ".join(t[:28] for row in swept for t in row["texts"][:4]) + " ...")
        query = "What stack are you thinking about?"
        default = mem.search("demo", "maya", query, k=3, now=june)
        found = mem.search("demo", "maya", query, k=1, now=june, scope="archive")
        print(f"Q: {query}\n  default search top hit: {default[0].text[:60]}")
        if found:
            print(f"  archive search top hit: {found[0].text[:60]}  ({found[0].breakdown.get('archived')})")
            mem.restore("demo", "maya", [found[0].memory_id], reason="the demo asked for it")
            back = [h.memory_id for h in mem.search("demo", "maya", query, k=3, now=june)]
            rank = f"at rank {back.index(found[0].memory_id) + 1}" if found[0].memory_id in back else "not in the top 3"
            print(f"  restored; default search finds it again ({rank}): {found[0].text[:60]}")

        _rule("9. tiers: short-term pages, mid-term sessions with heat, working memory, profile")
        tiers = mem.tiers("demo", "maya", now=june)
        print(f"short-term: {len(tiers['short_term'])} pages; mid-term sessions: {len(tiers['sessions'])}")
        for sess in tiers["sessions"][:3]:
            print(f"  heat {sess['heat']:.3f} · {sess['pages']} pages · {sess['visits']} visits · {', '.join(sess['keywords'][:4])}")
        print(f"working memory of {tiers['conversation_id']}: {len(tiers['working_memory'])} items (cap 7±2)")
        profile = mem.get_user_profile("demo", "maya")
        print(f"profile: {profile['distillations']} distillations, traits {profile['traits'] or '{}'}")

        _rule("10. memory graph: facts staged from the turns, consolidated by Ray tasks, graph-expanded search")
        report = mem.consolidate()
        print(f"consolidated {report['staged']} staged graph memories: {report['events']} events (status changes, "
              f"merges, links, conclusions); {report['superseded']} superseded by the notes")
        question = "What happened around the Atlas launch?"
        found = mem.search_memories("demo", "maya", query=question, mode="auto", max_results=3)
        print(f"search_memories (auto mode chose depth {found['depth']}):")
        for h in found["hits"]:
            via = f" via {' → '.join(h['via'])}" if h["via"] else ""
            print(f"  {h['score']:.3f} [{h['memory_type']}] {h['summary']} (turns {', '.join(h['turn_ids'])}{via})")
        # The graph term on its own: the store's fusion without the stages that re-order the top five after it
        # (neighbours, speakers, times, clauses, sessions, the cross-lingual term, the learned ranker...), against the
        # same without the graph.
        alone = stages.without(mem.settings.fusion, "conversations", "cross_lingual", "clauses", "speakers", "times",
                               "sessions", "neighbours", "prf", "list_expansion", "ranker", "coverage", "retention")
        hits = mem.search("demo", "maya", question, k=5, fusion=alone)
        plain = mem.search("demo", "maya", question, k=20, fusion=stages.without(alone, "graph"))
        before = {h.memory_id: h.rank for h in plain}
        lifted = [h for h in hits if "graph_rank" in h.breakdown and before.get(h.memory_id, len(plain) + 1) > h.rank]
        for h in lifted:
            b = h.breakdown
            was = f"rank {before[h.memory_id]}" if h.memory_id in before else f"below rank {len(plain)}"
            print(f"search lifted {h.turn_id} to rank {h.rank} through the graph ({was} without it): reached from "
                  f"{mem_turn(hits + plain, b['graph_seed'])} via {' → '.join(b['graph_via'])}")
        if not lifted:
            print(f"the graph lifted no turn into the top 5 of {question!r}")
        graph = mem.graph_export("demo", "maya")
        (store / "graph.html").write_text(graph["html"], encoding="utf-8")
        (store / "graph.graphml").write_text(graph["graphml"], encoding="utf-8")
        print(f"wrote {store}/graph.html and graph.graphml: {graph['memories']} memories, {graph['nodes']} nodes")

        _rule("10b. the learning loop: feedback, dispatcher, explain, revert (EN and ZH)")
        if not run_learning(mem):
            return 1

        _rule("11. replay: rebuild every projection from the log")
        for r in mem.replay():
            verdict = "match" if r.equal else "DIFFER"
            print(f"shard {r.shard}: {r.events} events, live {r.live['combined'][:16]} / "
                  f"rebuilt {r.rebuilt['combined'][:16]} -> {verdict}")
            if not r.equal:
                return 1
        stats = mem.stats()
    finally:
        mem.close()

    _rule("12. audit the log with DuckDB (read-only, across shards)")
    audit = AuditReader(store_config.log_files(store))
    for row in audit.sql("SELECT kind, count(*) AS n FROM events GROUP BY kind ORDER BY kind").to_pylist():
        print(f"  {row['kind']:<18} {row['n']}")
    audit.close()
    print(f"\n{stats['messages']} messages, {stats['touches']} touches, {stats['events']} events in {store}/")
    print(f"try: palimpsest --store {store} search --tenant demo --user maya 'green tea'")
    return 0


def _users(n: int) -> str:
    return f"{n} user" if n == 1 else f"{n} users"


def ask(mem, query: str, why: str) -> None:
    """Maya's top three for ``query``, with each hit's provenance and score terms."""
    print(f"\nQ: {query}   ({why})")
    for hit in mem.search("demo", "maya", query, k=3, now=ASKED):
        parts = " ".join(f"{k}={v}" for k, v in hit.breakdown.items())
        print(f"  {hit.rank}. [{hit.occurred_at.date()}] {hit.speaker}: {hit.text}")
        print(f"     turn {hit.turn_id} · message event {hit.memory_id[:12]} · {parts}")


def mem_turn(hits, memory_id: str) -> str:
    """The turn id of ``memory_id`` among ``hits`` (its memory id when it is not one of them)."""
    return next((h.turn_id for h in hits if h.memory_id == memory_id), memory_id)
