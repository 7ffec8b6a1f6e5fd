"""The offline usage judge: a retrieved memory counts as used only when the reply draws on its content terms."""

from __future__ import annotations

import pytest

from projections.rules.usage import MAX_TERMS, USAGE_THRESHOLD, judge_usage, usage_score

NOTES = [
    ("pg", "The project uses PostgreSQL"),
    ("home", "The user lives in Berlin"),
    ("hotpot", "The user loves spicy hotpot"),
]


def test_english_reply_uses_only_the_notes_it_repeats():
    reply = "Since the project is on PostgreSQL, psycopg is the driver to install."
    assert judge_usage(reply, NOTES) == [("pg", 1.0)]


def test_half_of_a_two_term_note_is_enough_and_results_are_best_first():
    reply = "There is a great spicy hotpot place near Berlin's Alexanderplatz."
    assert judge_usage(reply, NOTES) == [("hotpot", 1.0), ("home", 0.5)]


def test_a_reply_about_something_else_uses_nothing():
    assert judge_usage("The weather is sunny today, enjoy the walk!", NOTES) == []
    assert judge_usage("", NOTES) == [] and judge_usage("PostgreSQL", []) == []


def test_chinese_reply_and_jieba_segmentation():
    items = [("coffee", "用户喜欢喝咖啡"), ("db", "决定：改用 MySQL"), ("home", "用户住在北京")]
    assert usage_score("要不要来一杯咖啡？", "用户喜欢喝咖啡") == 1.0  # 咖啡 ⊂ 喝咖啡
    assert judge_usage("要不要来一杯咖啡？", items) == [("coffee", 1.0)]
    assert judge_usage("MySQL 的连接池可以这样配置。", items) == [("db", 1.0)]
    assert judge_usage("北京今天下雨，出门记得带伞。", items) == [("home", 0.5)]  # terms 住, 北京


def test_seed_002_cat_note_while_talking_about_the_weather_is_not_used():
    # The assistant addresses the user as 主人 whatever it talks about: that word is no evidence.
    weather, cat = "主人，今天天气不错，适合出门散步。", "主人，你的猫今天怎么样？"
    items = [("cat", "主人喜欢猫")]
    assert judge_usage(weather, items, ignore=["主人"]) == []
    assert judge_usage(cat, items, ignore=["主人"]) == [("cat", 1.0)]
    assert judge_usage(weather, items) == [("cat", 0.5)]  # without ignore, the address alone reaches 0.5


def test_long_messages_need_two_of_their_terms():
    message = ("trip", "I went hiking in the Alps last weekend with my sister")
    assert MAX_TERMS == 4 and USAGE_THRESHOLD == 0.5
    assert judge_usage("How was the trip to the Alps with your sister?", [message]) == [("trip", 0.5)]
    assert judge_usage("The Alps are beautiful in May.", [message]) == []  # 1 / 4


@pytest.mark.parametrize(("threshold", "expected"), [(0.5, ["hotpot", "home"]), (0.75, ["hotpot"]), (1.01, [])])
def test_the_threshold_is_a_parameter(threshold, expected):
    reply = "There is a great spicy hotpot place near Berlin's Alexanderplatz."
    assert [i for i, _ in judge_usage(reply, NOTES, threshold=threshold)] == expected
