"""Fit the learned ranking stage on the dev files, with leave-conversations-out cross-validation.

    python -m benchmarks.train_ranker \\
        --set ../shared/data/locomo/locomo10_dev.json=/tmp/pal/store_locomo \\
        --set ../shared/data/realtalk/realtalk_dev.json=/tmp/pal/store_realtalk \\
        --set ../shared/data/memdaily/memdaily_dev.json=/tmp/pal/store_memdaily \\
        --base stages --write projections/queries/ranker_model.py

Each ``--set`` pairs a data file with a store ``benchmarks.locomo --store``
kept. For every question, the ``--base`` configuration (a name from
``benchmarks.variants``, without a ranker) is fused in process by the lab
(:mod:`benchmarks.lab`) up to its ranking stage; the best ``depth`` rows
get the features that stage reads (:mod:`projections.queries.rank_features`,
:func:`benchmarks.ranker_refit.question_rows`) and a label (is the turn in the
question's evidence). A logistic regression with an L2 penalty is fitted by
Newton's method (numpy only). Cross-validation: fold ``f`` holds out the
samples in position ``f mod 5`` of every data set at once; the model fitted
on the other folds re-ranks the held-out questions, and the held-out figures
of all folds are reported next to the base's, per data set (whole metrics
through the lab, budgets included). The model fitted on everything is
written as a Python module when ``--write`` is given.

With ``--trees N`` the model is gradient-boosted regression trees instead
(scikit-learn's HistGradientBoostingClassifier, N trees of at most
``--leaves`` leaves, no early stopping, a fixed seed): the module holds the
trees (:mod:`projections.queries.ranker_trees`) with a zero linear part, and
its logits are checked against scikit-learn's on the training rows.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from benchmarks import dataset as ds
from benchmarks.lab import BUDGETS, K_VALUES, Lab, load_state, query_vectors, store_encoder
from benchmarks.leaveout import MAX_FOLDS, make_folds
from benchmarks.metrics import aggregate, metric_keys, score
from benchmarks.ranker_fit import L2, fit, fit_trees  # noqa: F401 (fit_trees: this module's API too)
from benchmarks.ranker_refit import question_rows
from benchmarks.variants import ALL
from palimpsest.locomo import TENANT
from projections.queries.rank_features import FEATURES
from projections.queries.ranker import RankerModel
from projections.queries.ranker_trees import Trees

class Split:
    """One data set: its lab, question vectors, and each question's features and labels under the base."""

    def __init__(self, data_path: Path, store: Path, base, depth: int) -> None:
        self.data = ds.load(data_path)
        self.lab = Lab(load_state(store))
        spec, model_id = store_encoder(store)  # the question vectors come from the store's own encoder
        self.vecs = query_vectors([q.question for q in self.data.questions], model_id, spec=spec)
        self.folds = {s: i for i, fold in enumerate(make_folds([q.sample_id for q in self.data.questions],
                                                               MAX_FOLDS)) for s in fold}
        self.x, self.y, self.w, self.fold = [], [], [], []
        for q in self.data.questions:
            memory = self.lab.state.user(TENANT, q.user_id)
            vec = self.vecs[q.question]
            # the rows and features the ranking stage reads at query time (benchmarks.ranker_refit)
            x, y, w = question_rows(memory, q.question, vec, self.lab.dense(q.user_id, vec, base.candidates), base,
                                    depth, q.evidence, q.asked_at)
            self.x.append(x)
            self.y.append(y)
            # a question's evidence counts once in recall: each of its turns weighs 1/|evidence|
            self.w.append(w)
            self.fold.append(self.folds.get(q.sample_id, 0))

    def stacked(self, keep) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        idx = [i for i, f in enumerate(self.fold) if keep(f)]
        if not idx:
            return np.zeros((0, len(FEATURES))), np.zeros(0), np.zeros(0)
        return (np.vstack([self.x[i] for i in idx]), np.concatenate([self.y[i] for i in idx]),
                np.concatenate([self.w[i] for i in idx]))

    def evaluate(self, configs: dict[int, object]) -> dict:
        """Lab metrics with each question run under its fold's config (``configs[fold]``)."""
        keys = metric_keys(K_VALUES, BUDGETS)
        rows = [score(q, self.lab.retrieve(q, self.vecs[q.question], configs[f]), K_VALUES, BUDGETS, max(BUDGETS))
                for q, f in zip(self.data.questions, self.fold)]
        return aggregate(rows, keys)


def _joined(parts, weighted: bool) -> tuple:
    x = np.vstack([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts])
    return x, y, (np.concatenate([p[2] for p in parts]) if weighted else None)


def _fit(joined: tuple, l2: float, names: tuple[str, ...] = FEATURES, boost: tuple | None = None) -> RankerModel:
    x, y, weight = joined
    if boost:
        return fit_trees(x, y, *boost, l2=l2, weight=weight, names=names)
    return fit(x, y, l2, weight=weight, names=names)


