"""A hit's fused score split into the terms that made it (what the inspector draws as a stacked bar).

Pure: from a hit's ``breakdown`` (ranks and values recorded by
:func:`projections.queries.retrieval.fuse` and its stages) and the
:class:`FusionConfig` it was ranked with, each term's contribution is
recomputed with the fusion's own formulas; the terms add up to the fused
score (``breakdown["rrf"]``, a test holds them to it). The learned ranker
re-orders the best rows after fusion: its probability is reported beside
the terms, not as one of them.
"""

from __future__ import annotations

from projections.queries.retrieval import FusionConfig, list_weights

# Display order of the terms (the inspector draws them left to right in this order).
TERMS: tuple[str, ...] = ("dense", "bm25", "facts", "context", "subwords", "episode", "note", "cross_lingual", "graph",
                          "retention", "neighbour", "speaker", "time", "clause", "session", "conversation")


def score_terms(breakdown: dict, query: str, config: FusionConfig) -> dict[str, float]:
    """term name → its share of the fused score, for the terms present in ``breakdown`` (others left out)."""
    k = config.rrf_k
    w = list_weights(config, query)
    ranked = (("dense", "dense_rank", w["dense"]), ("bm25", "lexical_rank", w["lexical"]),
              ("facts", "facts_rank", w["facts"]), ("context", "context_rank", w.get("context", 0.0)),
              ("context", "context_prev_rank", w.get("context_prev", 0.0)), ("subwords", "subwords_rank", w["subwords"]),
              ("episode", "episode_rank", config.episode_weight), ("note", "note_rank", config.note_weight),
              ("graph", "graph_rank", config.graph_weight), ("clause", "clause_rank", config.clause_weight),
              ("session", "session_rank", config.session_weight))
    terms: dict[str, float] = {}
    for name, key, weight in ranked:
        if key in breakdown:
            terms[name] = weight / (k + breakdown[key])
    if "retention" in breakdown:
        terms["retention"] = config.retention_weight * min(breakdown["retention"], 2.0) / (k + 1)
    if "neighbour_term" in breakdown:
        terms["neighbour"] = breakdown["neighbour_term"]
    if "cross_lingual_term" in breakdown:  # the lexical lists' share a turn in another language is given
        terms["cross_lingual"] = breakdown["cross_lingual_term"]
    if "conversation_term" in breakdown:  # scaled by the conversation's length: recorded, not recomputed
        terms["conversation"] = breakdown["conversation_term"]
    if breakdown.get("speaker_named"):
        terms["speaker"] = config.speaker_weight / (k + 1)
    if breakdown.get("states_time"):
        terms["time"] = config.time_weight / (k + 1)
    return {name: round(terms[name], 8) for name in TERMS if name in terms}
