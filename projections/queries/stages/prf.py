"""Pseudo-relevance feedback over the stored turn vectors (:mod:`projections.queries.prf`): the query vector
moved toward the best ``prf_seeds`` rows ranks every turn; the best ``prf_candidates`` get an RRF term."""

from __future__ import annotations

from projections.queries import candidates, coverage, prf
from projections.queries.scoring import Scoring, Stage


def on(s: Scoring) -> bool:
    c = s.config
    return c.prf_weight > 0 and (not c.prf_lists_only or coverage.list_intent(s.query))


def apply(s: Scoring) -> None:
    c = s.config
    prf.prf_term(s.memory, s.query_vector, s.rows, c.prf_weight, c.rrf_k, c.prf_seeds, c.prf_candidates,
                 c.prf_beta, s.allowed)
    candidates.order(s.rows)


STAGE = Stage("prf", on, apply, off={"prf_weight": 0.0})
