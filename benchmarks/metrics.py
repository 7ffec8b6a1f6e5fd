"""Evidence recall at k and under a token budget, aggregated overall, per category and for categories 1-4.

Recall of one question = |evidence ∩ retrieved turn ids| / |evidence|; a
metric is the mean over the scored questions (those with at least one
parsable evidence id). Values are fractions in [0, 1].
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from benchmarks.dataset import Question
from benchmarks.systems import Retrieval

CORE_CATEGORIES = ("1", "2", "3", "4")
ALL_CATEGORIES = ("1", "2", "3", "4", "5")


def metric_keys(ks: Iterable[int], budgets: Iterable[int]) -> list[str]:
    return [f"recall@{k}" for k in ks] + [f"budget_recall@{b}" for b in budgets] + ["context_tokens_mean"]


def recall(evidence: frozenset[str], retrieved: set[str] | frozenset[str]) -> float:
    return len(evidence & retrieved) / len(evidence)


@dataclass(frozen=True, slots=True)
class Scored:
    category: str
    values: dict[str, float]
    sample_id: str = ""  # the conversation the question belongs to: leave-out folds split by it


def score(q: Question, r: Retrieval, ks: Iterable[int], budgets: Iterable[int], token_budget: int) -> Scored:
    """Per-question values; ``context_tokens_mean`` holds the tokens of the ``token_budget`` context."""
    values = {f"recall@{k}": recall(q.evidence, r.top_turns(k)) for k in ks}
    for b in budgets:
        values[f"budget_recall@{b}"] = recall(q.evidence, r.contexts[b].turn_ids)
    values["context_tokens_mean"] = float(r.contexts[token_budget].tokens)
    return Scored(q.category, values, q.sample_id)


def _mean(rows: list[Scored], keys: list[str]) -> dict:
    if not rows:
        return {**{k: None for k in keys}, "questions": 0}
    return {**{k: float(np.mean([r.values[k] for r in rows])) for k in keys}, "questions": len(rows)}


def aggregate(rows: list[Scored], keys: list[str]) -> dict:
    """``{<keys>: overall, "per_category": {"1".."5", others: ...}, "cat1_4": ...}``; counts under "questions"."""
    out = _mean(rows, keys)
    categories = list(ALL_CATEGORIES) + sorted({r.category for r in rows} - set(ALL_CATEGORIES))
    out["per_category"] = {c: _mean([r for r in rows if r.category == c], keys) for c in categories}
    out["cat1_4"] = _mean([r for r in rows if r.category in CORE_CATEGORIES], keys)
    return out


def percentile(values: list[float], q: float) -> float | None:
    return float(np.percentile(values, q)) if values else None
