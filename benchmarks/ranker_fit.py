"""Fitting a ranking model (:class:`projections.queries.ranker.RankerModel`) on feature rows: a logistic
regression by Newton's method, or gradient-boosted trees exported as :mod:`projections.queries.ranker_trees`.
Used by ``benchmarks.train_ranker`` and the leave-out refit (``benchmarks.ranker_refit``)."""

from __future__ import annotations

import numpy as np

from projections.queries.rank_features import FEATURES
from projections.queries.ranker import RankerModel
from projections.queries.ranker_trees import LEAF, Trees

L2 = 1.0


def fit(x: np.ndarray, y: np.ndarray, l2: float = L2, iterations: int = 25,
        weight: np.ndarray | None = None, names: tuple[str, ...] = FEATURES) -> RankerModel:
    """Logistic regression on standardised features, L2-penalised (intercept free), by Newton's method.

    ``x`` holds every column of FEATURES; the model is fitted on the columns ``names``."""
    weight = np.ones(len(y)) if weight is None else weight
    x = x[:, [FEATURES.index(n) for n in names]]
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    w = np.zeros(z.shape[1])
    penalty = np.full(z.shape[1], l2)
    penalty[-1] = 0.0
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(z @ w)))
        grad = z.T @ (weight * (p - y)) + penalty * w
        hess = (z * (weight * p * (1 - p))[:, None]).T @ z + np.diag(penalty) + 1e-9 * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return RankerModel(tuple(names), tuple(mean.tolist()), tuple(scale.tolist()), tuple(w[:-1].tolist()), float(w[-1]))


def fit_trees(x: np.ndarray, y: np.ndarray, trees: int, leaves: int, rate: float, l2: float = L2,
              weight: np.ndarray | None = None, names: tuple[str, ...] = FEATURES) -> RankerModel:
    """Gradient-boosted trees on the columns ``names`` of ``x`` (raw features), as a :class:`RankerModel` whose
    linear part is zero and whose intercept is the boosting's baseline log-odds."""
    from sklearn.ensemble import HistGradientBoostingClassifier  # a fitting-time dependency only

    x = x[:, [FEATURES.index(n) for n in names]]
    booster = HistGradientBoostingClassifier(learning_rate=rate, max_iter=trees, max_leaf_nodes=leaves,
                                             l2_regularization=l2, early_stopping=False, random_state=0)
    booster.fit(x, y, sample_weight=weight)
    feature, threshold, left, right, value, roots = [], [], [], [], [], []
    for (predictor,) in booster._predictors:
        offset = len(feature)
        roots.append(offset)
        for node in predictor.nodes:
            leaf = bool(node["is_leaf"])
            feature.append(LEAF if leaf else int(node["feature_idx"]))
            threshold.append(0.0 if leaf else float(node["num_threshold"]))
            left.append(-1 if leaf else offset + int(node["left"]))
            right.append(-1 if leaf else offset + int(node["right"]))
            value.append(float(node["value"]) if leaf else 0.0)
    n = len(names)
    model = RankerModel(tuple(names), (0.0,) * n, (1.0,) * n, (0.0,) * n,
                        float(np.ravel(booster._baseline_prediction)[0]),
                        trees=Trees(tuple(feature), tuple(threshold), tuple(left), tuple(right), tuple(value),
                                    tuple(roots)))
    full = np.zeros((len(x), len(FEATURES)))
    full[:, [FEATURES.index(n) for n in names]] = x
    drift = float(np.max(np.abs(model.logits(full) - booster.decision_function(x))))
    if drift > 1e-6:
        raise RuntimeError(f"the exported trees' logits differ from scikit-learn's by {drift}")
    return model
