"""Retrieval queries of a shard: search, context, episodes, retention, counterfactual re-projection.

Each is ``read(core, query) -> Answer``: it reads the folded projections and
the LanceDB table, never the raw log (but for the counterfactual, which
re-folds it), and returns the touch events the shard group-commits after the
answer has gone (:meth:`actors.core.ShardCore.flush_touches`).
"""

from __future__ import annotations

import uuid
from dataclasses import asdict, replace
from datetime import datetime

from actors.commands import BuildContext, Counterfactual, Episodes, Retention, Search
from actors.decision import Answer, new_event_id
from events.log import ScanFilter
from events.envelope import PendingEvent
from events.model import MemoryTouched
from projections.folds.retention import retention_table
from projections.queries import counterfactual
from projections.queries.context import NoteEntry, assemble
from projections.queries.episode_search import search_episodes
from projections.queries.learned import adjusted, hidden, learned_fusion
from projections.queries.retrieval import FusionConfig, Hit, fuse
from projections.queries.score_terms import score_terms
from projections.queries.summaries import summarize
from projections.rules.note_rules import SAFETY_SLOTS


def touches(tenant: str, user_id: str, query: str, hits, reason: str) -> list[PendingEvent]:
    """One ``memory_touched`` event for the hits of one query (none when nothing was hit).

    ``hits`` are ranked results with ``memory_id`` and ``score`` (retrieval
    hits, graph hits, ...), best first; a hit without a ``rank`` has its position.
    """
    if not hits:
        return []
    query_id = uuid.uuid4().hex[:16]
    touched = MemoryTouched(
        reason=reason, query_id=query_id, query=query, memory_ids=tuple(h.memory_id for h in hits),
        ranks=tuple(getattr(h, "rank", i) for i, h in enumerate(hits, start=1)), scores=tuple(h.score for h in hits),
    )
    return [PendingEvent(tenant, user_id, new_event_id(), touched, correlation_id=query_id)]


def fused_hits(core, q: Search | BuildContext, k: int, scope: str = "active") -> list[Hit]:
    memory = core.state.user(q.tenant, q.user_id)
    if memory is None:
        return []
    fusion = learned_fusion(memory, q.fusion, q.now)
    wanted = max(k, fusion.candidates)
    if scope != "active":  # archived rows are a minority of the dense neighbours: look further
        wanted += len(memory.archive.archived)
    elif adjusted(fusion):  # so are the invalidated ones
        wanted += len(memory.adjustments.by_target)
    dense = core.dense.search(q.tenant, q.user_id, memory, q.query_vector, wanted, getattr(q, "query_model", ""),
                              fusion.cross_lingual)
    hits = fuse(memory, q.query, dense, k, fusion, q.query_vector, now=q.now, policy=core.state.policy, scope=scope)
    if isinstance(q, Search):  # each hit's terms, by the very fusion that ranked it
        hits = [replace(h, terms=score_terms(h.breakdown, q.query, fusion)) for h in hits]
    return hits


def search(core, q: Search) -> Answer:
    """Fused top-``k``; ``now`` is the query time for the retention term, ``scope`` active/archive/all."""
    hits = fused_hits(core, q, q.k, q.scope)
    recorded = touches(q.tenant, q.user_id, q.query, current(hits), q.touch_reason) if q.touch_reason else []
    return Answer(hits, recorded)


def context(core, q: BuildContext) -> Answer:
    """Prompt-ready memory text within ``token_budget`` tokens: notes first, then turns, provenance per line."""
    hits = fused_hits(core, q, q.fusion.candidates)
    memory = core.state.user(q.tenant, q.user_id)
    notes = note_entries(memory, hits, q.fusion, q.now, q.query) if memory is not None and q.fusion.note_tokens else []
    ctx = assemble(q.query, hits, q.token_budget, core.count_tokens, notes, q.fusion.note_tokens,
                   q.fusion.note_share, q.fusion.note_coverage)
    used = {i.memory_id for i in ctx.items}
    return Answer(ctx, touches(q.tenant, q.user_id, q.query, [h for h in current(hits) if h.memory_id in used],
                               "context"))


def current(hits: list[Hit]) -> list[Hit]:
    """The hits a later statement has not superseded: reading a superseded memory does not reinforce it."""
    return [h for h in hits if "superseded" not in h.breakdown]


