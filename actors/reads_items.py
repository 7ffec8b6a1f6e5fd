"""The item reads (declared in :mod:`palimpsest.operations`): list, collections, search. Items are notes
(:mod:`projections.queries.items`); a search ranks their messages with the hybrid search of
:mod:`projections.queries.retrieval` and records its hits as a search does (``memory_touched``, ``search_hit``).
"""

from __future__ import annotations

from datetime import UTC, datetime

from actors.declared import reader
from actors.decision import Answer
from actors.reads import touches
from events.errors import InvalidInputError
from projections.queries.items import active_items, check_filter, item_view, matches, parse_slot
from projections.queries.learned import learned_fusion
from projections.queries.retrieval import FusionConfig, fuse


@reader("items")
def items(core, tenant: str, user_id: str, *, collection: str | None, key: str | None, filter: dict | None,
          limit: int, offset: int) -> Answer:
    """The active items (of ``collection``, or of every collection; the one of ``key``) whose values pass
    ``filter``, the latest put first, from ``offset``, at most ``limit``."""
    _check(filter, "items")
    memory = core.state.user(tenant, user_id)
    if memory is None:
        return Answer([])
    chosen = [n for n in active_items(memory.notes, collection) if key is None or parse_slot(n.slot)[1] == key]
    views = [v for v in (item_view(memory, n) for n in reversed(chosen)) if matches(v["value"], filter)]
    return Answer(views[offset:offset + limit])


@reader("item_collections")
def item_collections(core, tenant: str, user_id: str) -> Answer:
    """The user's collections that hold an active item, with how many, by name (``""``: outside any)."""
    memory = core.state.user(tenant, user_id)
    counts: dict[str, int] = {}
    for note in active_items(memory.notes) if memory is not None else ():
        name = parse_slot(note.slot)[0]
        counts[name] = counts.get(name, 0) + 1
    return Answer([{"collection": name, "items": n} for name, n in sorted(counts.items())])


@reader("search_items")
def search_items(core, tenant: str, user_id: str, *, query: str, collection: str | None, filter: dict | None,
                 limit: int, offset: int, now: datetime | None, query_vector, query_model: str,
                 fusion: FusionConfig) -> Answer:
    """The active indexed items (of ``collection``, or of every collection) ranked for ``query`` by the hybrid
    search over their messages (dense, BM25, notes, the learned adjustments), best first, those whose values
    pass ``filter``, from ``offset``, at most ``limit``; each with its ``score`` and ``rank``. Archived messages
    are searched too: an item lives until it is deleted, whatever its message's retention."""
    _check(filter, "search items")
    memory = core.state.user(tenant, user_id)
    if memory is None:
        return Answer([])
    now = now or datetime.now(UTC)
    live = {n.source_message_ids[0]: n for n in active_items(memory.notes, collection) if n.source_message_ids}
    if not live:
        return Answer([])
    fusion = learned_fusion(memory, fusion, now)
    everything = len(memory.messages.order)
    dense = [(m, s) for m, s in core.dense.search(tenant, user_id, memory, query_vector, everything, query_model,
                                                  fusion.cross_lingual) if m in live]
    hits = [h for h in fuse(memory, query, dense, everything, fusion, query_vector, now=now,
                            policy=core.state.policy, scope="all") if h.memory_id in live]
    found = []
    for hit in hits:
        view = item_view(memory, live[hit.memory_id])
        if matches(view["value"], filter):
            found.append((hit, view))
    found = found[offset:offset + limit]
    answer = [{**view, "score": hit.score, "rank": offset + i} for i, (hit, view) in enumerate(found, start=1)]
    return Answer(answer, touches(tenant, user_id, query, [h for h, _ in found], "search_hit"))


def _check(flt: dict | None, what: str) -> None:
    problems = check_filter(flt)
    if problems:
        raise InvalidInputError(problems, what=what)
