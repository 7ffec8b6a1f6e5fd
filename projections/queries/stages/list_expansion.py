"""A second pass for questions that ask for several items (:mod:`projections.queries.list_expand`): terms the
best rows share beyond the query's find the other items' turns."""

from __future__ import annotations

from dataclasses import replace

from projections.queries import list_expand
from projections.queries.scoring import Scoring, Stage


def apply(s: Scoring) -> None:
    c = s.config
    list_expand.term(s.memory, s.query, s.rows, c.list_expansion, c.rrf_k, c.bm25, s.allowed)


STAGE = Stage("list_expansion", lambda s: True, apply, off={"list_expansion": replace(list_expand.DEFAULT, weight=0.0)})
