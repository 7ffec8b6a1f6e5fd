"""Leave-conversations-out with the learned rankers refitted per fold: the honest figure of a learned stage.

A shipped ranker (:mod:`projections.queries.ranker_model` and its siblings)
was fitted on the dev files' questions, so re-ranking those questions with it
is in-sample; choosing among configurations per fold
(:mod:`benchmarks.leaveout`) does not change that. Here each fold gets its
own rankers, fitted by the shipped ones' recipe (:data:`RECIPES`: what
``benchmarks.train_ranker`` was run with) on the other folds' questions only
(and on any other data set given, minus the samples in the held-out fold's
position, as ``train_ranker`` holds them out), and re-ranks only its held-out
questions. The training rows are those the ranker reads at query time: the
default's rows before its ranking stage (:func:`projections.queries.retrieval.scored`),
their features computed from the focused query as the stage computes them,
a row in another language than the question's left out when the stage leaves
it in place (``cross_lingual``).

Evaluation runs in process on the folded store (:class:`benchmarks.lab.Lab`:
``fuse`` and ``assemble`` as the shards run them, with the query vectors
``Memory.search`` encodes); the shipped default is scored the same way, so the
two figures differ by the rankers alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace

import numpy as np

from benchmarks.leaveout import MAX_FOLDS, make_folds
from benchmarks.ranker_fit import fit, fit_trees
from benchmarks.metrics import aggregate, score
from palimpsest.locomo import TENANT
from projections.adapters.embedding import E5_ID, HASH_ID, MINILM_ID
from projections.folds.policy import DEFAULT_POLICY
from projections.queries import rerank
from projections.queries.rank_features import FEATURES, features
from projections.queries.ranker import RankerModel
from projections.queries.retrieval import FusionConfig, scored
from projections.queries.stages.ranker import model_for
from projections.rules.text import has_cjk

SLOTS = ("ranker", "cjk_ranker")


@dataclass(frozen=True)
class Recipe:
    """``benchmarks.train_ranker``'s options a shipped ranker was fitted with."""

    depth: int = 25  # the training rows: each question's best ``depth`` before the ranking stage
    cjk_depth: int | None = None  # a Chinese question's (None: ``depth``)
    l2: float = 1.0
    weighted: bool = False  # each evidence turn weighed 1/|evidence|
    cjk_weighted: bool | None = None  # a Chinese question's (None: ``weighted``)
    trees: int = 0  # boosted trees (0: logistic)
    leaves: int = 15
    rate: float = 0.1
    names: tuple[str, ...] | None = None  # the features it reads (None: the shipped model's own)

    def depth_of(self, slot: str) -> int:
        """How many rows of each question ``slot``'s ranker is fitted on."""
        return self.cjk_depth if slot == "cjk_ranker" and self.cjk_depth is not None else self.depth

    def weighted_of(self, slot: str) -> bool:
        """Whether ``slot``'s ranker is fitted with each evidence turn weighed 1/|evidence| of its question."""
        return self.cjk_weighted if slot == "cjk_ranker" and self.cjk_weighted is not None else self.weighted

    def fit(self, x: np.ndarray, y: np.ndarray, w: np.ndarray, names: tuple[str, ...] = FEATURES,
            slot: str = "ranker") -> RankerModel:
        """``slot``'s model on ``x`` (every column of FEATURES) reading ``self.names``, else ``names``."""
        weight, names = (w if self.weighted_of(slot) else None), self.names or names
        if self.trees:
            return fit_trees(x, y, self.trees, self.leaves, self.rate, l2=self.l2, weight=weight, names=names)
        return fit(x, y, self.l2, weight=weight, names=names)


# model id -> the recipe of its encoder's shipped rankers (both languages; see each model module's docstring).
# e5's English ranker weighs every evidence turn alike: fitted so, it re-ranks held-out REALTALK questions about two
# points better and LoCoMo's as well as before (a question with several evidence turns then teaches it as much per
# turn as one with a single turn); its Chinese one weighs them 1/|evidence|, as fitted for MemDaily.
RECIPES = {
    MINILM_ID: Recipe(),
    HASH_ID: Recipe(),  # the test encoder runs MiniLM's default
    E5_ID: Recipe(depth=40, cjk_depth=25, weighted=False, cjk_weighted=True, trees=100, leaves=15, rate=0.1),
}


