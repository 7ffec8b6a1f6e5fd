"""The optional ranking stages after the fusion and the learned ranking stage (pure, no Ray)."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import numpy as np
import pytest

from projections.folds.state import ShardState, fold
from projections.queries import rerank
from projections.queries.rank_features import FEATURES, features
from projections.queries.ranker import RankerModel
from projections.queries.retrieval import FusionConfig, fuse
from tests.builders import STAGES_OFF, T0, embedding, message, pet_turns, stream

BASE = FusionConfig(episode_weight=0.0, note_weight=0.0, graph_weight=0.0, retention_weight=0.0, **STAGES_OFF)


@pytest.fixture
def memory():
    envs = stream(
        *pet_turns(),
        ("m4", message("I adopt a new habit every year", "c4", speaker="Joanna", turn_id="D2:1",
                       conversation_id="conv-2", occurred_at=T0 + timedelta(days=3))),
        ("v1", embedding("m1", [1.0, 0.0])),
        ("v2", embedding("m2", [0.0, 1.0])),
        ("v3", embedding("m3", [0.0, 1.0])),
        ("v4", embedding("m4", [0.7, 0.7])),
    )
    return fold(ShardState(), envs).user("acme", "alice")


def test_neighbour_stage_brings_in_the_reply_to_the_matching_turn(memory):
    plain = fuse(memory, "adopt pet", [], k=10, config=BASE)
    assert "m2" not in [h.memory_id for h in plain]  # no lexical or dense match of its own

    lifted = fuse(memory, "adopt pet", [], k=10, config=dataclasses.replace(BASE, neighbour_weight=0.5))
    by_id = {h.memory_id: h for h in lifted}
    assert by_id["m2"].breakdown["neighbour_of"] == "m1"
    assert by_id["m2"].score == pytest.approx(0.5 * by_id["m1"].score)
    # neighbours stay within their conversation: m4 (conv-2) is not m3's neighbour
    assert rerank.TABLES.get(memory).prev_next["m3"] == ("m2", None)


def test_speaker_stage_lifts_the_named_speaker_only_when_some_are_named(memory):
    cfg = dataclasses.replace(BASE, speaker_weight=1.0)
    hits = fuse(memory, "what did Joanna adopt", [], k=10, config=cfg)
    assert hits[0].memory_id == "m4" and hits[0].breakdown.get("speaker_named")
    both = fuse(memory, "did Joanna and Nate adopt", [], k=10, config=cfg)
    assert not any(h.breakdown.get("speaker_named") for h in both)


def test_time_intent_is_read_from_when_questions_in_english_and_chinese():
    assert rerank.time_intent("When did Caroline go to the support group?")
    assert rerank.time_intent("What year did John start surfing?")
    assert rerank.time_intent("小红什么时候去的瑜伽课？")
    assert not rerank.time_intent("What did Caroline do at the support group?")


def test_stages_off_leave_the_fusion_unchanged(memory):
    before = fuse(memory, "adopt pet Shelly", [("m2", 0.9), ("m4", 0.5)], k=10, config=BASE)
    again = fuse(memory, "adopt pet Shelly", [("m2", 0.9), ("m4", 0.5)], k=10,
                 config=dataclasses.replace(BASE, neighbour_weight=0.0, speaker_weight=0.0, time_weight=0.0))
    assert [(h.memory_id, h.score) for h in before] == [(h.memory_id, h.score) for h in again]


def _model(coefs: dict[str, float]) -> RankerModel:
    n = len(FEATURES)
    return RankerModel(FEATURES, (0.0,) * n, (1.0,) * n, tuple(coefs.get(f, 0.0) for f in FEATURES), 0.0)


def test_ranker_reorders_by_its_coefficients_and_keeps_the_fused_score(memory):
    query, vec = "adopt Shelly", np.array([0.0, 1.0])
    dense = [("m2", 1.0), ("m3", 1.0), ("m4", 0.7), ("m1", 0.0)]
    base = fuse(memory, query, dense, k=10, config=BASE, query_vector=vec)
    longest = max(base, key=lambda h: len(h.text.split())).memory_id
    ranked = fuse(memory, query, dense, k=10, query_vector=vec,
                  config=dataclasses.replace(BASE, ranker=_model({"log_words": 5.0})))
    assert ranked[0].memory_id == longest != base[0].memory_id
    assert all("ranker_probability" in h.breakdown and "rrf" in h.breakdown for h in ranked)
    assert [h.score for h in ranked] == sorted((h.score for h in ranked), reverse=True)


def test_features_are_one_row_per_candidate_and_a_model_checks_its_feature_names(memory):
    rows = [[0.3, -1, "m1", {"lexical_rank": 1, "bm25": 2.0}], [0.1, -2, "m2", {"dense_rank": 1}]]
    x = features(memory, "adopt pet", np.array([1.0, 0.0]), rows, rerank.TABLES.get(memory), 5)
    assert x.shape == (2, len(FEATURES))
    col = {name: i for i, name in enumerate(FEATURES)}
    assert x[0, col["bm25_share"]] == 1.0 and x[1, col["bm25_share"]] == 0.0
    assert x[0, col["cosine"]] == pytest.approx(1.0) and x[1, col["neighbour_cosine"]] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="re-fit"):
        RankerModel(("other",), (0.0,), (1.0,), (1.0,), 0.0)


def test_chinese_queries_get_their_own_ranker_and_weigh_dense_less():
    from projections.queries.retrieval import DEFAULT_FUSION

    envs = stream(("z1", message("我喜欢在周末去爬山", "c1", speaker="小红", turn_id="D1:1")),
                  ("z2", message("周末我在家看书", "c2", speaker="小红", turn_id="D1:2")),
                  ("e1", message("I like hiking on weekends", "c3", speaker="Maya", turn_id="D1:3")))
    user = fold(ShardState(), envs).user("acme", "alice")
    zh = fuse(user, "周末爬山", [("z2", 0.9), ("z1", 0.1)], k=5, config=DEFAULT_FUSION)
    en = fuse(user, "hiking weekends", [("e1", 0.9)], k=5, config=DEFAULT_FUSION)
    assert DEFAULT_FUSION.ranker is not None and DEFAULT_FUSION.cjk_ranker is not None
    assert all("ranker_probability" in h.breakdown for h in zh + en)
    # without a Chinese model, a Chinese query is not re-ranked (unless ranker_cjk applies the English one)
    no_cjk = dataclasses.replace(DEFAULT_FUSION, cjk_ranker=None)
    assert not any("ranker_probability" in h.breakdown for h in fuse(user, "周末爬山", [("z2", 0.9), ("z1", 0.1)], k=5,
                                                                     config=no_cjk))
    english = fuse(user, "周末爬山", [("z2", 0.9), ("z1", 0.1)], k=5,
                   config=dataclasses.replace(no_cjk, ranker_cjk=True, ranker=_model({"log_words": 1.0})))
    assert all("ranker_probability" in h.breakdown for h in english)
    dense_only = dataclasses.replace(DEFAULT_FUSION, lexical_weight=0.0, episode_weight=0.0, note_weight=0.0,
                                     graph_weight=0.0, retention_weight=0.0, neighbour_weight=0.0, clause_weight=0.0,
                                         conversation_weight=0.0, context_weight=0.0)
    [z2, _] = fuse(user, "周末爬山", [("z2", 0.9), ("z1", 0.1)], k=2, config=dataclasses.replace(dense_only,
                                                                                           cjk_ranker=None))
    [e1] = fuse(user, "hiking weekends", [("e1", 0.9)], k=1, config=dataclasses.replace(dense_only, ranker=None))
    assert z2.score == pytest.approx(DEFAULT_FUSION.cjk_dense_weight / (DEFAULT_FUSION.rrf_k + 1))
    assert e1.score == pytest.approx(DEFAULT_FUSION.dense_weight / (DEFAULT_FUSION.rrf_k + 1))


def test_store_settings_round_trip_a_fusion_config_with_its_ranker():
    from palimpsest.settings import StoreSettings
    from projections.queries.retrieval import DEFAULT_FUSION

    settings = StoreSettings(fusion=dataclasses.replace(DEFAULT_FUSION, neighbour_weight=0.4))
    again = StoreSettings.from_json(settings.to_json())
    assert again.fusion == settings.fusion and isinstance(again.fusion.ranker, RankerModel)


def test_conversation_stage_lifts_every_turn_of_the_best_matching_conversation(memory):
    # "turtle" and "beach" are in no single turn together, but both are in D1's conversation (m1-m3); m4 is conv-2
    from projections.queries import session_docs

    index = session_docs.CONVERSATIONS.get(memory)
    assert sorted(len(m) for m in index.members.values()) == [1, 3]
    cfg = dataclasses.replace(BASE, conversation_weight=1.0, conversation_candidates=1)
    hits = fuse(memory, "turtle beach", [], k=10, config=cfg)
    by_id = {h.memory_id: h for h in hits}
    # m1 matches neither word but belongs to the conversation that holds both: it joins with the conversation term
    assert by_id["m1"].breakdown["conversation_rank"] == 1
    assert by_id["m1"].score == pytest.approx(1.0 / (5 + 1))
    assert "m4" not in by_id
    # with fit 1 a three-turn conversation gets a third of the term
    fitted = fuse(memory, "turtle beach", [], k=10, config=dataclasses.replace(cfg, conversation_fit=1))
    assert {h.memory_id: h for h in fitted}["m1"].score == pytest.approx(1.0 / (5 + 1) / 3)


def test_coverage_selection_moves_a_turn_with_new_content_above_a_repetition():
    from projections.queries import coverage

    envs = stream(
        ("a1", message("I cooked pasta with tomato sauce", "k1", speaker="Mel", turn_id="D1:1")),
        ("a2", message("That pasta with tomato sauce, I cooked it again", "k2", speaker="Mel", turn_id="D1:2",
                       occurred_at=T0 + timedelta(minutes=1))),
        ("a3", message("Yesterday I cooked a lentil curry", "k3", speaker="Mel", turn_id="D2:1",
                       occurred_at=T0 + timedelta(days=2))),
    )
    memory = fold(ShardState(), envs).user("acme", "alice")
    tables = rerank.TABLES.get(memory)
    rows = [[0.30, -1, "a1", {}], [0.29, -2, "a2", {}], [0.28, -3, "a3", {}]]
    kept = [list(r) for r in rows]
    coverage.select(memory, "What did Mel cook?", kept, tables, 0.0, 10)  # weight 0: off
    assert [r[2] for r in kept] == ["a1", "a2", "a3"]
    moved = [[*r[:3], {}] for r in rows]
    coverage.select(memory, "What did Mel cook?", moved, tables, 1.0, 10)
    # a2 repeats a1's pasta and sauce; a3 adds the curry: it moves up, and the scores still sort the list
    assert [r[2] for r in moved] == ["a1", "a3", "a2"]
    assert [r[0] for r in moved] == [0.30, 0.29, 0.28]
    assert moved[1][3]["coverage_from"] == 3 and moved[1][3]["coverage_redundancy"] == 0.0
    # a window of two rows is left alone
    two = [[*r[:3], {}] for r in rows[:2]]
    coverage.select(memory, "What did Mel cook?", two, tables, 1.0, 10)
    assert [r[2] for r in two] == ["a1", "a2"]


def test_list_intent_gates_the_coverage_stage_in_english_and_chinese():
    from projections.queries.coverage import list_intent

    assert list_intent("What movies have both Joanna and Nate seen?") and list_intent("有几个人在下半年过生日？")
    assert not list_intent("When did Joanna go to Woodhaven?") and not list_intent("她住在哪个城市？")


def test_prf_stage_reaches_the_turns_near_the_best_hit_that_the_query_missed():
    envs = stream(
        ("p1", message("We watched Little Women last night", "q1", speaker="Nate", turn_id="D1:1")),
        ("p2", message("Lord of the Rings is my favourite", "q2", speaker="Nate", turn_id="D2:1",
                       occurred_at=T0 + timedelta(days=1))),
        ("p3", message("My turtles need a bigger tank", "q3", speaker="Nate", turn_id="D3:1",
                       occurred_at=T0 + timedelta(days=2))),
        ("w1", embedding("p1", [0.6, 0.8, 0.0])),
        ("w2", embedding("p2", [0.0, 1.0, 0.0])),
        ("w3", embedding("p3", [0.0, 0.0, 1.0])),
    )
    memory = fold(ShardState(), envs).user("acme", "alice")
    query, vec = "what film did he like", np.array([1.0, 0.0, 0.0])
    plain = fuse(memory, query, [("p1", 0.6)], k=10, config=BASE, query_vector=vec)
    assert [h.memory_id for h in plain] == ["p1"]
    cfg = dataclasses.replace(BASE, prf_weight=0.5, prf_seeds=1, prf_candidates=1, prf_beta=1.0)
    hits = fuse(memory, query, [("p1", 0.6)], k=10, config=cfg, query_vector=vec)
    # the query moved toward p1 is nearest p2 (the other movie turn); the seed itself gets no term; one candidate
    assert [h.memory_id for h in hits] == ["p1", "p2"]
    assert hits[1].breakdown["prf_rank"] == 1 and "prf_rank" not in hits[0].breakdown
    assert hits[1].score == pytest.approx(0.5 / (cfg.rrf_k + 1))
    # gated to list questions: this one asks for one item, so nothing changes; no query vector: nothing either
    gated = dataclasses.replace(cfg, prf_lists_only=True)
    assert [h.memory_id for h in fuse(memory, query, [("p1", 0.6)], k=10, config=gated, query_vector=vec)] == ["p1"]
    assert [h.memory_id for h in fuse(memory, "what films did he like both times", [("p1", 0.6)], k=10,
                                      config=gated, query_vector=vec)] == ["p1", "p2"]
    assert [h.memory_id for h in fuse(memory, query, [("p1", 0.6)], k=10, config=cfg)] == ["p1"]


def test_a_derived_key_in_place_of_the_turns_text_skips_the_plain_search_and_the_ranker_reads_its_ranks(memory):
    from projections.queries.retrieval import lexical_key
    keyed = dataclasses.replace(BASE, fact_key=True)
    assert lexical_key(keyed, "adopt pet") == "facts" and lexical_key(BASE, "adopt pet") == "lexical"
    assert lexical_key(dataclasses.replace(BASE, cjk_subwords=True), "领养宠物") == "subwords"
    hits = fuse(memory, "adopt pet", [], k=10, config=keyed)
    assert hits and all("lexical_rank" not in h.breakdown and "bm25" not in h.breakdown for h in hits)
    assert hits[0].breakdown["facts_rank"] == 1
    rows = [[h.score, -h.provenance["seq"], h.memory_id, h.breakdown] for h in hits]
    col = {name: i for i, name in enumerate(FEATURES)}
    on_facts = features(memory, "adopt pet", None, rows, rerank.TABLES.get(memory), 5, "facts")
    on_plain = features(memory, "adopt pet", None, rows, rerank.TABLES.get(memory), 5)
    assert on_facts[0, col["lexical_term"]] == pytest.approx(1 / 6) and on_facts[0, col["bm25_share"]] == 1.0
    assert on_plain[:, col["lexical_term"]].tolist() == [0.0] * len(rows)  # no plain ranks to read


def test_the_features_added_with_the_keys_read_the_context_rank_the_top_rows_conversation_and_neighbours(memory):
    rows = [[0.5, -1, "m1", {"context_rank": 2}], [0.4, -4, "m4", {"clause_rank": 1}],
            [0.3, -2, "m2", {"conversation_term": 0.05}], [0.2, -3, "m3", {}]]
    x = features(memory, "adopt pet", None, rows, rerank.TABLES.get(memory), 5)
    col = {name: i for i, name in enumerate(FEATURES)}
    assert x[:, col["context_term"]].tolist() == [1 / 7, 0.0, 0.0, 0.0]
    assert x[:, col["clause_term"]].tolist() == [0.0, 1 / 6, 0.0, 0.0]
    assert x[:, col["conversation_term"]].tolist() == [0.0, 0.0, 0.05, 0.0]
    assert x[:, col["same_conversation_as_top"]].tolist() == [1.0, 0.0, 1.0, 1.0]  # m4 is in conv-2
    # m2 is next to m1 (a top-3 row), m3 next to m2 (top 3); m1 and m4 neighbour no top-3 row
    assert x[:, col["neighbour_of_top3"]].tolist() == [1.0, 0.0, 1.0, 1.0]
    assert x[:, col["conversation_density"]].tolist() == [0.75, 0.25, 0.75, 0.75]


def test_the_features_added_for_e5s_trees_read_questions_the_replies_to_them_and_the_names_asked_about(memory):
    rows = [[0.5, -1, "m1", {}], [0.4, -2, "m2", {}], [0.3, -3, "m3", {}], [0.2, -4, "m4", {}]]
    x = features(memory, "Did Nate adopt Shelly from a Beach shop?", None, rows, rerank.TABLES.get(memory), 5)
    col = {name: i for i, name in enumerate(FEATURES)}
    assert x[:, col["is_question"]].tolist() == [1.0, 0.0, 0.0, 0.0]  # m1 asks
    assert x[:, col["after_question"]].tolist() == [0.0, 1.0, 0.0, 0.0]  # m2 answers it (m4: another conversation)
    # the names asked about: Shelly and Beach (Nate speaks, "Did" opens the question); m2 and m3 each say one
    assert x[:, col["name_coverage"]].tolist() == [0.0, 0.5, 1.0, 0.0]
    assert x[:, col["query_log_words"]].tolist() == [pytest.approx(np.log1p(8))] * 4
    lower = features(memory, "adopt pet", None, rows, rerank.TABLES.get(memory), 5)
    assert not lower[:, col["name_coverage"]].any()  # no name asked about


def test_a_model_reads_its_own_subset_of_the_features_by_name(memory):
    rows = [[0.5, -1, "m1", {}], [0.4, -4, "m4", {}], [0.3, -2, "m2", {}]]
    x = features(memory, "adopt pet", None, rows, rerank.TABLES.get(memory), 5)
    subset = RankerModel(("log_words", "coverage"), (0.0, 0.0), (1.0, 2.0), (0.5, 1.0), 0.1)
    full = _model({"log_words": 0.5, "coverage": 0.5})
    assert subset.logits(x) == pytest.approx(full.logits(x) + 0.1)
    with pytest.raises(ValueError, match="re-fit"):
        RankerModel(("log_words", "log_words"), (0.0, 0.0), (1.0, 1.0), (1.0, 1.0), 0.0)


def test_context_candidates_bounds_the_context_list(memory):
    cfg = dataclasses.replace(BASE, context_weight=1.0, lexical_weight=0.0)
    assert len([h for h in fuse(memory, "adopt", [], k=10, config=cfg) if "context_rank" in h.breakdown]) == 3  # m1, m2 (next to m1), m4
    few = fuse(memory, "adopt", [], k=10, config=dataclasses.replace(cfg, context_candidates=1))
    assert [h.breakdown["context_rank"] for h in few if "context_rank" in h.breakdown] == [1]


def test_a_chinese_query_is_reordered_at_most_as_deep_as_its_rankers_depth():
    from projections.queries.stages.ranker import depth_for

    deep = dataclasses.replace(BASE, ranker_depth=30, cjk_ranker_depth=25)
    assert depth_for(deep, "What did Nate adopt?") == 30
    assert depth_for(deep, "王芳用什么编辑器？") == 25
    assert depth_for(dataclasses.replace(deep, cjk_ranker_depth=None), "王芳用什么编辑器？") == 30
    assert depth_for(dataclasses.replace(deep, ranker_depth=10), "王芳用什么编辑器？") == 10  # a smaller depth bounds both
    envs = stream(*[(f"z{i}", message(f"周末爬山{i}", f"c{i}", speaker="小红", turn_id=f"D1:{i}")) for i in range(1, 4)])
    user = fold(ShardState(), envs).user("acme", "alice")
    dense = [("z1", 0.9), ("z2", 0.5), ("z3", 0.1)]
    reverse = dataclasses.replace(BASE, cjk_ranker=_model({"fused_rank_inv": -5.0}), ranker_depth=3)
    reversed_ = [h.memory_id for h in fuse(user, "周末爬山", dense, 3, reverse)]
    two = [h.memory_id for h in fuse(user, "周末爬山", dense, 3, dataclasses.replace(reverse, cjk_ranker_depth=2))]
    assert reversed_ == ["z3", "z2", "z1"] and two == ["z2", "z1", "z3"]  # only the best two re-ordered
