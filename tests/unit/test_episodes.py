"""Episodes and their summaries: seed 000's acceptance tests adapted, hard boundaries, caps, the centroid, and
incremental == batch at every split point. Embeddings are hand-made unit vectors (tests/episode_builders.py).
"""

from __future__ import annotations

import pickle
from dataclasses import replace
from datetime import timedelta

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from events.errors import InvalidInputError
from events.model import MessageRecorded
from projections.folds.episodes import (
    DEFAULT_SEGMENTATION,
    HARD_REASONS,
    EpisodeState,
    SegmentationConfig,
    SegmentationMismatchError,
    fold,
)
from projections.queries.summaries import SummaryConfig, language_of, split_sentences
from tests.builders import T0, stream
from tests.episode_builders import (
    A,
    B,
    Turn,
    X,
    batch_segment,
    events_of,
    on,
    summarised,
    unit,
)


def segment(*turns: Turn, config: SegmentationConfig = DEFAULT_SEGMENTATION) -> list:
    return fold(EpisodeState(), stream(*events_of(*turns)), config).episodes()


def ids(episodes) -> list[list[str]]:
    return [list(ep.member_ids) for ep in episodes]


# -- seed 000's acceptance tests, adapted ---------------------------------------

DB_TOPIC = ["帮我设计数据库表结构,需要存用户信息", "好的,用户表需要 id, name, email 字段", "还需要存用户的登录时间和 IP"]
LUNCH_TOPIC = ["我们聊聊今天的午饭吧,想吃火锅", "火锅不错!推荐川式鸳鸯锅", "那就去吃川式鸳鸯锅吧,我订位子"]


def test_two_clearly_different_topics_give_two_episodes():
    turns = [Turn(t, A, at=i) for i, t in enumerate(DB_TOPIC)] + [Turn(t, B, at=3 + i) for i, t in enumerate(LUNCH_TOPIC)]
    episodes = segment(*turns)
    assert ids(episodes) == [["m00", "m01", "m02"], ["m03", "m04", "m05"]]
    assert [ep.reason for ep in episodes] == ["start", "topic_shift"]


def test_seed_data_as_written_splits_at_its_two_hour_gap():
    times = [0, 1, 2, 120, 121]  # 10:00, 10:01, 10:02, 12:00, 12:01 as in seed 000
    turns = [Turn(t, A, at=m) for t, m in zip(DB_TOPIC, times[:3])] + [Turn(t, B, at=m) for t, m in zip(LUNCH_TOPIC, times[3:])]
    assert [ep.reason for ep in segment(*turns)] == ["start", "time_gap"]


def test_a_two_hour_gap_opens_an_episode_even_on_the_same_topic():
    episodes = segment(*on(A, 3), *on(A, 3, start=2 + 120))
    assert len(episodes) >= 2
    assert episodes[1].reason == "time_gap" and episodes[1].episode_id == "m03"


def test_a_gap_of_exactly_the_limit_is_not_a_gap():
    assert len(segment(*on(A, 2), *on(A, 2, start=1 + 60))) == 1


def test_a_one_message_episode_is_merged_into_the_previous_one():
    episodes = segment(*on(A, 3), Turn("off topic", X, at=3), *on(B, 3, start=4))
    assert ids(episodes) == [["m00", "m01", "m02", "m03"], ["m04", "m05", "m06"]]
    assert all(ep.size > 1 for ep in episodes)


def test_a_lone_digression_inside_a_topic_does_not_split_it():
    episodes = segment(*on(A, 3), Turn("off topic", X, at=3), *on(A, 3, start=4))
    assert len(episodes) == 1 and episodes[0].size == 7


def test_consecutive_message_windows_split_off_the_digression_then_merge_it():
    config = SegmentationConfig(window=1)
    episodes = segment(*on(A, 3), Turn("off topic", X, at=3), *on(A, 3, start=4), config=config)
    assert ids(episodes) == [["m00", "m01", "m02", "m03"], ["m04", "m05", "m06"]]


# -- hard boundaries and the cap -----------------------------------------------


