"""Leave-conversations-out figures: choose a configuration on some samples, report it on the others, rotating.

The samples (conversations, chats, haystacks) are split into ``k`` folds in
file order (sample ``i`` goes to fold ``i mod k``). For each fold, the
candidate configuration with the best mean selection score on the other
folds' questions is chosen, and its per-question rows on the held-out fold
are kept. The held-out rows of every fold together cover each question once
and are aggregated like a whole-file run, so the figure answers "what does
this system score on conversations nobody tuned it on". A fixed system (a
baseline, or a single configuration) has nothing to choose: its leave-out
figure equals its whole-file figure.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from benchmarks.metrics import Scored, aggregate

SELECTION_KEYS = ("recall@10", "budget_recall@1000")
MAX_FOLDS = 5


def make_folds(sample_ids: Sequence[str], k: int = MAX_FOLDS) -> list[list[str]]:
    """``min(k, n)`` folds of distinct sample ids, in file order, round robin; empty when fewer than two samples."""
    ordered = list(dict.fromkeys(sample_ids))
    k = min(k, len(ordered))
    if k < 2:
        return []
    return [ordered[i::k] for i in range(k)]


def _selection_score(rows: list[Scored], keys: Sequence[str]) -> float:
    if not rows:
        return float("-inf")
    return float(np.mean([np.mean([r.values[key] for key in keys]) for r in rows]))


def choose(rows: dict[str, list[Scored]], candidates: Sequence[str], train: set[str],
           keys: Sequence[str] = SELECTION_KEYS) -> tuple[str, dict[str, float]]:
    """The candidate with the best mean selection score on the ``train`` samples (ties: the first listed)."""
    scores = {name: _selection_score([r for r in rows[name] if r.sample_id in train], keys) for name in candidates}
    best = max(candidates, key=lambda name: (scores[name], -candidates.index(name)))
    return best, scores


def leave_out(rows: dict[str, list[Scored]], candidates: Sequence[str], metric_keys: list[str],
              k: int = MAX_FOLDS, keys: Sequence[str] = SELECTION_KEYS) -> dict | None:
    """Held-out figures of the configuration chosen per fold among ``candidates``, with each fold's choice.

    ``rows`` maps a system name to its per-question rows (every system holds
    the same questions); ``None`` when there are fewer than two samples or no
    candidate is in ``rows``.
    """
    candidates = [name for name in candidates if name in rows]
    if not candidates:
        return None
    folds = make_folds([r.sample_id for r in rows[candidates[0]]], k)
    if not folds:
        return None
    held: list[Scored] = []
    report = []
    for fold in folds:
        test = set(fold)
        train = {r.sample_id for r in rows[candidates[0]]} - test
        best, scores = choose(rows, candidates, train, keys)
        held.extend(r for r in rows[best] if r.sample_id in test)
        report.append({"held_out": list(fold), "chosen": best,
                       "train_scores": {name: round(v, 4) for name, v in scores.items()}})
    return {"candidates": list(candidates), "selection_keys": list(keys), "folds": report,
            "selected": aggregate(held, metric_keys)}


def per_sample(rows: list[Scored], key: str = "recall@10") -> dict[str, float]:
    """Mean ``key`` per sample, in file order: how much a figure varies from one conversation to the next."""
    out: dict[str, list[float]] = {}
    for r in rows:
        out.setdefault(r.sample_id, []).append(r.values[key])
    return {sample: float(np.mean(values)) for sample, values in out.items()}
