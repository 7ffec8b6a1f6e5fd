"""Memory-graph queries of a shard: graph-expanded search (seed 001 ``search_memories``), merges, export."""

from __future__ import annotations

from dataclasses import asdict

from actors.commands import GraphExport, GraphMerges, SearchMemories, UnembeddedLabels
from actors.decide_archive import selected
from actors.decision import Answer
from actors.reads import touches
from projections.folds.graph import GraphState
from projections.queries import graph_export, graph_search


def search_memories(core, q: SearchMemories) -> Answer:
    """Vector seeds, BFS, five-term score, provenance. ``mode`` fast: seeds only; deep: expand to
    ``expand_depth``; auto: expand for causal/relational questions or when the best seed is a weak match.

    A read records nothing, so labels staged but not embedded yet (the labels' reactor records them after the
    ingest, :mod:`palimpsest.label_reactor`) are not embedded here: while the graph has such a node and the
    query brings no vector for its label, the answer is ``{"unembedded": [labels]}`` (no search, no touches);
    the driver encodes them and asks again with ``pending_labels``/``pending_vectors``, and the search then
    ranks as it will once they are recorded. A label staged between the two asks is not asked for again: its
    node is found by the query's words (the lexical seeds) until it is embedded."""
    memory = core.state.user(q.tenant, q.user_id)
    if memory is None:
        return Answer({"depth": 0, "hits": []})
    given = dict(zip(q.pending_labels, q.pending_vectors)) if q.pending_labels else {}
    missing = [labels[0] for labels in graph_search.unembedded(memory.graph).values()
               if not any(x in given for x in labels)]
    if missing and not q.pending_labels:
        return Answer({"unembedded": list(dict.fromkeys(missing))})
    depth, hits = graph_search.search(
        memory.graph, q.query, q.query_vector, now=q.now, mode=q.mode, expand_depth=q.expand_depth,
        relation_filter=q.relation_filter, memory_types=q.memory_types, time_range=q.time_range,
        max_results=q.max_results, label_vectors=given)
    return Answer({"depth": depth, "hits": [asdict(h) for h in hits]},
                  touches(q.tenant, q.user_id, q.query, hits, "search_hit"))


def graph_merges(core, q: GraphMerges) -> Answer:
    """Every node merge of the user's graph, oldest first: what was kept, what was merged into it, why, undone."""
    memory = core.state.user(q.tenant, q.user_id)
    if memory is None:
        return Answer([])
    g = memory.graph
    return Answer([
        {"merge_id": r.merge_id, "kept_node": r.kept_node_id, "kept_label": g.nodes[r.kept_node_id].label,
         "merged_nodes": list(r.applied), "merged_labels": [g.nodes[n].label for n in r.applied],
         "similarity": r.similarity, "reason": r.reason, "undone": r.undone, "undo_reason": r.undo_reason}
        for r in sorted(g.merges.values(), key=lambda r: (r.seq, r.merge_id))
    ])


def export(core, q: GraphExport) -> Answer:
    """The user's memory graph as a self-contained HTML page and as GraphML (or only the view's data)."""
    memory = core.state.user(q.tenant, q.user_id)
    state = memory.graph if memory else GraphState()
    if q.data_only:
        return Answer({"data": graph_export.view_data(state), "memories": len(state.memories),
                       "nodes": len(state.nodes), "edges": len(state.edges)})
    return Answer({"html": graph_export.to_html(state, q.title), "graphml": graph_export.to_graphml(state),
                   "memories": len(state.memories), "nodes": len(state.nodes), "edges": len(state.edges)})


def unembedded_labels(core, q: UnembeddedLabels) -> Answer:
    """``(tenant, user_id, labels)`` for each selected user whose graph has labels with no vector yet."""
    out = []
    for t, u, memory in selected(core.state, q.tenant, q.user_id):
        labels = memory.graph.unembedded_labels()
        if labels:
            out.append((t, u, labels))
    return Answer(out)