def test_a_system_message_forces_a_boundary_on_an_unchanged_topic():
    turns = on(A, 3) + [Turn("You are now a travel agent.", A, at=3, role="system"),
                        Turn("Tools: search_flights.", A, at=3, role="system")] + on(A, 2, start=4)
    episodes = segment(*turns)
    assert ids(episodes) == [["m00", "m01", "m02"], ["m03", "m04", "m05", "m06"]]
    assert episodes[1].reason == "role_reset"


def test_a_hard_boundary_is_never_undone_by_merging():
    episodes = segment(*on(A, 3), Turn("reset", A, at=3, role="system"), Turn("new", A, at=4, conversation_id="conv-2"))
    assert [(ep.reason, ep.size) for ep in episodes] == [("start", 3), ("role_reset", 1), ("conversation_change", 1)]


def test_topic_windows_stop_at_a_hard_boundary():
    # Were the window before B3 allowed to reach back over the gap, (X, X, B) against (B, B, B) would split at B4.
    episodes = segment(*on(X, 3), *on(B, 4, start=100), config=SegmentationConfig(topic_threshold=0.5))
    assert [(ep.reason, ep.size) for ep in episodes] == [("start", 3), ("time_gap", 4)]


def test_markers_force_a_boundary():
    config = SegmentationConfig(boundary_markers=("/new",))
    turns = on(A, 2) + [Turn("/new let us start over", A, at=2), Turn("flagged", A, at=3, metadata={"episode_boundary": True})]
    assert [ep.reason for ep in segment(*turns, config=config)] == ["start", "marker", "marker"]


def test_max_size_caps_an_episode():
    episodes = segment(*on(A, 7), config=SegmentationConfig(min_size=2, max_size=3))
    assert [(ep.reason, ep.size) for ep in episodes] == [("start", 3), ("max_size", 3), ("max_size", 1)]
    assert [ep.is_open for ep in episodes] == [False, False, True]


def test_a_small_episode_stays_apart_when_merging_would_exceed_the_cap():
    config = SegmentationConfig(window=1, min_size=2, max_size=3)
    episodes = segment(*on(A, 3), Turn("x", X, at=3), *on(B, 2, start=4), config=config)
    assert [ep.size for ep in episodes] == [3, 1, 2]


# -- provenance, centroid, incremental behaviour ---------------------------------


def test_an_episode_keeps_provenance_to_its_turns_and_its_time_span():
    ep = segment(*on(A, 3, start=5))[0]
    assert ep.episode_id == "m00" and ep.turn_ids == ("t0", "t1", "t2") and ep.conversation_ids == ("conv-1",)
    assert ep.span == (T0 + timedelta(minutes=5), T0 + timedelta(minutes=7))


def test_the_centroid_is_the_normalised_mean_of_the_member_vectors():
    ep = segment(Turn("a", unit(1, 0)), Turn("b", unit(1, 1), at=1), Turn("c", None, at=2))[0]
    expected = unit(1, 0) + unit(1, 1)
    np.testing.assert_allclose(ep.centroid, expected / np.linalg.norm(expected), rtol=1e-6)
    assert ep.centroid.dtype == np.float32 and np.linalg.norm(ep.centroid) == pytest.approx(1.0, abs=1e-6)
    assert segment(Turn("no vector", None))[0].centroid is None


def test_a_message_extends_the_open_episode_until_its_window_settles_a_boundary():
    evs = stream(*events_of(*on(A, 3), *on(B, 3, start=3)))
    state = fold(EpisodeState(), evs[:8], SegmentationConfig())  # up to m03 recorded and embedded
    assert ids(state.episodes()) == [["m00", "m01", "m02", "m03"]] and state.episodes()[0].is_open
    state = fold(state, evs[8:], SegmentationConfig())
    assert ids(state.episodes()) == [["m00", "m01", "m02"], ["m03", "m04", "m05"]]


