"""The second pass for list questions (projections.queries.list_expand), on folded memories (pure, no Ray)."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest

from projections.folds.state import ShardState, fold
from projections.queries import list_expand, rerank
from projections.queries.list_expand import ListExpandConfig
from projections.queries.retrieval import DEFAULT_FUSION, FusionConfig, fuse
from projections.rules.text import query_tokens
from tests.builders import STAGES_OFF, T0, message, stream

BASE = FusionConfig(episode_weight=0.0, note_weight=0.0, graph_weight=0.0, retention_weight=0.0, cjk_ranker=None,
                    **STAGES_OFF)
ON = ListExpandConfig(weight=0.2, seeds=2, terms=4, min_seeds=2, candidates=10)


def _memory(turns: list[tuple[str, str, str]]):
    envs = stream(*((f"m{i}", message(text, f"c{i}", speaker=speaker, turn_id=f"D1:{i}",
                                      occurred_at=T0 + timedelta(minutes=i)))
                    for i, (speaker, text) in enumerate(turns, start=1)))
    return fold(ShardState(), envs).user("acme", "alice")


@pytest.fixture
def books():
    return _memory([
        ("Tim", "I read a fantasy book about dragons and wizards last week"),
        ("Tim", "That fantasy book series with the wizards is my favourite"),
        ("Tim", "Finished The Hobbit yesterday, such a good fantasy story about wizards"),
        ("John", "My coach says fantasy football is not a sport, wizards or not"),
        ("Tim", "The weather in London was rainy all week"),
        ("John", "I scored twenty points in the game tonight"),
    ])


def test_a_list_question_brings_in_the_turns_that_share_the_found_turns_words(books):
    query = "What books has Tim read?"
    plain = [h.memory_id for h in fuse(books, query, [], k=10, config=BASE)]
    assert plain[:2] == ["m1", "m2"] and plain.index("m3") > plain.index("m5")  # The Hobbit: only "Tim" matches
    seeds = ["m1", "m2"]
    extra = list_expand.expansion_terms(books, set(query_tokens(query)), seeds, rerank.TABLES.get(books),
                                        4, 2)
    assert set(extra) == {"fantasy", "wizard"}  # terms as the index holds them (stemmed)
    hits = fuse(books, query, [], k=10, config=dataclasses.replace(BASE, list_expansion=ON))
    by_id = {h.memory_id: h for h in hits}
    assert by_id["m3"].breakdown["list_expand_rank"] == 1  # no query word but "Tim", both of the seeds' words
    assert [h.memory_id for h in hits].index("m3") < plain.index("m3")
    assert by_id["m3"].score == pytest.approx(dict(zip(plain, fuse(books, query, [], k=10, config=BASE)))["m3"].score
                                              + ON.weight / (BASE.rrf_k + 1))
    # Tim is named: John's turn with the same words gets nothing, and the seeds themselves are skipped
    assert "m4" not in by_id or "list_expand_rank" not in by_id["m4"].breakdown
    assert all("list_expand_rank" not in by_id[m].breakdown for m in seeds)


def test_the_speaker_filter_can_be_switched_off(books):
    cfg = dataclasses.replace(BASE, list_expansion=dataclasses.replace(ON, speaker_only=False))
    by_id = {h.memory_id: h for h in fuse(books, "What books has Tim read?", [], k=10, config=cfg)}
    assert "list_expand_rank" in by_id["m4"].breakdown


def test_a_question_without_list_intent_or_a_stage_at_weight_zero_is_unchanged(books):
    def ranked(query, cfg):
        return [(h.memory_id, h.score) for h in fuse(books, query, [], k=10, config=cfg)]

    on = dataclasses.replace(BASE, list_expansion=ON)
    assert ranked("Did Tim like the book?", on) == ranked("Did Tim like the book?", BASE)
    off = dataclasses.replace(BASE, list_expansion=dataclasses.replace(ON, weight=0.0))
    assert ranked("What books has Tim read?", off) == ranked("What books has Tim read?", BASE)


def test_a_chinese_list_question_expands_through_the_seeds_shared_words():
    memory = _memory([
        ("我", "我喜欢的运动是游泳，每周都去健身房"),
        ("我", "我还喜欢跑步这项运动，跑完在健身房拉伸"),
        ("我", "上周六在健身房练了一个小时拳击"),
        ("我", "今天午饭吃了牛肉面，我很喜欢"),
        ("我", "周末和朋友去看了电影"),
    ])
    query = "我喜欢哪些运动？"
    assert list_expand.list_question(query)
    plain = [h.memory_id for h in fuse(memory, query, [], k=10, config=BASE)]
    assert plain[:2] == ["m1", "m2"] and "m3" not in plain  # 拳击 in the 健身房: no word of the question
    hits = fuse(memory, query, [], k=10, config=dataclasses.replace(BASE, list_expansion=ON))
    ranked = [h.memory_id for h in hits]
    assert "m3" in ranked  # a new row: the stage found it, no list of the first pass did
    assert "list_expand_rank" in hits[ranked.index("m3")].breakdown  # both seeds say 健身房


def test_the_default_runs_the_stage_and_the_ablation_does_not():
    from benchmarks.variants import VARIANTS
    assert DEFAULT_FUSION.list_expansion.weight > 0
    assert VARIANTS["palimpsest_no_list_expand"].list_expansion.weight == 0
