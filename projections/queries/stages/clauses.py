"""Each clause of a compound question ranks the turns by BM25 on its own (:func:`rerank.clause_term`)."""

from __future__ import annotations

from projections.queries import rerank
from projections.queries.scoring import Scoring, Stage


def apply(s: Scoring) -> None:
    c = s.config
    rerank.clause_term(s.memory, s.query, s.rows, c.clause_weight, c.rrf_k, c.candidates, c.bm25, s.allowed)


STAGE = Stage("clauses", lambda s: s.config.clause_weight > 0, apply, off={"clause_weight": 0.0},
              leaves_unsorted=True)
