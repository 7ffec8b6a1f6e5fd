"""Whole conversations ranked by BM25 as one document each (:mod:`session_docs`): their members get an RRF
term, scaled by ``min(1, conversation_fit / length)`` so a long conversation is not lifted wholesale."""

from __future__ import annotations

from projections.queries import session_docs
from projections.queries.scoring import Scoring, Stage


def apply(s: Scoring) -> None:
    c = s.config
    session_docs.conversation_term(s.memory, s.query, s.rows, c.conversation_weight, c.rrf_k,
                                   c.conversation_candidates, c.conversation_fit, c.bm25, s.allowed)


STAGE = Stage("conversations", lambda s: s.config.conversation_weight > 0, apply,
              off={"conversation_weight": 0.0}, leaves_unsorted=True)
