"""The offline Feedback Judge (feedback-rules-v2, seed 003 §4): a table of user turns and verdicts, EN and ZH."""

from __future__ import annotations

import pytest

from projections.rules.feedback import judge

# (user turn, type, targets, action hints)
CASES = [
    ("No, that's wrong.", "negative", ("final_answer",), ("penalty",)),
    ("That's not what I asked", "negative", ("final_answer",), ("penalty",)),
    ("不对，答案错了", "negative", ("final_answer",), ("penalty",)),
    ("你搞错了", "negative", ("final_answer",), ("penalty",)),
    # a correction that says a remembered fact is stale: invalidate
    ("I told you I don't eat cilantro", "negative", ("final_answer",), ("invalidate",)),
    ("我说过我不吃香菜", "negative", ("final_answer",), ("invalidate",)),
    ("I don't work there any more", "negative", ("final_answer",), ("invalidate",)),
    ("我早就换工作了", "negative", ("final_answer",), ("invalidate",)),  # a change long ago: 早就 + a change verb
    ("不对，我早就搬家了", "negative", ("final_answer",), ("invalidate", "penalty")),
    ("Your reasoning is flawed", "negative", ("reasoning",), ("penalty",)),
    ("这个推理不对", "negative", ("reasoning",), ("penalty",)),
    ("Too long, be more concise", "negative", ("style",), ("prefer",)),
    ("太长了，简短一点", "negative", ("style",), ("prefer",)),
    ("Don't use the search tool for this", "negative", ("tool_choice",), ("prefer",)),
    ("别用搜索，改用计算器", "negative", ("tool_choice",), ("prefer",)),
    ("Thanks, that's exactly what I needed!", "positive", ("final_answer",), ("prefer",)),
    ("太好了，就是这个", "positive", ("final_answer",), ("prefer",)),
    ("not bad", "positive", ("final_answer",), ("prefer",)),
    ("不错，谢谢", "positive", ("final_answer",), ("prefer",)),
    ("Thanks, but the date is wrong again", "mixed", ("final_answer",), ("penalty", "prefer")),
    ("谢谢，不过名字错了", "mixed", ("final_answer",), ("penalty", "prefer")),
    # not feedback
    ("What's the weather in Paris tomorrow?", "neutral", (), ()),
    ("no problem", "neutral", (), ()),
    ("没问题", "neutral", (), ()),
    ("I moved to Berlin last year", "neutral", (), ()),
    ("明天我们去爬山吧", "neutral", (), ()),
    ("我早就想去日本了", "neutral", (), ()),  # 早就 without a change verb: a wish, not a correction
]


@pytest.mark.parametrize(("text", "kind", "targets", "hints"), CASES, ids=[c[0][:24] for c in CASES])
def test_verdict_table(text, kind, targets, hints):
    verdict = judge(text)
    assert (verdict.type, verdict.targets, verdict.action_hints) == (kind, targets, hints)
    assert verdict.detected == (kind != "neutral")
    assert 0.0 <= verdict.confidence <= 1.0
    assert all(":" in cue for cue in verdict.cues)


def test_a_span_is_read_once_so_a_negative_is_not_also_positive():
    assert judge("不对的").type == "negative"  # "不对" holds the "对" of the positive "对的"
    assert judge("not bad").cues == ("negated-negative:not bad",)


def test_more_cues_more_confidence_and_mixed_is_unsure():
    assert judge("No, that's wrong, not what I asked").confidence > judge("that's wrong").confidence
    assert judge("Thanks, but that's wrong").confidence == 0.6
    assert judge("same text") == judge("same text")  # deterministic
