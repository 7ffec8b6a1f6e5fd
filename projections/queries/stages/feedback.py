"""The learning loop's adjustments (:mod:`projections.queries.learned`): penalties scale scores, and memories
and notes it invalidated leave default retrieval."""

from __future__ import annotations

from projections.queries.learned import adjusted, penalise
from projections.queries.scoring import Scoring, Stage


def apply(s: Scoring) -> None:
    penalise(s.memory, s.rows, s.now, hide=s.scope == "active", query=s.query)


STAGE = Stage("feedback", lambda s: adjusted(s.config), apply, off={"feedback": False})
