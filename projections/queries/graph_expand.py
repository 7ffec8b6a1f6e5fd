"""Graph expansion of a ranked hit list: the retrieval's graph term (seed 001 §5.2 applied to dialogue turns).

The fusion's other lists (dense, BM25, episodes, notes) rank turns. The
graph memories read from the best ``seeds`` of those turns are the seed set;
a BFS over the graph (:func:`projections.queries.graph_search.expand`, by default
over linked edges only: ``related`` — sharing a topic or object, the
closest in time — ``close_in_time`` and ``causality``) reaches other
memories, and their source turns are the expansion. Multi-hop questions need
exactly these: "What activities does Melanie partake in?" has its answer
in several turns, and the turns of one answer are joined in the graph far
more often than two turns taken at random (on the LoCoMo dev file: 40 % of
evidence pairs of multi-hop questions are one linked hop apart, 5 % of random
pairs).

Pure: reads the graph state, returns message id → how it was reached.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from projections.folds.graph import GraphState
from projections.queries import graph_search


@dataclass(frozen=True, slots=True)
class Reached:
    """A turn the expansion reached: through which graph memory, from which seed turn, over which hops."""

    distance: int
    graph_memory: str
    seed_message: str
    via: tuple[str, ...]


def message_memories(state: GraphState) -> dict[str, tuple[str, ...]]:
    """message id → the active graph memories read from it (cached until the graph's structure changes)."""
    cached = state._views.get("by_message")
    if cached is None or cached[0] != state.structure:
        out: dict[str, list[str]] = {}
        for mid, m in sorted(state.memories.items(), key=lambda kv: kv[1].seq):
            if m.status == "active":
                for message_id in m.source_message_ids:
                    out.setdefault(message_id, []).append(mid)
        cached = state._views["by_message"] = (state.structure, {k: tuple(v) for k, v in out.items()})
    return cached[1]


def expand_hits(state: GraphState, seeds: Sequence[str], depth: int, *, shared: bool = False,
                config: graph_search.GraphSearchConfig = graph_search.DEFAULT_GRAPH_SEARCH) -> dict[str, Reached]:
    """Turns reached from the seed turns (message ids, best first) within ``depth`` hops, seed turns excluded.

    ``shared`` also hops through shared topic/object nodes (else linked edges only). A turn keeps the first
    way it was reached in BFS order (closest first, then the better seed).
    """
    if depth < 1 or not seeds:
        return {}
    by_message = message_memories(state)
    seed_memories = [mid for message_id in seeds for mid in by_message.get(message_id, ())]
    found = graph_search.expand(state, seed_memories, depth, shared=shared, config=config)
    origin = {mid: message_id for message_id in seeds for mid in by_message.get(message_id, ())}
    out: dict[str, Reached] = {}
    for mid, (distance, path, via) in found.items():  # BFS order: closest first, then the better seed
        if distance == 0:
            continue
        for message_id in state.memories[mid].source_message_ids:
            if message_id not in seeds and message_id not in out:
                out[message_id] = Reached(distance, mid, origin[path[0]], via)
    return out
