"""For "when" questions, turns that state a resolved time get ``time_weight / (rrf_k + 1)``."""

from __future__ import annotations

from projections.queries import rerank
from projections.queries.scoring import Scoring, Stage


def apply(s: Scoring) -> None:
    rerank.timed(s.query, s.rows, rerank.TABLES.get(s.memory), s.config.time_weight, s.config.rrf_k)


STAGE = Stage("times", lambda s: s.config.time_weight > 0, apply, off={"time_weight": 0.0}, leaves_unsorted=True)
