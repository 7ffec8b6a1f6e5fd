"""The learned ranking stage: a logistic model over :mod:`projections.queries.rank_features` re-orders the best rows.

The model is a frozen set of numbers (feature names, standardisation,
coefficients, and optionally boosted trees whose sum joins the logit:
:mod:`projections.queries.ranker_trees`) fitted offline by
``benchmarks/train_ranker.py`` on the dev files with
leave-conversations-out cross-validation and stored in
:mod:`projections.queries.ranker_model`. At query time it is a dot product
(and a walk down each tree) per candidate: no model file, no randomness,
the same rows always give the same order.

A shipped model (one of :data:`SHIPPED`'s generated modules) is pickled by
its module's name: a query carries its fusion, rankers included, to the
shard, and e5's trees are thousands of numbers (about 400 KB pickled, a
millisecond each way per query) that every process already holds.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass

import numpy as np

from projections.folds.state import UserMemory
from projections.queries import rerank
from projections.queries.rank_features import FEATURES, features
from projections.queries.ranker_trees import Trees


@dataclass(frozen=True, slots=True)
class RankerModel:
    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float
    trained_on: str = ""
    trees: Trees | None = None  # added to the logit; their feature indices count in ``features``

    def __post_init__(self) -> None:
        unknown = [f for f in self.features if f not in FEATURES]
        if unknown or len(set(self.features)) != len(self.features):
            raise ValueError(
                f"ranker model features {unknown or self.features} are not distinct names of "
                f"rank_features.FEATURES {FEATURES}; re-fit it with python -m benchmarks.train_ranker"
            )
        if not len(self.mean) == len(self.scale) == len(self.coef) == len(self.features):
            raise ValueError("ranker model: mean, scale and coef must each hold one number per feature")
        if self.trees is not None and self.trees.columns() > len(self.features):
            raise ValueError(f"ranker model: its trees split on feature {self.trees.columns() - 1}, past its "
                             f"{len(self.features)} features; re-fit it with python -m benchmarks.train_ranker")

    def logits(self, x: np.ndarray) -> np.ndarray:
        """The model's logit per row of ``x`` (every column of FEATURES; the model reads its own, by name)."""
        if self.features != FEATURES:
            x = x[:, [FEATURES.index(f) for f in self.features]]
        z = (x - np.asarray(self.mean)) / np.asarray(self.scale)
        logit = z @ np.asarray(self.coef) + self.intercept
        return logit if self.trees is None else logit + self.trees.sum(x)

    def __reduce_ex__(self, protocol):
        name = _shipped_name(self)
        if name is not None:
            return shipped, (name,)
        return object.__reduce_ex__(self, protocol)  # any other model: its numbers


# The generated modules of the shipped models (benchmarks.train_ranker --write), each holding one ``MODEL``.
SHIPPED = ("ranker_model", "ranker_model_cjk", "ranker_model_e5", "ranker_model_e5_cjk")


def shipped(name: str) -> RankerModel:
    """The shipped model of module ``name`` (one of :data:`SHIPPED`)."""
    if name not in SHIPPED:
        raise ValueError(f"no shipped ranker model {name!r}; one of {', '.join(SHIPPED)}")
    return importlib.import_module(f"{__package__}.{name}").MODEL


def _shipped_name(model: RankerModel) -> str | None:
    """The module ``model`` is the shipped model of (that very object), if any: only a module already imported
    can hold it."""
    for name in SHIPPED:
        module = sys.modules.get(f"{__package__}.{name}")
        if module is not None and getattr(module, "MODEL", None) is model:
            return name
    return None


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
    it cannot have: the model orders the query's own rows, and such a row
    keeps its position in the fused order (:func:`keep_places`). When every
    row is in the other language the order stays the fused one.
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
        p = keep_places(p, other)
    base = rows[depth][0] if len(rows) > depth else 0.0
    for row, prob in zip(top, p.tolist()):
        row[0] = base + prob
        row[3]["ranker_probability"] = round(prob, 6)
    top.sort(key=lambda s: (-s[0], s[1]))
    rows[:depth] = top


def keep_places(prob: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Probabilities that order the rows (in fused order) as the model orders the rows not ``other`` and keep
    each ``other`` row at its fused position: an ``other`` row gets the mean of the probabilities of the rows
    placed just above and below it (at the top: half as much again as the row below, at most 1; at the bottom:
    half the row above's)."""
    judged = sorted(np.flatnonzero(~other).tolist(), key=lambda i: -prob[i])
    order, taken = [], iter(judged)
    for i in range(len(prob)):
        order.append(i if other[i] else next(taken))
    out = prob.copy()
    placed = [prob[i] if not other[i] else None for i in order]
    for pos, i in enumerate(order):
        if not other[i]:
            continue
        above = next((placed[j] for j in range(pos - 1, -1, -1) if placed[j] is not None), None)
        below = next((placed[j] for j in range(pos + 1, len(order)) if not other[order[j]]), None)
        if above is None:
            value = min(1.0, 1.5 * below) if below is not None else 0.5
        elif below is None:
            value = above / 2
        else:
            value = (above + below) / 2
        out[i] = placed[pos] = value
    return out