def test_an_embedding_recorded_after_the_next_message_is_ignored():
    pairs = events_of(*on(A, 3), *on(B, 3, start=3))
    at = [eid for eid, _ in pairs].index("e03")
    pairs.insert(at + 1, pairs.pop(at))  # e03 now comes after m04
    ep = fold(EpisodeState(), stream(*pairs), SegmentationConfig()).episodes()
    assert ids(ep) == [["m00", "m01", "m02"], ["m03", "m04", "m05"]]  # m03's window still holds B vectors
    assert len(ep[1].members) == 3 and ep[1].members[0].vector is None


def test_another_config_is_refused_and_a_bad_config_says_what_to_fix():
    state = fold(EpisodeState(), stream(*events_of(*on(A, 2))), SegmentationConfig())
    with pytest.raises(SegmentationMismatchError, match="re-project"):
        fold(state, stream(*events_of(*on(A, 1)), first_seq=5), SegmentationConfig(window=2))
    with pytest.raises(InvalidInputError, match="min_size"):
        SegmentationConfig(min_size=5, max_size=3)


# -- incremental == batch ------------------------------------------------------


MIXED = (on(A, 3) + [Turn("x", X, at=3)] + on(B, 3, start=4) + [Turn("sys", B, at=7, role="system")]
         + on(A, 2, start=8) + [Turn("no vector", None, at=10)] + on(B, 4, start=200) + on(A, 2, start=205))
SMALL = SegmentationConfig(window=2, min_size=2, max_size=4)


@pytest.mark.parametrize("config", [SegmentationConfig(), SMALL, SegmentationConfig(window=1, min_size=3, max_size=5)])
def test_every_prefix_folds_to_the_batch_segmentation_of_that_prefix(config):
    evs = stream(*events_of(*MIXED))
    for k in range(len(evs) + 1):
        live = fold(EpisodeState(), evs[:k], config).episodes()
        assert [e.canonical() for e in live] == [e.canonical() for e in batch_segment(evs[:k], config)], k


@pytest.mark.parametrize("config", [SegmentationConfig(), SMALL])
def test_a_fold_resumed_from_a_snapshot_at_any_split_equals_one_fold(config):
    evs = stream(*events_of(*MIXED))
    whole = fold(EpisodeState(), evs, config).canonical()
    for k in range(len(evs) + 1):
        snapshot = pickle.loads(pickle.dumps(fold(EpisodeState(), evs[:k], config)))
        assert fold(snapshot, evs[k:], config).canonical() == whole, k


TURNS = st.builds(
    Turn,
    text=st.just("t"),
    vector=st.sampled_from([A, B, X, unit(1, 1), None]),
    at=st.sampled_from([0.0, 1.0, 30.0, 90.0]),  # minutes after the previous turn
    role=st.sampled_from(["user", "assistant", "system"]),
    conversation_id=st.sampled_from(["c1", "c1", "c1", "c2"]),
)
CONFIGS = st.builds(SegmentationConfig, window=st.integers(1, 3), min_size=st.integers(1, 3), max_size=st.integers(3, 6),
                    topic_threshold=st.sampled_from([0.3, 0.5, 0.8]))


@given(st.lists(TURNS, max_size=14), CONFIGS, st.booleans())
def test_random_streams_fold_to_the_batch_segmentation_at_every_prefix(turns, config, late_embeddings):
    clock, timed = 0.0, []
    for t in turns:
        clock += t.at
        timed.append(replace(t, at=clock))
    pairs = events_of(*timed)
    if late_embeddings:  # move every other embedding behind the next message
        for i in range(len(pairs) - 2, 0, -1):
            if pairs[i][0].startswith("e") and int(pairs[i][0][1:]) % 2 == 0 and pairs[i + 1][0].startswith("m"):
                pairs[i], pairs[i + 1] = pairs[i + 1], pairs[i]
    evs = stream(*pairs)
    state = EpisodeState()
    for k, env in enumerate(evs, start=1):
        live = (state := fold(state, [env], config)).episodes()
        assert [e.canonical() for e in live] == [e.canonical() for e in batch_segment(evs[:k], config)]
        assert sum(e.size for e in live) == sum(isinstance(e.event, MessageRecorded) for e in evs[:k])
        assert all(e.size <= config.max_size for e in live)
        assert all(e.reason in HARD_REASONS | {"topic_shift", "max_size"} for e in live)


