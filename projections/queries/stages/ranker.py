"""The learned ranking stage (:mod:`projections.queries.ranker`): the best ``ranker_depth`` rows re-ordered by
a logistic model's probability (``ranker`` for English queries; ``cjk_ranker``, or ``ranker`` with
``ranker_cjk``, for Chinese ones, at most ``cjk_ranker_depth`` rows when set). Every row keeps its fused score
in the breakdown (``rrf``)."""

from __future__ import annotations

from projections.queries.ranker import rerank_rows
from projections.queries.scoring import Scoring, Stage
from projections.rules.text import has_cjk


def model_for(config, query: str):
    """The ranker model ``config`` gives ``query`` (None: no learned stage)."""
    if has_cjk(query):
        return config.cjk_ranker or (config.ranker if config.ranker_cjk else None)
    return config.ranker


def depth_for(config, query: str) -> int:
    """How many of the best rows the ranker re-orders for ``query``: ``ranker_depth``, and for a Chinese query at
    most ``cjk_ranker_depth`` when set (each language's ranker re-orders as deep as it was fitted for; a smaller
    ``ranker_depth``, e.g. the learning loop's, still bounds both)."""
    if has_cjk(query) and config.cjk_ranker_depth is not None:
        return min(config.ranker_depth, config.cjk_ranker_depth)
    return config.ranker_depth


def apply(s: Scoring) -> None:
    for row in s.rows:
        row[3]["rrf"] = row[0]
    model = model_for(s.config, s.query)
    if model is not None:
        rerank_rows(s.memory, s.query, s.query_vector, s.rows, model, depth_for(s.config, s.query), s.config.rrf_k,
                    s.primary, s.config.cross_lingual)


STAGE = Stage("ranker", lambda s: True, apply, off={"ranker": None, "cjk_ranker": None, "ranker_cjk": False})
