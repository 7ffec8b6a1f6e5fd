"""Members of the best-scoring conversations (sessions, by their best row so far) get an RRF term."""

from __future__ import annotations

from projections.queries import rerank
from projections.queries.scoring import Scoring, Stage


def apply(s: Scoring) -> None:
    c = s.config
    rerank.sessions(s.memory, s.rows, c.session_weight, c.rrf_k, c.session_candidates)


STAGE = Stage("sessions", lambda s: s.config.session_weight > 0, apply, off={"session_weight": 0.0},
              leaves_unsorted=True)
