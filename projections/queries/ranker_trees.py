"""Regression trees a ranking model may add to its logit (gradient-boosted, fitted by ``benchmarks.train_ranker``).

A logistic model scores a feature only by its own slope; trees also read
how features combine (a high cosine counts for more when the lexical lists
missed the turn, a neighbour's match for more in a long conversation). The
trees are stored flat: node ``i`` splits on column ``feature[i]`` of the
model's features (``x <= threshold[i]`` goes to ``left[i]``, else to
``right[i]``), or is a leaf (``feature[i] == -1``) worth ``value[i]``;
``roots`` are the first node of each tree. Their sum is added to the
model's logit. Pure numbers: no model file, no randomness.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LEAF = -1


@dataclass(frozen=True)
class Trees:
    feature: tuple[int, ...]
    threshold: tuple[float, ...]
    left: tuple[int, ...]
    right: tuple[int, ...]
    value: tuple[float, ...]
    roots: tuple[int, ...]

    def __post_init__(self) -> None:
        n = len(self.feature)
        if not n or not len(self.threshold) == len(self.left) == len(self.right) == len(self.value) == n:
            raise ValueError("ranker trees: feature, threshold, left, right and value must each hold one entry "
                             "per node (and there must be nodes); re-fit with python -m benchmarks.train_ranker")
        feature, left, right = (np.asarray(a, dtype=np.int64) for a in (self.feature, self.left, self.right))
        roots = np.asarray(self.roots, dtype=np.int64)
        inner = feature != LEAF
        bad = (not len(roots) or roots.min() < 0 or roots.max() >= n or (feature < LEAF).any()
               or (inner & ((left < 0) | (left >= n) | (right < 0) | (right >= n))).any())
        if bad:
            raise ValueError("ranker trees: a root or child index points outside the nodes, or a feature index is "
                             "negative; re-fit with python -m benchmarks.train_ranker")
        # a leaf points to itself, so every walk can take the same number of steps
        index = np.arange(n)
        left, right = np.where(inner, left, index), np.where(inner, right, index)
        # kept beside the fields (not one of them: asdict and the store's settings see only the numbers)
        threshold, value = np.asarray(self.threshold, dtype=np.float64), np.asarray(self.value, dtype=np.float64)
        object.__setattr__(self, "_arrays", (np.where(inner, feature, 0), threshold, left, right, value, roots,
                                             _depth(inner, left, right, roots)))

    def columns(self) -> int:
        """How many feature columns the trees read (one more than the largest feature index)."""
        return int(max(self.feature)) + 1

    def sum(self, x: np.ndarray) -> np.ndarray:
        """Each row's sum of its leaf values over the trees (``x``: one row per candidate, the model's columns)."""
        feature, threshold, left, right, value, roots, depth = self._arrays
        node = np.broadcast_to(roots, (len(x), len(roots))).copy()
        rows = np.arange(len(x))[:, None]
        for _ in range(depth):
            go_left = x[rows, feature[node]] <= threshold[node]
            node = np.where(go_left, left[node], right[node])
        return value[node].sum(axis=1)


def _depth(inner: np.ndarray, left: np.ndarray, right: np.ndarray, roots: np.ndarray) -> int:
    """How many splits the longest root-to-leaf walk takes; refuses nodes that form a cycle."""
    depth, level = 0, roots[inner[roots]]
    while len(level):
        depth += 1
        if depth > len(inner):
            raise ValueError("ranker trees: the nodes form a cycle; re-fit with python -m benchmarks.train_ranker")
        children = np.concatenate([left[level], right[level]])
        level = children[inner[children]]
    return depth
