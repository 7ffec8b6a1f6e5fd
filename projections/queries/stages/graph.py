"""The memory graph's term: the graph memories read from the best ``graph_seeds`` rows seed an expansion over
linked edges (``graph_depth`` hops; ``graph_shared_nodes`` also through shared topic/object nodes;
``graph_mode`` fast never expands, auto when the question has causal or relational cues or the best dense
similarity is under the graph config's ``low_similarity``). The candidates it reaches, ranked among
themselves by their score so far, get ``graph_weight / (rrf_k + rank)``: the turns of a multi-hop answer are
linked in the graph."""

from __future__ import annotations

from projections.queries import candidates, graph_search
from projections.queries.graph_expand import expand_hits
from projections.queries.scoring import Scoring, Stage


def apply(s: Scoring) -> None:
    config, scored = s.config, s.rows
    top_similarity = s.dense[0][1] if s.dense else None
    depth = graph_search.expansion_depth(config.graph_mode, s.query, top_similarity, config.graph_config,
                                         config.graph_depth)
    reached = expand_hits(s.memory.graph, [row[2] for row in scored[: config.graph_seeds]], depth,
                          shared=config.graph_shared_nodes, config=config.graph_config)
    rows = [row for row in scored if row[2] in reached][: config.graph_candidates]
    for rank, row in enumerate(rows, start=1):
        r = reached[row[2]]
        row[0] += config.graph_weight / (config.rrf_k + rank)
        row[3].update(graph_rank=rank, graph_distance=r.distance, graph_memory=r.graph_memory,
                      graph_seed=r.seed_message, graph_via=list(r.via))
    candidates.order(scored)


STAGE = Stage("graph", lambda s: s.config.graph_weight > 0 and bool(s.memory.graph.memories), apply,
              off={"graph_weight": 0.0})
