"""The leave-out refit of the learned rankers (benchmarks.ranker_refit): each fold's rankers never see its samples."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest

from benchmarks.metrics import metric_keys
from benchmarks.ranker_refit import RECIPES, Recipe, TrainingSet, fold_configs, leave_out_refit, question_rows, slot_of
from benchmarks.systems import BudgetContext, Retrieval
from projections.adapters.embedding import E5_ID
from projections.folds.state import ShardState, fold
from projections.queries.encoder_fusion import fusion_for
from projections.queries.rank_features import FEATURES
from projections.queries.ranker import RankerModel
from projections.queries.retrieval import FusionConfig, fuse
from tests.builders import STAGES_OFF, embedding, pet_turns, stream

KEYS = metric_keys((5, 10), (500, 1000, 2000))
E5 = fusion_for(E5_ID)


def question(sample: str, i: int, text: str = "What did Nate adopt?") -> SimpleNamespace:
    return SimpleNamespace(sample_id=sample, index=i, question=f"{text} #{sample}{i}", category="1",
                           evidence=frozenset({f"{sample}:{i}"}), user_id=sample, asked_at=None)


class Spy(Recipe):
    """Records the question numbers (column 0) each fit saw and returns a constant model."""

    def fit(self, x, y, w, names=FEATURES, slot="ranker"):
        self.seen.append(sorted({int(v) for v in x[:, 0]}))
        self.names.append(names)
        n = len(FEATURES)
        return RankerModel(FEATURES, (0.0,) * n, (1.0,) * n, (0.0,) * n, 0.0)


def spy() -> Spy:
    recipe = Spy()
    object.__setattr__(recipe, "seen", [])
    object.__setattr__(recipe, "names", [])
    return recipe


def rows_of(offset: int = 0):
    def rows(q):  # two rows per question, one of them its evidence; column 0 names the question
        x = np.zeros((2, len(FEATURES)))
        x[:, 0] = offset + q.index
        return x, np.array([1.0, 0.0]), np.array([1.0, 1.0])
    return rows


def test_the_ranker_field_of_a_question_follows_its_language_and_the_config():
    assert slot_of(E5, "What did Nate adopt?") == "ranker"
    assert slot_of(E5, "我用什么编辑器？") == "cjk_ranker"
    assert slot_of(dataclasses.replace(E5, ranker=None), "What did Nate adopt?") is None
    assert slot_of(dataclasses.replace(E5, cjk_ranker=None), "我用什么编辑器？") is None
    assert slot_of(dataclasses.replace(E5, cjk_ranker=None, ranker_cjk=True), "我用什么编辑器？") == "ranker"


def test_each_folds_rankers_are_fitted_without_its_samples_nor_that_position_of_another_set():
    questions = [question(s, i) for i, s in enumerate("abcde" * 2)]  # five samples, two questions each
    evaluated = TrainingSet("x", questions, E5, rows_of())
    other = TrainingSet("y", [question(s, i) for i, s in enumerate("vw")], E5, rows_of(100))
    recipe = spy()
    configs, report = fold_configs(evaluated, [other], E5, recipe)
    assert sorted(configs) == [0, 1, 2, 3, 4]
    for f, seen in enumerate(recipe.seen):  # fold f holds out sample "abcde"[f] (questions f and f + 5)
        assert f not in seen and f + 5 not in seen and len([i for i in seen if i < 100]) == 8
        # the other set's samples v, w sit in positions 0 and 1: held out with folds 0 and 1
        assert (100 in seen) == (f != 0) and (101 in seen) == (f != 1)
    assert [r["held_out"] for r in report] == [["a"], ["b"], ["c"], ["d"], ["e"]]
    assert configs[2].ranker.trained_on == "leave-out fold 2" and configs[2].cjk_ranker is E5.cjk_ranker
    assert recipe.names == [E5.ranker.features] * 5  # the shipped model's features, not every one there is


def test_a_ranker_with_nothing_left_to_learn_from_is_switched_off_not_kept():
    # every Chinese question sits in one sample: holding it out leaves the Chinese ranker no training row
    questions = [question("a", 0, "我用什么编辑器？"), question("b", 1), question("c", 2)]
    configs, report = fold_configs(TrainingSet("x", questions, E5, rows_of()), [], E5, spy())
    assert configs[0].cjk_ranker is None and report[0]["training_rows"]["cjk_ranker"] == 0
    assert configs[1].cjk_ranker.trained_on == "leave-out fold 1"


def test_held_out_questions_are_scored_by_their_folds_refit_and_the_shipped_config_beside_it():
    questions = [question(s, i) for i, s in enumerate("abc")]
    evaluated = TrainingSet("x", questions, E5, rows_of())
    seen = []

    def retrieve(q, fusion):  # finds the evidence only under the ranker of the question's own fold
        seen.append((q.sample_id, fusion.ranker.trained_on))
        hit = fusion.ranker.trained_on == f"leave-out fold {'abc'.index(q.sample_id)}"
        ranked = (frozenset(q.evidence),) if hit else (frozenset({"other"}),)
        return Retrieval(ranked, {b: BudgetContext(ranked[0], 10) for b in (500, 1000, 2000)})

    result = leave_out_refit(evaluated, [], E5, spy(), retrieve, (5, 10), (500, 1000, 2000), KEYS)
    assert result["selected"]["recall@10"] == 1.0 and result["shipped_in_process"]["recall@10"] == 0.0
    assert ("b", "leave-out fold 1") in seen and ("b", E5.ranker.trained_on) in seen
    assert leave_out_refit(TrainingSet("x", questions[:1], E5, rows_of()), [], E5, spy(), retrieve, (5, 10),
                           (500, 1000, 2000), KEYS) is None  # one sample: no fold to hold out


def test_training_rows_are_what_the_ranking_stage_reads_and_the_recipe_fits_them():
    envs = stream(
        *pet_turns(),
        ("v1", embedding("m1", [1.0, 0.0])), ("v2", embedding("m2", [0.0, 1.0])), ("v3", embedding("m3", [0.6, 0.8])),
    )
    memory = fold(ShardState(), envs).user("acme", "alice")
    cfg = FusionConfig(episode_weight=0.0, note_weight=0.0, graph_weight=0.0, retention_weight=0.0, **STAGES_OFF)
    dense = [("m1", 0.9), ("m3", 0.5), ("m2", 0.1)]
    x, y, w = question_rows(memory, "adopt pet", np.array([1.0, 0.0]), dense, cfg, 2, ["D1:2", "D1:3"])
    order = [h.memory_id for h in fuse(memory, "adopt pet", dense, 2, cfg, np.array([1.0, 0.0]))]
    assert x.shape == (2, len(FEATURES)) and list(y) == [o != "m1" for o in order]
    assert list(w) == [0.5 if label else 1.0 for label in y]  # an evidence turn weighs 1/|evidence|
    model = Recipe().fit(np.vstack([x, x]), np.concatenate([y, y]), np.concatenate([w, w]))
    assert model.trees is None and model.logits(x).shape == (2,)
    with pytest.raises(ValueError):
        Recipe(names=("no such feature",)).fit(x, y, w)


def test_each_languages_ranker_is_refitted_on_rows_as_deep_as_its_recipe_says():
    recipe = Recipe(depth=40, cjk_depth=25)
    assert (recipe.depth_of("ranker"), recipe.depth_of("cjk_ranker")) == (40, 25)
    assert Recipe(depth=40).depth_of("cjk_ranker") == 40
    shipped = RECIPES[E5_ID]  # e5's Chinese ranker re-orders as deep as it was fitted; the English one less deep
    assert shipped.depth_of("cjk_ranker") == E5.cjk_ranker_depth
    assert E5.ranker_depth <= shipped.depth_of("ranker")


def test_each_languages_ranker_weighs_its_evidence_turns_as_its_recipe_says():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(60, len(FEATURES)))
    y = (x[:, 0] + rng.normal(scale=0.5, size=60) > 0).astype(float)
    w = np.where(y > 0, rng.choice([1.0, 0.5, 0.25], size=60), 1.0)
    recipe = Recipe(weighted=False, cjk_weighted=True)
    assert (recipe.weighted_of("ranker"), recipe.weighted_of("cjk_ranker")) == (False, True)
    assert Recipe(weighted=True).weighted_of("cjk_ranker")
    plain, weighed = Recipe().fit(x, y, w), Recipe(weighted=True).fit(x, y, w)
    assert recipe.fit(x, y, w, slot="ranker").coef == plain.coef  # the weights are left aside
    assert recipe.fit(x, y, w, slot="cjk_ranker").coef == weighed.coef != plain.coef
