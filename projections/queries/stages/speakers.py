"""Turns of the speakers a question names (when it names some, not all) get ``speaker_weight / (rrf_k + 1)``."""

from __future__ import annotations

from projections.queries import rerank
from projections.queries.scoring import Scoring, Stage


def apply(s: Scoring) -> None:
    rerank.speaker(s.memory, s.query, s.rows, rerank.TABLES.get(s.memory), s.config.speaker_weight, s.config.rrf_k)


STAGE = Stage("speakers", lambda s: s.config.speaker_weight > 0, apply, off={"speaker_weight": 0.0},
              leaves_unsorted=True)
