"""A turn in another language than the question's: credited with the word evidence its meaning implies, and
left at its fused place by the learned ranker (pure, no Ray)."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import numpy as np
import pytest

from projections.folds.state import ShardState, fold
from projections.queries.encoder_fusion import fusion_for
from projections.queries.rank_features import FEATURES
from projections.queries.ranker import RankerModel, keep_places, rerank_rows
from projections.queries.retrieval import DEFAULT_FUSION, FusionConfig, fuse
from projections.adapters.embedding import E5_ID, MINILM_ID
from tests.builders import STAGES_OFF, T0, embedding, message, stream

BASE = FusionConfig(note_weight=0.0, graph_weight=0.0, retention_weight=0.0, **STAGES_OFF)
ON = dataclasses.replace(BASE, cross_lingual=True)


@pytest.fixture
def memory():
    turns = [
        ("e1", "Python on the backend, and I prefer FastAPI over Django."),
        ("e2", "I use a standing desk now, it helps my back."),
        ("e3", "The recipes table has about two thousand rows."),
        ("z1", "我最近改用 Neovim 了，不再用 VS Code 写代码。"),
        ("z2", "这个周末我们俱乐部要去黄山爬山。"),
    ]
    envs = [(mid, message(text, f"c{i}", speaker="Maya", turn_id=f"D1:{i}", occurred_at=T0 + timedelta(minutes=i)))
            for i, (mid, text) in enumerate(turns, start=1)]
    envs += [(f"v{mid}", embedding(mid, [1.0, float(i)])) for i, (mid, _) in enumerate(turns)]
    return fold(ShardState(), stream(*envs)).user("acme", "alice")


def test_a_turn_in_the_other_language_gets_the_word_evidence_its_dense_rank_implies(memory):
    query = "Which editor does Maya prefer?"
    dense = [("z1", 0.83), ("e1", 0.82), ("e2", 0.81), ("e3", 0.80), ("z2", 0.79)]
    plain = {h.memory_id: h for h in fuse(memory, query, dense, k=5, config=BASE)}
    lifted = fuse(memory, query, dense, k=5, config=ON)
    by_id = {h.memory_id: h for h in lifted}
    assert [h.memory_id for h in lifted][:2] == ["e1", "z1"]  # z1 (dense rank 1) was behind e3's word match
    assert plain["z1"].rank == 3
    # added: the dense and episode terms scaled to the weight of the word lists, less what those gave it
    k = BASE.rrf_k
    read = BASE.dense_weight / (k + 1)  # (no episodes here)
    given = BASE.lexical_weight / (k + by_id["z1"].breakdown["lexical_rank"])
    assert by_id["z1"].breakdown["cross_lingual_term"] == pytest.approx(
        read * BASE.lexical_weight / (BASE.dense_weight + BASE.episode_weight) - given)
    for m in ("e1", "e2", "e3"):  # the question's own language is unchanged
        assert "cross_lingual_term" not in by_id[m].breakdown and by_id[m].score == pytest.approx(plain[m].score)


def test_the_questions_own_language_keeps_its_scores(memory):
    dense = [("z2", 0.9), ("z1", 0.8), ("e1", 0.1)]
    chinese = dataclasses.replace(BASE, cjk_dense_weight=None, cjk_ranker=None)
    for query in ("周末去哪里爬山？", "我现在用什么编辑器？"):
        off = {h.memory_id: h.score for h in fuse(memory, query, dense, k=5, config=chinese)}
        on = {h.memory_id: h for h in fuse(memory, query, dense, k=5,
                                          config=dataclasses.replace(chinese, cross_lingual=True))}
        assert {m: on[m].score for m in off if m.startswith("z")} == pytest.approx(
            {m: s for m, s in off.items() if m.startswith("z")})
        assert on["e1"].breakdown["cross_lingual_term"] > 0  # the English turn is judged by its meaning


def _model(coef: float) -> RankerModel:
    n = len(FEATURES)
    return RankerModel(FEATURES, (0.0,) * n, (1.0,) * n,
                       tuple(coef if f == "fused_rank_inv" else 0.0 for f in FEATURES), 0.0)


def test_the_ranker_judges_the_questions_language_and_keeps_the_others_fused_place(memory):
    query, vec = "Which editor does Maya prefer?", np.array([1.0, 0.0])
    dense = [("z1", 0.83), ("e1", 0.82), ("e2", 0.81), ("e3", 0.80), ("z2", 0.79)]
    fused = [h.memory_id for h in fuse(memory, query, dense, k=5, config=ON, query_vector=vec)]

    def ranked(model):
        config = dataclasses.replace(ON, ranker=model, ranker_depth=5)
        return [h.memory_id for h in fuse(memory, query, dense, k=5, config=config, query_vector=vec)]

    assert ranked(_model(5.0)) == fused  # a model that agrees with the fusion: every turn keeps its place
    reversed_ = ranked(_model(-5.0))  # one that reverses it: the English turns are reversed among themselves
    assert [m for m in reversed_ if m.startswith("e")] == [m for m in fused if m.startswith("e")][::-1]
    rows = [[0.5, -4, "z1", {}], [0.3, -5, "z2", {}]]  # every row in the other language: the fused order stands
    rerank_rows(memory, query, vec, rows, _model(-5.0), depth=5, rrf_k=5, cross_lingual=True)
    assert rows == [[0.5, -4, "z1", {}], [0.3, -5, "z2", {}]]


def test_foreign_rows_keep_their_fused_positions_among_the_judged_ones():
    prob = np.array([0.1, 0.0, 0.5, 0.0, 0.3, 0.0])  # rows in fused order; 1, 3 and 5 are in the other language
    other = np.array([False, True, False, True, False, True])
    out = keep_places(prob, other)
    # the model's order of the judged rows (2, 4, 0) fills their positions; the others stay at 1, 3 and 5
    assert sorted(range(6), key=lambda i: -out[i]) == [2, 1, 4, 3, 0, 5]
    assert out.tolist() == pytest.approx([0.1, 0.4, 0.5, 0.2, 0.3, 0.05])
    first = keep_places(np.array([0.0, 0.4, 0.8]), np.array([True, False, False]))
    assert first.tolist() == pytest.approx([1.0, 0.4, 0.8])  # at the top: half as much again, at most 1


def test_on_for_a_multilingual_encoder_only():
    assert fusion_for(E5_ID).cross_lingual and not fusion_for(MINILM_ID).cross_lingual
    assert not DEFAULT_FUSION.cross_lingual