def slot_of(config: FusionConfig, query: str) -> str | None:
    """Which of ``config``'s ranker fields re-ranks ``query`` (None: no learned stage for it)."""
    if model_for(config, query) is None:
        return None
    return "cjk_ranker" if has_cjk(query) and config.cjk_ranker is not None else "ranker"


def question_rows(memory, question, vector: np.ndarray, dense: list[tuple[str, float]], config: FusionConfig,
                  depth: int, evidence: Sequence[str], asked_at=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One question's training rows: the features of the best ``depth`` rows the ranking stage would read under
    ``config``, each row's label (its turn is in ``evidence``) and weight (1/|evidence| for an evidence row)."""
    s = scored(memory, question, dense, config, vector, now=asked_at, policy=DEFAULT_POLICY, before="ranker")
    top = s.rows[:depth]
    if config.cross_lingual and top:  # the stage leaves those rows where the fusion put them: nothing to learn
        other = rerank.other_script(memory, s.query, [row[2] for row in top])
        top = [row for row, o in zip(top, other) if not o]
    x = features(memory, s.query, vector, top, rerank.TABLES.get(memory), config.rrf_k, s.primary)
    evidence = set(evidence)
    y = np.array([memory.messages.by_id[row[2]].turn_id in evidence for row in top], dtype=np.float64)
    return x, y, np.where(y > 0, 1.0 / max(1, len(evidence)), 1.0)


class TrainingSet:
    """One data file's questions: each one's fold (:func:`benchmarks.leaveout.make_folds` on its samples), the
    ranker field that re-ranks it, and its training rows (``rows_of(question)``; only for questions a ranker
    re-ranks)."""

    def __init__(self, name: str, questions: Sequence, config: FusionConfig,
                 rows_of: Callable[[object], tuple[np.ndarray, np.ndarray, np.ndarray]], k: int = MAX_FOLDS) -> None:
        self.name = name
        self.questions = list(questions)
        position = {s: i for i, fold in enumerate(make_folds([q.sample_id for q in self.questions], k)) for s in fold}
        self.fold = [position.get(q.sample_id, 0) for q in self.questions]
        self.slot = [slot_of(config, q.question) for q in self.questions]
        self.rows = [rows_of(q) if slot else None for q, slot in zip(self.questions, self.slot)]

    def stacked(self, slot: str, held_out: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The rows of the questions ``slot`` re-ranks outside fold ``held_out``."""
        picked = [r for r, s, f in zip(self.rows, self.slot, self.fold) if s == slot and f != held_out]
        if not picked:
            return np.zeros((0, len(FEATURES))), np.zeros(0), np.zeros(0)
        return tuple(np.concatenate(part) if part[0].ndim == 1 else np.vstack(part) for part in zip(*picked))


def fold_configs(evaluated: TrainingSet, others: Sequence[TrainingSet], config: FusionConfig,
                 recipe: Recipe) -> tuple[dict[int, FusionConfig], list[dict]]:
    """Per fold of ``evaluated``: ``config`` with each of its rankers refitted without that fold's samples (nor
    the samples in that position of ``others``); a ranker with no training question left is switched off
    rather than kept (the shipped one saw the held-out questions). Also a report per fold."""
    configs, report = {}, []
    for f in sorted(set(evaluated.fold)):
        changes, trained = {}, {}
        for slot in SLOTS:
            if getattr(config, slot) is None or slot not in evaluated.slot:
                continue
            parts = [s.stacked(slot, f) for s in (evaluated, *others)]
            x, y, w = np.vstack([p[0] for p in parts]), np.concatenate([p[1] for p in parts]), np.concatenate(
                [p[2] for p in parts])
            if not len(y) or y.min() == y.max():  # nothing to learn from (no rows, or one label only)
                changes[slot], trained[slot] = None, 0
                continue
            model = recipe.fit(x, y, w, getattr(config, slot).features, slot)  # the shipped model's features
            changes[slot] = replace(model, trained_on=f"leave-out fold {f}")
            trained[slot] = int(len(y))
        configs[f] = replace(config, **changes)
        report.append({"held_out": sorted({q.sample_id for q, g in zip(evaluated.questions, evaluated.fold)
                                           if g == f}), "training_rows": trained})
    return configs, report


def leave_out_refit(evaluated: TrainingSet, others: Sequence[TrainingSet], config: FusionConfig, recipe: Recipe,
                    retrieve: Callable[[object, FusionConfig], object], k_values, budgets,
                    metric_keys: list[str]) -> dict | None:
    """Held-out figures of ``config`` with its rankers refitted per fold, next to the shipped ``config``'s scored
    by the same ``retrieve(question, fusion)``; None with fewer than two samples or no learned stage to refit."""
    if len(set(evaluated.fold)) < 2 or not any(evaluated.slot):
        return None
    configs, report = fold_configs(evaluated, others, config, recipe)
    refit, shipped = [], []
    for q, f in zip(evaluated.questions, evaluated.fold):
        refit.append(score(q, retrieve(q, configs[f]), k_values, budgets, max(budgets)))
        shipped.append(score(q, retrieve(q, config), k_values, budgets, max(budgets)))
    return {
        "method": "default configuration, learned rankers refitted per fold on the other folds' samples "
                  "(benchmarks.ranker_refit); scored in process on the folded store",
        "recipe": asdict(recipe),
        "also_trained_on": [s.name for s in others],
        "folds": report,
        "selected": aggregate(refit, metric_keys),
        "shipped_in_process": aggregate(shipped, metric_keys),
    }


def lab_rows(lab, vectors: dict[str, np.ndarray], config: FusionConfig, recipe: Recipe):
    """``rows_of`` for a :class:`TrainingSet` over a :class:`benchmarks.lab.Lab`'s folded store: each question's
    rows as deep as ``recipe`` fits its language's ranker."""
    def rows_of(q):
        memory = lab.state.user(TENANT, q.user_id)
        vec = vectors[q.question]
        return question_rows(memory, q.question, vec, lab.dense(q.user_id, vec, config.candidates), config,
                             recipe.depth_of(slot_of(config, q.question)), q.evidence, q.asked_at)
    return rows_of


def run(store, name: str, questions: Sequence, vectors: dict[str, np.ndarray], config: FusionConfig, model_id: str,
        extras: Sequence[tuple], encode: Callable[[list[str]], np.ndarray], k_values, budgets,
        metric_keys: list[str]) -> dict | None:
    """:func:`leave_out_refit` for ``benchmarks.locomo``: ``store`` (closed: its logs are folded here) holds the
    questions' file, ``vectors`` their query vectors as ``Memory.search`` encodes them; ``extras`` are
    ``(data file, store)`` pairs of other files also trained on (their questions encoded by ``encode``). None
    when the encoder has no recipe or ``config`` re-ranks none of the questions."""
    from benchmarks import dataset as ds
    from benchmarks.lab import Lab, load_state, store_encoder

    recipe = RECIPES.get(model_id)
    if recipe is None or not any(slot_of(config, q.question) for q in questions):
        return None
    lab = Lab(load_state(store))
    evaluated = TrainingSet(name, questions, config, lab_rows(lab, vectors, config, recipe))
    others = []
    for data_path, other_store in extras:
        if store_encoder(other_store)[1] != model_id:
            raise SystemExit(f"--ranker-extra {other_store}: its vectors are not {model_id}'s")
        data = ds.load(data_path)
        texts = sorted({q.question for q in data.questions})
        other = Lab(load_state(other_store))
        others.append(TrainingSet(data.name, data.questions, config,
                                  lab_rows(other, dict(zip(texts, encode(texts))), config, recipe)))
    return leave_out_refit(evaluated, others, config, recipe, lambda q, fusion: lab.retrieve(q, vectors[q.question],
                                                                                             fusion),
                           k_values, budgets, metric_keys)