def _line(name: str, r: dict, names: dict) -> str:
    cats = [c for c, v in r["per_category"].items() if v["questions"]]
    per = "  ".join(f"{c}:{100 * r['per_category'][c]['recall@10']:.1f}" for c in cats)
    return (f"  {name:28s} R@10 {100 * r['recall@10']:6.2f}  B1000 {100 * r['budget_recall@1000']:6.2f}  "
            f"B2000 {100 * r['budget_recall@2000']:5.1f}   {per}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.train_ranker", description=__doc__.split("\n\n")[0])
    p.add_argument("--set", action="append", required=True, metavar="DATA=STORE")
    p.add_argument("--base", default="palimpsest", help=f"base configuration, one of {', '.join(ALL)}")
    p.add_argument("--test", action="append", default=[], metavar="DATA=STORE",
                   help="a set only evaluated, by the model fitted on every --set (another data set, another language)")
    p.add_argument("--depth", type=int, default=50)
    p.add_argument("--l2", type=float, default=L2)
    p.add_argument("--weighted", action="store_true", help="weigh each evidence turn by 1/|evidence| of its question")
    p.add_argument("--features", help="comma-separated subset of rank_features.FEATURES (default: all); "
                   "'before-keys': the 19 the model before the derived keys read")
    p.add_argument("--trees", type=int, default=0, help="fit this many boosted trees instead of a logistic model")
    p.add_argument("--leaves", type=int, default=15, help="with --trees: at most this many leaves per tree")
    p.add_argument("--learning-rate", type=float, default=0.1, help="with --trees: each tree's shrinkage")
    p.add_argument("--write", type=Path, help="write the model fitted on every set as a Python module")
    args = p.parse_args(argv)
    base = replace(ALL[args.base], ranker=None)
    names = FEATURES if not args.features else FEATURES[:19] if args.features == "before-keys" else tuple(
        args.features.split(","))
    unknown = [n for n in names if n not in FEATURES]
    if unknown:
        p.error(f"--features: unknown {unknown}; choose from {', '.join(FEATURES)}")
    boost = (args.trees, args.leaves, args.learning_rate) if args.trees else None
    splits = []
    for item in args.set:
        data, _, store = item.partition("=")
        splits.append(Split(Path(data), Path(store), base, args.depth))
        print(f"features: {data} ({len(splits[-1].y)} questions)", file=sys.stderr)
    folds = sorted({f for s in splits for f in s.fold})
    models = {}
    for f in folds:
        parts = [s.stacked(lambda g, f=f: g != f) for s in splits]
        models[f] = _fit(_joined(parts, args.weighted), args.l2, names, boost)
    for s in splits:
        print(f"{s.data.name} (leave-out: the model of each fold never saw its held-out samples)")
        print(_line(f"base {args.base}", s.evaluate({f: base for f in folds}), s.data.category_names))
        print(_line("ranker, leave-out", s.evaluate({f: replace(base, ranker=models[f], ranker_depth=args.depth)
                                                      for f in folds}), s.data.category_names))
    parts = [s.stacked(lambda g: True) for s in splits]
    final = _fit(_joined(parts, args.weighted), args.l2, names, boost)
    final = replace(final, trained_on=", ".join(s.data.name for s in splits) + f"; base {args.base}")
    for item in args.test:
        data, _, store = item.partition("=")
        s = Split(Path(data), Path(store), base, args.depth)
        print(f"{s.data.name} (not in training: the model fitted on every --set)")
        print(_line(f"base {args.base}", s.evaluate({f: base for f in set(s.fold)}), s.data.category_names))
        print(_line("ranker", s.evaluate({f: replace(base, ranker=final, ranker_depth=args.depth) for f in set(s.fold)}),
                    s.data.category_names))
    if final.trees is None:
        print("coefficients: " + ", ".join(f"{n} {c:+.3f}" for n, c in zip(final.features, final.coef)))
    else:
        print(f"trees: {len(final.trees.roots)}, {len(final.trees.feature)} nodes")
    if args.write:
        args.write.write_text(module_text(final, args))
        print(f"wrote {args.write}", file=sys.stderr)
    return 0


def module_text(model: RankerModel, args: argparse.Namespace) -> str:
    def nums(values) -> str:
        return "(" + ", ".join(f"{v:.6g}" for v in values) + ",)"
    boosted = f", {args.trees} boosted trees of at most {args.leaves} leaves, learning rate {args.learning_rate}"
    return (
        '"""The fitted ranking model (generated by ``python -m benchmarks.train_ranker``; do not edit by hand).\n\n'
        f"Trained on: {model.trained_on}; depth {args.depth}, L2 {args.l2}"
        f"{', each evidence turn weighed 1/|evidence|' if args.weighted else ''}"
        f"{boosted if model.trees else ''}.\n"
        '"""\n\nfrom projections.queries.ranker import RankerModel\n'
        f"{'from projections.queries.ranker_trees import Trees' + chr(10) if model.trees else ''}\n"
        f"MODEL = RankerModel(\n    features={model.features!r},\n    mean={nums(model.mean)},\n    scale={nums(model.scale)},\n"
        f"    coef={nums(model.coef)},\n    intercept={model.intercept:.6g},\n    trained_on={model.trained_on!r},\n"
        f"{trees_text(model.trees) if model.trees else ''})\n"
    )


def trees_text(trees: Trees) -> str:
    """The ``trees=Trees(...)`` argument of a generated module, every number exact (repr)."""
    def exact(values) -> str:
        return "(" + ", ".join(repr(v) for v in values) + ",)"
    fields = ("feature", "threshold", "left", "right", "value", "roots")
    return "    trees=Trees(\n" + "".join(f"        {f}={exact(getattr(trees, f))},\n" for f in fields) + "    ),\n"


if __name__ == "__main__":
    raise SystemExit(main())
