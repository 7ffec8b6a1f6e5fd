"""The learned ranking stage: a logistic model over :mod:`projections.queries.rank_features` re-orders the best rows.

The model is a frozen set of numbers (feature names, standardisation,
coefficients) fitted offline by ``benchmarks/train_ranker.py`` on the dev
files with leave-conversations-out cross-validation and stored in
:mod:`projections.queries.ranker_model`. At query time it is a dot product
per candidate: no model file, no randomness, the same rows always give the
same order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from projections.folds.state import UserMemory
from projections.queries import rerank
from projections.queries.rank_features import FEATURES, features


@dataclass(frozen=True, slots=True)
class RankerModel:
    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float
    trained_on: str = ""

    def __post_init__(self) -> None:
        unknown = [f for f in self.features if f not in FEATURES]
        if unknown or len(set(self.features)) != len(self.features):
            raise ValueError(
                f"ranker model features {unknown or self.features} are not distinct names of "
                f"rank_features.FEATURES {FEATURES}; re-fit it with python -m benchmarks.train_ranker"
            )
        if not len(self.mean) == len(self.scale) == len(self.coef) == len(self.features):
            raise ValueError("ranker model: mean, scale and coef must each hold one number per feature")

    def logits(self, x: np.ndarray) -> np.ndarray:
        """The model's logit per row of ``x`` (every column of FEATURES; the model reads its own, by name)."""
        if self.features != FEATURES:
            x = x[:, [FEATURES.index(f) for f in self.features]]
        z = (x - np.asarray(self.mean)) / np.asarray(self.scale)
        return z @ np.asarray(self.coef) + self.intercept


def rerank_rows(memory: UserMemory, query: str, query_vector: np.ndarray | None, rows: list[list],
                model: RankerModel, depth: int, rrf_k: int, lexical_kind: str = "lexical",
                cross_lingual: bool = False) -> None:
    """Re-order the best ``depth`` rows by the model's probability; rows below keep their order beneath them.

    A re-ranked row's score becomes ``base + p`` (``base``: the score of the
    best row below the depth, ``p`` the probability), so scores still sort
    the list; the fused score stays in the breakdown (``rrf``). With
    ``cross_lingual``, a row in another language than the query's
    (:func:`~projections.queries.rerank.other_script`) is not judged by the
    model, fitted on questions and turns of one language, whose word features
    it cannot have: it gets the probability the model gives the query's own
    rows at its fused score (:func:`expected_given`), so it keeps its fused
    place among them. When every row is in the other language the order stays
    the fused one.
    """
    top = rows[:depth]
    if len(top) < 2:
        return
    other = np.array(rerank.other_script(memory, query, [row[2] for row in top]) if cross_lingual else [False])
    if other.all():
        return
    x = features(memory, query, query_vector, top, rerank.TABLES.get(memory), rrf_k, lexical_kind)
    p = 1.0 / (1.0 + np.exp(-model.logits(x)))
    if other.any():
        fused = np.array([row[0] for row in top])
        p[other] = expected_given(fused[~other], p[~other], fused[other])
    base = rows[depth][0] if len(rows) > depth else 0.0
    for row, prob in zip(top, p.tolist()):
        row[0] = base + prob
        row[3]["ranker_probability"] = round(prob, 6)
    top.sort(key=lambda s: (-s[0], s[1]))
    rows[:depth] = top


def expected_given(fused: np.ndarray, prob: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The probability of a row of fused score ``at``: the non-decreasing fit of ``prob`` on ``fused`` (pool
    adjacent violators), read by linear interpolation; beyond the fitted rows' scores, the nearest end's
    probability in proportion to the fused score (so rows there keep their fused order), at most 1."""
    order = np.argsort(fused, kind="stable")
    xs, ys = fused[order], prob[order]
    blocks: list[list[float]] = []  # [sum of probabilities, rows] of each pooled block, lowest fused first
    for y in ys.tolist():
        blocks.append([y, 1])
        while len(blocks) > 1 and blocks[-2][0] * blocks[-1][1] > blocks[-1][0] * blocks[-2][1]:
            total, n = blocks.pop()
            blocks[-1][0] += total
            blocks[-1][1] += n
    levels = np.repeat([total / n for total, n in blocks], [n for _, n in blocks])
    out = np.interp(at, xs, levels)
    high, low = at > xs[-1], at < xs[0]
    if xs[-1] > 0:
        out[high] = np.minimum(1.0, levels[-1] * at[high] / xs[-1])
    if xs[0] > 0:
        out[low] = levels[0] * at[low] / xs[0]
    return out
