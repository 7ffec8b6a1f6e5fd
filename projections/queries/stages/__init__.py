"""The fusion's stages, one module each, in the order a search runs them (:func:`retrieval.fuse`).

``LISTS``: the ranked lists fused by weighted reciprocal rank (dense, lexical
and derived keys, episodes, notes) and the retention term. ``STAGES``: what
runs after the fusion, each adding a term or re-ordering: conversations, the
cross-lingual term, clauses, speakers, times, sessions, neighbours, the memory graph,
pseudo-relevance feedback, list expansion, the learned ranker, the learning
loop's adjustments, supersession, coverage. Each module holds its stage's behaviour, the
:class:`~projections.queries.retrieval.FusionConfig` fields it reads, and its
ablation (``STAGE.off``: the fields that switch it off; :func:`without`).
"""

from __future__ import annotations

from dataclasses import replace

from projections.queries.stages import (
    clauses, conversations, coverage, cross_lingual, dense, episodes, feedback, graph, lexical, list_expansion,
    neighbours, notes, prf, ranker, retention, sessions, speakers, supersession, times,
)

LISTS = tuple(m.STAGE for m in (dense, lexical, episodes, notes, retention))
STAGES = tuple(m.STAGE for m in (conversations, cross_lingual, clauses, speakers, times, sessions, neighbours, graph,
                                 prf, list_expansion, ranker, feedback, supersession, coverage))
BY_NAME = {stage.name: stage for stage in (*LISTS, *STAGES)}


def without(config, *names: str):
    """``config`` with the named stages switched off (their ablation), e.g. ``without(DEFAULT_FUSION, "graph")``."""
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        raise ValueError(f"no fusion stage named {', '.join(map(repr, unknown))}; the stages are {', '.join(BY_NAME)}")
    changes: dict = {}
    for name in names:
        changes.update(BY_NAME[name].off)
    return replace(config, **changes)