# -- summaries -----------------------------------------------------------------

EN_CORPUS = [
    "I think we should go to the park this weekend.",
    "The weather is nice, I think.",
    "I need a break.",
    "Did you watch the game last night? I think it was great.",
]
EN_EPISODE = [
    ("Alice", "I think we need a database schema for the users. Anyway, hello."),
    ("Bob", "The users table needs an id, a name and an email column."),
    ("Alice", "I think that is fine."),
    ("Bob", "We should also index the email column of the users table for the login query."),
]
ZH_CORPUS = ["我觉得今天天气不错。", "我觉得周末可以去公园。", "我需要休息一下。", "你需要什么?"]
ZH_EPISODE = [
    (None, "帮我设计数据库表结构,需要存用户信息。我觉得可以。"),
    (None, "好的,用户表需要 id, name, email 字段。"),
    (None, "还需要存用户的登录时间和 IP,数据库要加索引。"),
]


def test_an_english_summary_picks_the_salient_keywords_and_sentences():
    s = summarised(EN_CORPUS, EN_EPISODE)
    assert s.language == "en" and s.episode_id == "m00"
    # "users" thrice; column, email, table twice (ties alphabetical); "think" and "need" are said all over the corpus
    assert s.keywords[:4] == ("users", "column", "email", "table") and "think" not in s.keywords
    assert s.title == "Users, column, email" and s.source_ids == ("m01", "m03")
    assert s.sentences[0] == "Bob: The users table needs an id, a name and an email column."
    assert s.sentences[1].startswith("Bob: We should also index the email column") and len(s.sentences[1]) <= 125


def test_a_chinese_summary_stays_chinese_and_quotes_its_sentences():
    s = summarised(ZH_CORPUS, ZH_EPISODE)
    # 需要 and 觉得 are common in the user's corpus; 数据库 is rarer than 用户 in general Chinese
    assert s.language == "zh" and s.keywords[:2] == ("数据库", "用户") and "觉得" not in s.keywords
    assert s.title.startswith("数据库、用户、")
    assert s.sentences == ("帮我设计数据库表结构,需要存用户信息。", "还需要存用户的登录时间和 IP,数据库要加索引。")
    assert s.text == "".join(s.sentences)


def test_general_chinese_keeps_function_words_out_of_a_title_when_the_corpus_is_too_small_to_tell():
    episode = [(None, "这个周末我们俱乐部要去黄山爬山,我负责做饭。"), (None, "我最喜欢四川菜,麻婆豆腐一定要做。不过我不吃香菜。")]
    assert summarised([], episode).keywords[:2] == ("四川菜", "麻婆豆腐")
    assert summarised([], episode, config=SummaryConfig(chinese_background_idf=False)).keywords[0] == "一定"


def test_long_sentences_are_cut_without_splitting_an_english_word():
    config = SummaryConfig(sentence_chars=30, sentences=1, with_speaker=False)
    episode = [("Bob", "We should also index the email column of the users table for the login query.")] * 2
    assert summarised(EN_CORPUS, episode, config=config).sentences == ("We should also index the…",)
    zh = summarised(ZH_CORPUS, [(None, "还需要存用户的登录时间和 IP,数据库要加索引。")] * 2, config=SummaryConfig(sentence_chars=10))
    assert zh.sentences[0] == "还需要存用户的登录…"  # 9 characters and the ellipsis: 10 in all


def test_centrality_breaks_a_tie_between_equally_salient_sentences():
    episode = [(None, "Kayak trip."), (None, "Kayak trip."), (None, "Kayak trip.")]
    s = summarised([], episode, vectors=[X, A, A])
    assert s.source_ids == ("m01", "m02")


def test_sentences_and_language_helpers():
    assert split_sentences("One. Two? 三。四!\nFive") == ["One.", "Two?", "三。", "四!", "Five"]
    assert language_of(["好的,用户表需要 id, name, email 字段"]) == "zh"
    assert language_of(["The users table needs an id 字段"]) == "en"