def note_entries(memory, hits: list[Hit], fusion: FusionConfig, now: datetime | None = None,
                 query: str | None = None) -> list[NoteEntry]:
    """Active notes for a context: the notes stated by the best hits (in hit order), then the constraints and the
    core notes (a constraint is offered whatever the question).

    ``now``: the notes valid then (time travel), else those active now. With the learning loop on
    (``fusion.feedback``), a note the dispatcher invalidated stays out and a penalised note's score is scaled
    by its factor for ``query``.

    A note enters because the turn it was read from is among the top
    ``note_depth`` hits for the query (notes matching the query lift their
    turns there through the note term of the fusion), so the notes section
    is the compact, current form of the most relevant turns; each entry
    keeps the position of the best hit it was read from, which orders the
    notes of a context and decides the room they may take
    (:func:`projections.queries.context.assemble`).
    """
    active = memory.notes.active(now)
    if adjusted(fusion) and memory.adjustments.by_target:
        active = [n for n in active if not hidden(memory, n.note_id, now)]
    best = hits[: fusion.note_depth]
    wanted = {hit.memory_id for hit in best}
    by_source: dict[str, list] = {}  # the best hits' notes (in log order)
    for note in active:
        for source in note.source_message_ids:
            if source in wanted:
                by_source.setdefault(source, []).append(note)
    chosen: dict[str, float] = {}
    ranks: dict[str, int] = {}
    for position, hit in enumerate(best, start=1):
        for note in by_source.get(hit.memory_id, ()):
            factor = memory.adjustments.factor(note.note_id, now, query) if adjusted(fusion) else 1.0
            chosen.setdefault(note.note_id, hit.score * factor)
            ranks.setdefault(note.note_id, position)
    offered = set()
    for note in active:
        if (note.lifecycle == "core" or note.category == "constraint") and note.note_id not in chosen:
            chosen[note.note_id] = 0.0
            offered.add(note.note_id)
    entries = []
    by_id = memory.messages.by_id
    for note_id, score in chosen.items():
        note = memory.notes.notes[note_id]
        sources = tuple(m for m in note.source_message_ids if m in by_id)
        entries.append(NoteEntry(
            note_id, note.category, note.text, note.version, note.valid_from, sources,
            tuple(t for t in (by_id[m].turn_id for m in sources) if t),
            by_id[sources[0]].conversation_id if sources else "", score, note_id in offered,
            note.category == "constraint" and (note.slot in SAFETY_SLOTS or note.polarity == "negative"),
            ranks.get(note_id, 0),
        ))
    return entries


def retention(core, q: Retention) -> Answer:
    """Every memory of one user with its retention at ``now`` and why (log order)."""
    memory = core.state.user(q.tenant, q.user_id)
    if memory is None:
        return Answer([])
    by_id = memory.messages.by_id
    archived = memory.archive.archived
    return Answer([
        {**asdict(row), "text": by_id[row.memory_id].text, "turn_id": by_id[row.memory_id].turn_id,
         "archived": archived[row.memory_id].reason if row.memory_id in archived else None}
        for row in retention_table(memory.retention, q.now, core.state.policy, memory.notes.constraint_sources(q.now))
    ])


def episodes(core, q: Episodes) -> Answer:
    """One user's episodes in order, each with its turns, boundary reason and summary.

    With a ``query`` (and its vector): the ``k`` best-matching episodes,
    best first, each with its rank, score and score breakdown.
    """
    memory = core.state.user(q.tenant, q.user_id)
    if memory is None:
        return Answer([])
    if q.query is None:
        return Answer([episode_view(memory, episode) for episode in memory.episodes.episodes()])
    return Answer([
        {**episode_view(memory, hit.episode), "rank": hit.rank, "score": hit.score, "breakdown": hit.breakdown}
        for hit in search_episodes(memory, q.query, q.query_vector, q.k, q.fusion)
    ])


def episode_view(memory, episode) -> dict:
    summary = summarize(episode, memory.messages.by_id, memory.lexical)
    titled = memory.titles.for_episode(episode.episode_id, episode.member_ids)
    start, end = episode.span
    return {
        "episode_id": episode.episode_id, "reason": episode.reason, "open": episode.is_open,
        "start": start.isoformat(), "end": end.isoformat(), "turn_ids": list(episode.turn_ids),
        "member_ids": list(episode.member_ids), "title": titled.title if titled else summary.title,
        "keywords": list(summary.keywords),
        "summary": titled.summary or summary.text if titled else summary.text,
        "titler": titled.titler if titled else "extractive",
    }


def counterfactual_report(core, q: Counterfactual) -> Answer:
    """Re-project retention under ``policy`` from the log (read only) and compare with the live policy.

    Each of ``queries`` is ranked under both policies (retention term and
    archived set of each); the rank changes go under the user's ``queries`` key.
    """
    envelopes = list(core.log.scan(ScanFilter(tenant=q.tenant)))
    live_policy = core.state.policy
    report = counterfactual.compare(envelopes, live_policy, q.policy, q.now)
    alt = counterfactual.fold_per_user(envelopes, q.policy) if q.queries else {}
    for user in report:
        stream = (user["tenant"], user["user_id"])
        memory = core.state.users[stream]
        by_id = memory.messages.by_id
        for key in ("archived_only_under_other", "kept_only_under_other"):
            user[key] = [{"memory_id": m, "turn_id": by_id[m].turn_id, "text": by_id[m].text} for m in user[key]]
        user["queries"] = []
        for tenant, user_id, query, vector in q.queries:
            if (tenant, user_id) != stream:
                continue
            dense = core.dense.search(tenant, user_id, memory, vector, max(q.k, q.fusion.candidates),
                                      calibrated=q.fusion.cross_lingual)
            sides = []
            for pol, state in ((live_policy, memory.retention), (q.policy, alt[stream])):
                view = counterfactual.as_policy_would_archive(memory, state, pol, q.now)
                sides.append(fuse(view, query, dense, q.k, q.fusion, vector, now=q.now, policy=pol))
            user["queries"].append({"query": query, "ranks": counterfactual.rank_changes(*sides)})
    return Answer(report)
