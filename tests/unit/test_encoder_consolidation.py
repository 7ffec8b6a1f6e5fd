"""Node merges read label cosines on the store's encoder's scale (projections.decisions.graph_consolidate)."""

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
