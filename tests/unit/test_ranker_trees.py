"""Boosted trees in a ranking model (projections.queries.ranker_trees) and their fit (benchmarks.train_ranker)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from benchmarks.train_ranker import fit_trees
from projections.adapters.embedding import E5_ID
from projections.queries.encoder_fusion import fusion_for
from projections.queries.rank_features import FEATURES
from projections.queries.ranker import RankerModel
from projections.queries.ranker_trees import LEAF, Trees

# tree 1: coverage <= 0.5 ? (log_words <= 2 ? 1.0 : 2.0) : 3.0; tree 2: a lone leaf worth -0.5
TREES = Trees(feature=(0, 1, LEAF, LEAF, LEAF, LEAF), threshold=(0.5, 2.0, 0.0, 0.0, 0.0, 0.0),
              left=(1, 2, -1, -1, -1, -1), right=(4, 3, -1, -1, -1, -1), value=(0.0, 0.0, 1.0, 2.0, 3.0, -0.5),
              roots=(0, 5))


def test_each_row_walks_every_tree_to_its_leaf_and_the_leaves_add_up():
    x = np.array([[0.2, 1.0], [0.2, 3.0], [0.5, 2.0], [0.9, 0.0]])
    assert TREES.sum(x).tolist() == [0.5, 1.5, 0.5, 2.5]


def test_the_trees_join_the_logit_of_the_model_reading_its_features_by_name():
    model = RankerModel(("coverage", "log_words"), (0.0, 0.0), (1.0, 1.0), (0.0, 1.0), 0.25, trees=TREES)
    x = np.zeros((2, len(FEATURES)))
    x[:, FEATURES.index("coverage")] = [0.2, 0.9]
    x[:, FEATURES.index("log_words")] = [3.0, 1.0]
    assert model.logits(x).tolist() == [0.25 + 3.0 + 1.5, 0.25 + 1.0 + 2.5]


def test_malformed_trees_are_refused_by_name():
    with pytest.raises(ValueError, match="outside the nodes"):
        dataclasses.replace(TREES, left=(1, 9, -1, -1, -1, -1))
    with pytest.raises(ValueError, match="cycle"):
        Trees(feature=(0, 0), threshold=(0.0, 0.0), left=(1, 0), right=(1, 0), value=(0.0, 0.0), roots=(0,))
    with pytest.raises(ValueError, match="one entry per node"):
        dataclasses.replace(TREES, value=(0.0,))
    with pytest.raises(ValueError, match="past its 1 features"):
        RankerModel(("coverage",), (0.0,), (1.0,), (0.0,), 0.0, trees=TREES)


def test_store_settings_round_trip_a_fusion_config_whose_ranker_has_trees():
    from palimpsest.settings import StoreSettings

    fusion = fusion_for(E5_ID)
    assert fusion.ranker.trees is not None and fusion.cjk_ranker.trees is not None
    again = StoreSettings.from_json(StoreSettings(fusion=fusion).to_json())
    assert again.fusion == fusion
    x = np.random.default_rng(0).random((5, len(FEATURES)))
    assert again.fusion.ranker.logits(x).tolist() == fusion.ranker.logits(x).tolist()


def test_fitted_trees_give_the_booster_its_own_logits_and_learn_an_interaction():
    rng = np.random.default_rng(1)
    x = rng.random((400, len(FEATURES)))
    a, b = FEATURES.index("cosine"), FEATURES.index("bm25_share")
    y = ((x[:, a] > 0.5) ^ (x[:, b] > 0.5)).astype(float)  # no linear model orders this
    model = fit_trees(x, y, trees=30, leaves=4, rate=0.3, names=("cosine", "bm25_share"))  # checks its own export
    assert model.coef == (0.0, 0.0) and len(model.trees.roots) == 30
    assert np.mean((model.logits(x) > 0) == (y > 0)) > 0.9


def test_a_query_carries_the_shipped_rankers_by_name_and_a_model_of_its_own_by_its_numbers():
    import pickle
    from datetime import UTC, datetime

    from actors.commands import Search
    from projections.queries.ranker import shipped

    fusion = fusion_for(E5_ID)
    query = Search(tenant="t", user_id="u", query="q", query_vector=np.zeros(4, dtype=np.float32), k=10,
                   now=datetime.now(UTC), fusion=fusion)
    sent = pickle.dumps([query], protocol=pickle.HIGHEST_PROTOCOL)
    [back] = pickle.loads(sent)
    assert back.fusion.ranker is fusion.ranker and back.fusion.cjk_ranker is fusion.cjk_ranker
    assert len(sent) < 10_000  # not e5's trees: about 400 KB pickled by their numbers
    assert shipped("ranker_model_e5") is fusion.ranker and shipped("ranker_model_e5_cjk") is fusion.cjk_ranker
    own = dataclasses.replace(fusion.ranker, intercept=0.5)
    again = pickle.loads(pickle.dumps(own))
    assert again == own and again is not own and again.trees.sum(np.zeros((1, len(FEATURES)))).shape == (1,)
    with pytest.raises(ValueError, match="no shipped ranker model"):
        shipped("os")
