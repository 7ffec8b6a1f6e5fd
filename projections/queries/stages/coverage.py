"""Coverage-aware selection, last (:mod:`projections.queries.coverage`): the best ``coverage_depth`` rows
re-ordered by MMR over their non-query terms, so a list question gets one turn per item."""

from __future__ import annotations

from projections.queries import coverage, rerank
from projections.queries.scoring import Scoring, Stage


def on(s: Scoring) -> bool:
    c = s.config
    return c.coverage_weight > 0 and (not c.coverage_lists_only or coverage.list_intent(s.query))


def apply(s: Scoring) -> None:
    c = s.config
    coverage.select(s.memory, s.query, s.rows, rerank.TABLES.get(s.memory), c.coverage_weight, c.coverage_depth,
                    c.coverage_mode)


STAGE = Stage("coverage", on, apply, off={"coverage_weight": 0.0})
