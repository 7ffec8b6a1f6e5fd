"""The graph rules' memo of clause tags: the same first word and tag as jieba's tagger, the same readings with the
memo cold or warm, and emptied with the other text memos (an erasure keeps no copy of the texts)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import jieba.posseg as posseg

import projections.rules.graph_chinese as graph_chinese
from projections.rules.extraction import forget_text_caches
from projections.rules.graph_extract import extract_graph_memories

REF = datetime(2023, 5, 10, 14, 0, tzinfo=timezone(timedelta(hours=8)))
# Clauses that open with a name, a verb jieba tags (not in the verb table), an unknown word (the HMM's part), a
# pronoun, punctuation or Latin text; and turns whose clauses are tagged twice (no name opens them).
CLAUSES = ["小明喜欢打篮球", "丽丽上周五生了一个宝宝", "张伟去了医院", "参观了博物馆", "收拾房间", "喵喵叫了一整晚",
           "他们也来了", "，然后吃了火锅", "Python很好用", "", "了", "王小二今天加班到很晚"]
TURNS = ["我昨天去了瑜伽课，然后收拾房间。", "小明喜欢打篮球", "我妹妹丽丽上周五生了一个宝宝", "昨天晚上我和老公去看了一场电影，然后吃了火锅。",
         "张伟说他下周要去北京出差，参观了博物馆。", "我每天跑步", "喵喵叫了一整晚，我觉得这只猫很吵"]


def _plain(text: str):
    first = next(posseg.cut(text), None)
    return None if first is None else (first.word, first.flag)


def _tag(text: str):
    first = graph_chinese._first_tag(text)
    return None if first is None else (first.word, first.flag)


def _readings() -> list[list]:
    return [extract_graph_memories(turn, speaker="小红", occurred_at=REF) for turn in TURNS]


def test_memoised_tag_is_jiebas_first_word_cold_and_warm() -> None:
    graph_chinese.tag_cache_clear()
    cold = [_tag(text) for text in CLAUSES]
    warm = [_tag(text) for text in CLAUSES]
    assert cold == warm == [_plain(text) for text in CLAUSES]
    assert graph_chinese._first_tag.cache_info().hits >= len(CLAUSES)


def test_readings_are_the_same_with_the_memo_cold_or_warm() -> None:
    graph_chinese.tag_cache_clear()
    cold = _readings()
    assert graph_chinese._first_tag.cache_info().currsize > 0
    assert _readings() == cold  # every tag from the memo
    graph_chinese.tag_cache_clear()
    assert _readings() == cold


def test_forgetting_the_text_caches_empties_the_tags() -> None:
    _readings()
    forget_text_caches()
    assert graph_chinese._first_tag.cache_info().currsize == 0
