"""Graph merges and episode topic shifts read cosines on the vectors' encoder's scale."""

from __future__ import annotations

from projections.adapters.embedding import E5_ID, HASH_ID, MINILM_ID
from projections.decisions.graph_consolidate import DEFAULT_CONSOLIDATION, consolidation_for


def test_minilm_and_unmeasured_encoders_keep_the_default_thresholds():
    for model in (MINILM_ID, HASH_ID, "openai:text-embedding-3-small"):
        assert consolidation_for(model) is DEFAULT_CONSOLIDATION


def test_e5_merges_only_above_its_own_scales_quantiles():
    e5 = consolidation_for(E5_ID)
    assert (e5.candidate_above, e5.merge_above) == (0.967, 0.982)
    assert DEFAULT_CONSOLIDATION.merge_above < e5.candidate_above < e5.merge_above < 1.0
    assert e5.neighbourhood_jaccard == DEFAULT_CONSOLIDATION.neighbourhood_jaccard  # the rest unchanged


def test_the_episode_fold_reads_topic_shifts_on_the_vectors_models_scale():
    from dataclasses import replace

    from projections.folds.episodes import DEFAULT_SEGMENTATION, topic_threshold

    from projections.folds import episodes

    assert topic_threshold(DEFAULT_SEGMENTATION, MINILM_ID) == 0.4
    assert topic_threshold(DEFAULT_SEGMENTATION, E5_ID) == 0.4  # measured: e5's quantile-matched 0.92 lost recall
    original = dict(episodes.MODEL_TOPIC)
    episodes.MODEL_TOPIC["model-x"] = 0.9
    try:
        assert topic_threshold(DEFAULT_SEGMENTATION, "model-x") == 0.9  # a model's own default, once measured
        chosen = replace(DEFAULT_SEGMENTATION, topic_threshold=0.5)  # set by hand: applied as given
        assert topic_threshold(chosen, "model-x") == 0.5
    finally:
        episodes.MODEL_TOPIC.clear()
        episodes.MODEL_TOPIC.update(original)
