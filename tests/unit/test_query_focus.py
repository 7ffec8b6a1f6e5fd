"""A rambling query is read from its explicit pivot on (projections.rules.query_focus) by the fusion's text stages."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from projections.folds.state import ShardState, fold
from projections.queries.retrieval import DEFAULT_FUSION, fuse
from projections.rules.query_focus import focus
from tests.builders import message, stream


def test_the_text_after_the_first_pivot_is_kept():
    noisy = "今天天气真好，适合散步。对了，我想问，那个持续时间是九个周的活动，主要内容是什么？"
    assert focus(noisy) == "那个持续时间是九个周的活动，主要内容是什么？"
    two = "搞错了，我实际想问的问题是：我居住的小区怎么样？抱歉哈，我真正想问的是这个，地点是什么？"
    assert focus(two) == "我居住的小区怎么样？抱歉哈，我真正想问的是这个，地点是什么？"  # the second question stays
    english = "Lovely weather today, the dog is fine. Anyway, what I really want to know is: where is the meeting?"
    assert focus(english) == "where is the meeting?"
    assert focus("My real question is, who came to the party?") == "who came to the party?"


def test_queries_without_a_pivot_or_with_nothing_after_it_are_left_whole():
    for query in ("When did Caroline go to the LGBTQ support group?", "那个兴趣爱好是集邮的人，邮箱地址是什么？",
                  "等等，诶，等等，我喜欢的家电怎么样？", "", "我想问", "what I really want to ask is: ok"):
        assert focus(query) == query


def test_the_lexical_lists_read_the_focused_query_and_the_flag_turns_it_off():
    texts = ["今天天气真好，阳光明媚，适合散步，天气不错", "航空服务创新交流会的地点是南京"]
    state = fold(ShardState(), stream(*((f"m{i}", message(text, f"c{i}")) for i, text in enumerate(texts))))
    memory = state.user("acme", "alice")
    query = "今天天气真好，阳光明媚，适合散步。抱歉哈，我真正想问的是，那个交流会的地点是什么？"
    ranked = {}
    for name, config in (("focus", DEFAULT_FUSION), ("whole", replace(DEFAULT_FUSION, query_focus=False))):
        hits = fuse(memory, query, [], 2, replace(config, ranker=None, cjk_ranker=None), np.zeros(384, np.float32))
        ranked[name] = [memory.messages.by_id[h.memory_id].text for h in hits]
    assert ranked["focus"][0] == texts[1]
    assert ranked["whole"][0] == texts[0]  # the chat before the pivot outweighs the question when read whole
