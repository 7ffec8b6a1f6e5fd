"""Each encoder's default fusion (projections.queries.encoder_fusion) and the benchmarks built around it."""

from __future__ import annotations

import json
from dataclasses import fields

import numpy as np
import pytest

from benchmarks import lab
from benchmarks.variants import VARIANTS, for_encoder, variants
from projections.adapters.encoder_kinds import model_id
from projections.queries.encoder_fusion import E5_LOW_SIMILARITY, OVERRIDES, fusion_for, measured
from projections.queries.ranker_model import MODEL as MINILM_RANKER
from projections.queries.ranker_model_e5 import MODEL as E5_RANKER
from projections.queries.ranker_model_e5_cjk import MODEL as E5_CJK_RANKER
from projections.queries.retrieval import DEFAULT_FUSION, list_weights

MINILM, E5, HASH = model_id("minilm"), model_id("multilingual-e5-small"), model_id("hash")


def changed(config) -> set[str]:
    return {f.name for f in fields(config) if getattr(config, f.name) != getattr(DEFAULT_FUSION, f.name)}


def test_minilm_and_the_hash_encoder_keep_exactly_todays_default():
    assert fusion_for(MINILM) is DEFAULT_FUSION
    assert fusion_for(HASH) is DEFAULT_FUSION
    assert for_encoder(MINILM) == VARIANTS


def test_e5_changes_only_what_reads_a_cosine_or_a_language_and_how_deep_its_rankers_reorder():
    e5 = fusion_for(E5)
    assert changed(e5) == set(OVERRIDES[E5]) == {"ranker", "cjk_ranker", "cjk_dense_weight", "graph_config",
                                                  "cross_lingual", "ranker_depth", "cjk_ranker_depth"}
    assert (e5.ranker, e5.cjk_ranker) == (E5_RANKER, E5_CJK_RANKER)
    assert e5.graph_config.low_similarity == E5_LOW_SIMILARITY
    assert list_weights(e5, "王芳用什么编辑器？")["dense"] == list_weights(e5, "Which editor?")["dense"] == 1.0


def test_the_e5_rankers_were_fitted_on_e5_stores():
    assert "e5" in E5_RANKER.trained_on and "e5" in E5_CJK_RANKER.trained_on
    assert E5_RANKER.coef != MINILM_RANKER.coef
    # boosted trees (projections.queries.ranker_trees); MiniLM's rankers stay logistic
    assert E5_RANKER.trees is not None and E5_CJK_RANKER.trees is not None and MINILM_RANKER.trees is None


@pytest.mark.parametrize("model", ["openai:text-embedding-3-small", "sentence-transformers:/models/bge-small"])
def test_an_unmeasured_encoder_gets_the_rank_based_default_without_rankers(model):
    config = fusion_for(model)
    assert not measured(model)
    assert changed(config) == {"ranker", "cjk_ranker"}
    assert config.ranker is None and config.cjk_ranker is None


def test_the_benchmark_variants_derive_from_the_encoders_default():
    e5 = for_encoder(E5)
    assert e5["palimpsest"] == fusion_for(E5)
    assert e5["palimpsest_no_ranker"].ranker is None
    assert e5["palimpsest_no_ranker"].graph_config.low_similarity == E5_LOW_SIMILARITY
    assert e5["palimpsest_no_graph"].ranker == E5_RANKER
    # the earlier defaults are fixed configurations, whatever the encoder
    assert e5["palimpsest_before_keys"] == VARIANTS["palimpsest_before_keys"]
    assert variants(DEFAULT_FUSION) == VARIANTS


def test_the_lab_reads_the_stores_own_encoder(tmp_path):
    (tmp_path / "store.json").write_text(json.dumps({"embedder": "multilingual-e5-small", "model_id": E5}))
    assert lab.store_encoder(tmp_path) == ("multilingual-e5-small", E5)
    (tmp_path / "store.json").write_text(json.dumps({"model_id": HASH}))  # an older store.json: no spec recorded
    assert lab.store_encoder(tmp_path) == ("hash", HASH)


def test_lab_query_vectors_come_from_the_named_encoder_and_are_cached(tmp_path, monkeypatch):
    monkeypatch.setattr(lab, "CACHE", tmp_path / "q.npz")
    first = lab.query_vectors(["where did Maya move?"], HASH, spec="hash")
    assert first["where did Maya move?"].shape == (384,)
    again = lab.query_vectors(["where did Maya move?"], HASH)
    np.testing.assert_array_equal(first["where did Maya move?"], again["where did Maya move?"])
    with pytest.raises(ValueError, match="store_encoder"):
        lab.query_vectors(["where did Maya move?"], MINILM, spec="hash")
