"""What the fusion's stages share: one search's state (:class:`Scoring`) and the two shapes a stage takes.

A search runs the stages of :mod:`projections.queries.stages` in order over
one :class:`Scoring`:

- **lists** (:class:`ListStage`): each ranks candidates its own way (dense
  neighbours, BM25 over a turn's text or a derived key, episodes, notes) and
  puts each candidate's ``(rank, value[, extra])`` in ``parts``; a
  candidate's fused score is the sum over the lists, in the stages' order, of
  ``weight / (rrf_k + rank)`` (weighted reciprocal rank fusion), plus the
  retention term;
- **stages after the fusion** (:class:`Stage`): each adds its term to the
  scored rows ``[score, -seq, memory id, breakdown]`` (or re-orders them).

Every stage names the :class:`~projections.queries.retrieval.FusionConfig`
fields that switch it off (``off``: its ablation). Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from projections.folds.policy import RetentionPolicy
from projections.folds.state import UserMemory
from projections.queries import candidates


@dataclass
class Scoring:
    """One search's state as the stages see it and change it."""

    memory: UserMemory
    query: str  # after query focus, when on
    config: Any  # a FusionConfig
    query_vector: np.ndarray | None
    dense: list[tuple[str, float]]  # the dense neighbours (memory id, similarity), best first
    now: datetime | None
    policy: RetentionPolicy | None
    scope: str
    primary: str = "lexical"  # the list that carries the lexical weight (retrieval.lexical_key)
    weights: dict[str, float] = field(default_factory=dict)  # each ranked list's weight for this query
    learn: bool = False  # the learning loop's adjustments apply (hidden memories leave the lists)
    parts: dict[str, dict] = field(default_factory=dict)  # memory id -> list kind -> (rank, value[, extra])
    terms: list[Term] = field(default_factory=list)  # the lists' RRF terms, in summation order
    recall: dict[str, float] = field(default_factory=dict)  # memory id -> retention at ``now`` (the R term)
    allowed: Callable[[str], bool] = lambda memory_id: True  # in the search's scope (and time)
    rows: list[list] = field(default_factory=list)  # [score, -seq, memory id, breakdown], best first once sorted
    unsorted: bool = False  # a stage added terms without sorting the rows again

    def add(self, kind: str, ranked, extra: Callable | None = None) -> None:
        """Put list ``kind``'s ranking (memory id, value) in ``parts``: ``(rank, value)``, or with ``extra(id,
        value)`` ``(rank, value, extra)``; a candidate keeps the first entry a list gives it."""
        parts = self.parts
        for rank, (memory_id, value) in enumerate(ranked, start=1):
            entry = (rank, value) if extra is None else (rank, value, extra(memory_id, value))
            parts.setdefault(memory_id, {}).setdefault(kind, entry)


@dataclass(frozen=True, slots=True)
class Term:
    """One ranked list's term: ``weight / (rrf_k + rank)``, and the breakdown keys its rank and value go under."""

    kind: str
    weight: float
    rank_key: str
    value_key: str
    extra_key: str | None = None


@dataclass(frozen=True, slots=True)
class ListStage:
    """A ranked list: ``gather`` fills ``parts`` and ``terms`` (before the scope filter; with ``after_scope``,
    after it, from the filtered candidates)."""

    name: str
    gather: Callable[[Scoring], None]
    off: Mapping[str, Any]
    after_scope: bool = False


@dataclass(frozen=True, slots=True)
class Stage:
    """A stage after the fusion: ``apply`` runs when ``on``; ``leaves_unsorted``: it adds terms and leaves the
    sorting to the runner (before the next stage that reads the order)."""

    name: str
    on: Callable[[Scoring], bool]
    apply: Callable[[Scoring], None]
    off: Mapping[str, Any]
    leaves_unsorted: bool = False


def fuse_lists(s: Scoring) -> None:
    """The rows from ``parts``: each candidate's weighted RRF sum over the lists' terms, in order, plus the
    retention term; sorted best first."""
    rrf_k = s.config.rrf_k
    retention_weight = s.config.retention_weight
    terms = [(t.kind, t.weight, t.rank_key, t.value_key, t.extra_key) for t in s.terms]
    archived = s.memory.archive.archived if s.scope != "active" else {}
    by_id = s.memory.messages.by_id
    recall = s.recall
    rows = []
    for memory_id, p in s.parts.items():
        score = 0.0
        breakdown: dict = {}
        # Figures go in unrounded (most rows never leave the search); retrieval.ROUNDED rounds a hit's.
        for kind, weight, rank_key, value_key, extra_key in terms:
            entry = p.get(kind)
            if entry is not None:
                score += weight / (rrf_k + entry[0])
                breakdown[rank_key], breakdown[value_key] = entry[0], entry[1]
                if extra_key is not None:
                    breakdown[extra_key] = entry[2]
        if (r := recall.get(memory_id)) is not None:
            score += retention_weight * (2.0 if 2.0 < r else r) / (rrf_k + 1)  # min(r, 2.0)
            breakdown["retention"] = r
        if memory_id in archived:
            breakdown["archived"] = archived[memory_id].reason
        rows.append([score, -by_id[memory_id].seq, memory_id, breakdown])
    candidates.order(rows)
    s.rows = rows


def run(s: Scoring, stages) -> None:
    """The stages after the fusion, in order; rows a stage left unsorted are sorted before the next stage that
    reads their order, and at the end."""
    for stage in stages:
        if not stage.on(s):
            continue
        if s.unsorted and not stage.leaves_unsorted:
            candidates.order(s.rows)
            s.unsorted = False
        stage.apply(s)
        if stage.leaves_unsorted:
            s.unsorted = True
    if s.unsorted:
        candidates.order(s.rows)
        s.unsorted = False
