"""A top row's previous and next turn get ``neighbour_weight`` of its score (the best ``neighbour_top`` rows)."""

from __future__ import annotations

from projections.queries import candidates, rerank
from projections.queries.scoring import Scoring, Stage


def apply(s: Scoring) -> None:
    c = s.config
    rerank.neighbours(s.memory, s.rows, rerank.TABLES.get(s.memory), c.neighbour_weight, c.neighbour_top, s.allowed)
    candidates.order(s.rows)


STAGE = Stage("neighbours", lambda s: s.config.neighbour_weight > 0, apply, off={"neighbour_weight": 0.0})
