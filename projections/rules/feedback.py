"""The offline Feedback Judge (``feedback-rules-v2``, seed 003 §4): the user's reaction to the agent, EN and ZH.

It reads the user's turn that answers an agent reply and says whether it is
feedback, of which type (negative / positive / mixed, or neutral: none), how
sure it is, what it is about (``final_answer``, ``reasoning``, ``style``,
``tool_choice``) and what a dispatcher might do (``penalty``: the memories
behind the reply ranked lower; ``invalidate``: a memory is stale — "I told you
I don't eat cilantro", "我说过我不吃香菜", "我早就搬家了" (a change "long ago": 早就 with a verb of
moving, changing, quitting); ``prefer``: keep doing this, or do it
that way). Cue tables, not a model: the same text always gives the same
verdict, and every matched cue is reported.

Polite fillers ("no problem", "没问题") count as nothing; a span read as one
cue is not read again by another ("不对" is negative, and its "对" is not the
"对的" of a positive answer; "not bad" is positive, not "bad").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

JUDGE_ID = "feedback-rules-v2"
MIXED_CONFIDENCE = 0.6
EXTRA_CUE_BONUS = 0.05
MAX_CONFIDENCE = 0.95

# (name, polarity, target, hint, strength, pattern). Earlier rows claim their span first.
_I = re.IGNORECASE
_TABLE: tuple[tuple[str, str | None, str, str, float, str], ...] = (
    # fillers: read, then ignored
    ("filler", None, "final_answer", "", 0.0,
     r"\bno (?:problem|worries|rush)\b|\bnot a problem\b|没问题|没关系|不客气|不用谢"),
    ("negated-negative", "positive", "final_answer", "prefer", 0.7, r"\bnot (?:bad|wrong)\b|\bnothing wrong\b"),
    # a correction that says a remembered fact is stale
    ("stale", "negative", "final_answer", "invalidate", 0.9,
     r"\bi (?:already |just )?(?:told|said to) you\b|\b(?:don'?t|doesn'?t|not|never) (?:\w+ ){0,3}any ?more\b|"
     r"\bi (?:already )?(?:said|mentioned) (?:that )?(?:before|already|"
     r"earlier)\b|\bnot any ?more\b|\bno longer\b|\bthat(?:'s| is) (?:outdated|out of date|old news)\b|"
     r"\bthat changed\b|我(?:已经|早就|之前|刚才)?(?:说|讲|告诉)过(?:你)?|早就不|已经不再|现在不(?:再)?|过时了|"
     r"早就(?:搬|换|改|变|分手|离职|辞职|卖|戒)"),
    ("reasoning", "negative", "reasoning", "penalty", 0.85,
     r"\b(?:your|the) (?:reasoning|logic|math|calculation) (?:is |was )?(?:wrong|off|flawed|broken|bad)\b|"
     r"\bdoesn'?t (?:follow|add up|make sense)\b|\bmakes no sense\b|\bhow did you (?:get|conclude|arrive)\b|"
     r"(?:逻辑|推理)(?:不对|有问题|错了|不通)|算错|说不通|没道理|怎么得出"),
    ("style", "negative", "style", "prefer", 0.7,
     r"\btoo (?:long|short|verbose|wordy|formal|casual|technical|detailed)\b|\b(?:more )?(?:concise|briefer|"
     r"shorter|simpler)\b|\bless (?:formal|verbose|detail(?:ed)?)\b|\b(?:in|use) (?:plain )?(?:english|chinese)\b|"
     r"\bbullet points?\b|\bstop (?:apologi[sz]ing|repeating)\b|太长|啰嗦|简短|简单点|说中文|用中文|用英文|太正式|分点"),
    ("tool", "negative", "tool_choice", "prefer", 0.7,
     r"\b(?:don'?t|do not|stop) (?:use|using|call|calling)\b|\bwrong tool\b|\binstead of (?:searching|calling|"
     r"using)\b|\buse the \w+ (?:tool|api)\b|别用|不要用|换个工具|改用|别搜|去搜"),
    ("wrong", "negative", "final_answer", "penalty", 0.9,
     r"\b(?:that'?s|that is|this is|it'?s|it is|you'?re|you are) (?:not right|wrong|incorrect|not correct|not true|"
     r"mistaken)\b|\bwrong (?:answer|again|date|name|person)\b|\bnot what i (?:asked|meant|wanted|said)\b|"
     r"\byou (?:got|have) (?:it|that) wrong\b|\bthat'?s not it\b|\bincorrect\b|\bnope\b|^\s*no\s*[,.!]|"
     r"不对|错了|不是这样|搞错|弄错|不正确|答错|不是我要的|不是我想要的|我说的不是|不是的"),
    ("right", "positive", "final_answer", "prefer", 0.85,
     r"\bthank(?:s| you)\b|\b(?:great|perfect|awesome|excellent|exactly|spot on|brilliant)\b|\bthat'?s (?:right|"
     r"correct|it|exactly what)\b|\bthat (?:works|worked|helps|helped)\b|\byou'?re right\b|\bnice\b|"
     r"谢谢|太好了|就是这个|对的|没错|完美|正是|很好|有用|说得对|不错|好极了"),
)
_CUES = tuple((name, polarity, target, hint, strength, re.compile(pattern, _I))
              for name, polarity, target, hint, strength, pattern in _TABLE)


@dataclass(frozen=True)
class Judgement:
    type: str  # negative | positive | neutral | mixed
    confidence: float
    targets: tuple[str, ...]
    action_hints: tuple[str, ...]
    cues: tuple[str, ...]  # "<cue>:<matched text>", in table order

    @property
    def detected(self) -> bool:
        return self.type != "neutral"


def judge(user_input: str) -> Judgement:
    """The verdict on one user turn that reacts to an agent reply."""
    text = user_input
    found: list[tuple[str, str | None, str, str, float, str]] = []
    for name, polarity, target, hint, strength, pattern in _CUES:
        for match in pattern.finditer(text):
            found.append((name, polarity, target, hint, strength, match.group(0).strip()))
        text = pattern.sub(lambda m: " " * len(m.group(0)), text)  # a span is read once
    signals = [f for f in found if f[1] is not None]
    polarities = {f[1] for f in signals}
    if not signals:
        return Judgement("neutral", 0.9 if not found else 0.8, (), (), tuple(f"{f[0]}:{f[5]}" for f in found))
    kind = "mixed" if len(polarities) == 2 else polarities.pop()
    if kind == "mixed":
        confidence = MIXED_CONFIDENCE
    else:
        confidence = min(MAX_CONFIDENCE, max(f[4] for f in signals) + EXTRA_CUE_BONUS * (len(signals) - 1))
    return Judgement(
        kind, round(confidence, 2), tuple(dict.fromkeys(f[2] for f in signals)),
        tuple(dict.fromkeys(f[3] for f in signals)), tuple(f"{f[0]}:{f[5]}" for f in found),
    )
