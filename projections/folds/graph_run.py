"""The graph's fold of a whole run of one user's events: the state :func:`graph.evolve` leaves, with less work.

Two kinds make most of a replay's graph events: ``graph_edge_linked`` (each
adds one edge) and ``memory_touched`` (each rebuilds every touched memory, a
frozen :class:`~projections.folds.graph.GraphMemory` of 23 fields, with one
more access). :func:`fold_run` dispatches on the event's class through a dict
instead of a chain of ``isinstance``, builds a linked edge slot by slot, and
holds the touches of consecutive events (of the memories the graph holds then) as (count, latest time) per memory,
applied once before the next event that may read or replace a memory (every
kind but these two) and at the end of the run. The access count is the number
of touch events naming the memory and the last access the latest of their
times, as ``evolve`` leaves them event by event (``max`` of times is exact).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from events.envelope import Envelope
from events.graph_events import GraphEdgeLinked
from events.model import MemoryTouched
from events.touch_block import TouchBlock
from projections.folds.graph import _STRUCTURAL, GraphEdge, GraphState, advance, apply
from projections.folds.touch_pairs import add_bursts, tally
from projections.folds.touches import count_burst

_EDGE_SETTERS = tuple(getattr(GraphEdge, name).__set__ for name in GraphEdge.__slots__)
assert GraphEdge.__slots__ == ("edge_id", "source_id", "target_id", "source_kind", "target_kind", "edge_type",
                               "relation", "importance", "occurred_at", "memory_id", "origin", "discovered_by",
                               "seq"), "a GraphEdge field was added: _linked_edge must set it too"


def _linked_edge(event_id: str, e: GraphEdgeLinked, seq: int) -> GraphEdge:
    """``GraphEdge(...)`` of a linked edge, as :func:`graph.apply` builds it, without the frozen ``__init__``."""
    values = (event_id, e.source_id, e.target_id, e.source_kind, e.target_kind, e.relation_type, e.relation,
              e.importance, e.occurred_at, e.source_id if e.source_kind == "memory" else None, "linked",
              e.discovered_by, seq)
    edge = object.__new__(GraphEdge)
    for set_slot, value in zip(_EDGE_SETTERS, values):
        set_slot(edge, value)
    return edge


def _apply_touches(state: GraphState, touched: dict[str, list]) -> None:
    memories = state.memories
    for mid, (count, last) in touched.items():
        m = memories.get(mid)
        if m is not None:
            memories[mid] = replace(m, access_count=m.access_count + count,
                                    last_accessed=last if m.last_accessed is None else max(m.last_accessed, last))
    touched.clear()


def fold_run(state: GraphState, envelopes: Iterable[Envelope]) -> GraphState:
    """The state :func:`graph.evolve` leaves after each envelope in turn (see the module docstring)."""
    edges, memories = state.edges, state.memories
    touched: dict[str, list] = {}  # memory id → [touch events naming it, latest of their times], not yet applied
    top = state.last_seq
    structural = 0
    for env in envelopes:
        event, seq = env.event, env.seq
        if seq > top:
            top = seq
        if type(env) is TouchBlock:
            add_bursts(touched, env, tally(env, member=memories))
            continue
        cls = type(event)
        if cls is GraphEdgeLinked:
            structural += 1
            if env.event_id not in edges:
                edges[env.event_id] = _linked_edge(env.event_id, event, seq)
        elif cls is MemoryTouched:
            # Most touched ids are messages, not graph memories: the filter (in C) keeps those the graph holds.
            count_burst(touched, dict.fromkeys(filter(memories.__contains__, event.memory_ids)), env.occurred_at)
        else:
            if touched:
                _apply_touches(state, touched)
            state.structure += structural
            structural = 0
            state.last_seq = top
            apply(state, env.event_id, event, seq, env.occurred_at)
    if touched:
        _apply_touches(state, touched)
    state.structure += structural
    advance(state, top)
    return state


assert GraphEdgeLinked in _STRUCTURAL and MemoryTouched not in _STRUCTURAL
