"""Offline memory-type classifier for English and Chinese messages (``rules-v1``).

A pure, deterministic function of the text: ordered rules, first match wins.
Its output is recorded once as a ``message_classified`` event
(:func:`classification_event`); replay reads that record and never runs the
rules again, so changing a rule means a new classifier id (``rules-v2``) and
an explicit re-derivation that writes new events.

Rule order, and why:

1. code — fences and definitions are unambiguous, and code often contains
   words like "error" or "config".
2. error — a report of a failure is worth keeping even when phrased as a question.
3. greeting / thanks — small talk ("how are you?", "你好吗？") before questions,
   unless more than a few words remain besides the greeting ("hi, what port
   is it on?") or it also states something ("thanks, I prefer tea").
4. question — a trailing "?" / "？" beats the content rules below
   ("should we go with Postgres?" is not yet a decision).
5. decision, config, preference, fact — statements.
6. question — no question mark but a wh-word opening or a final 吗/呢.
7. chitchat — short messages made of small-talk tokens ("ok", "哈哈").
8. unknown.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from events.model import MessageClassified
from projections.rules.extraction import key_terms
from projections.rules.text import rule_text

CLASSIFIER_ID = "rules-v1"
UNKNOWN_CONFIDENCE = 0.3


class Classification(NamedTuple):
    memory_type: str
    confidence: float


def _rx(*patterns: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE | flags)


CODE_STRONG = _rx(
    r"```",
    r"^\s*(?:async\s+)?def\s+\w+\s*\(",
    r"^\s*class\s+\w+\s*[:(]",
    r"\bfunction\s+\w+\s*\(",
    r"^\s*(?:from\s+[\w.]+\s+)?import\s+[\w.]+",
    r"^\s*#include\s*[<\"]",
    r"\b(?:const|let|var)\s+\w+\s*=",
    r"\bpublic\s+(?:static\s+)?(?:void|class|int)\b",
    r"=>\s*[{(]",
    flags=re.MULTILINE,
)
CODE_SYMBOLS = set("{}[]();=<>")

ERROR = _rx(
    r"\btraceback\b",
    # A word that ends in error(s) / exception(s) ("TypeError"), written as that ending alone: the same words match
    # (the match is only tested), but "\b\w*" in front of it ran over the rest of a word at each word's start, and
    # a run of Chinese characters is one long word. ERROR over the dev files' 9,790 messages: 197 → 137 ms, over
    # their Chinese ones 50 → 13 ms (best of 5).
    r"(?:error|exception)s?\b",
    r"\bfail(?:ed|s|ing|ure)?\b",
    r"\bcrash(?:ed|es|ing)?\b",
    r"\bstack\s*trace\b",
    r"\bsegfault\b",
    r"报错",
    r"错误",
    r"异常",
    r"失败",
    r"崩溃",
)

GREETING = _rx(
    r"^\W*(?:hi|hello|hey|yo|good\s+(?:morning|afternoon|evening|night)|bye|goodbye|see\s+you)\b",
    r"\bthank(?:s|\s+you)\b",
    r"\bhow\s+are\s+you\b",
    r"\bhow'?s\s+it\s+going\b",
    r"你好",
    r"您好",
    r"谢谢",
    r"多谢",
    r"早上好",
    r"晚上好",
    r"晚安",
    r"再见",
    r"拜拜",
    r"最近怎么样",
    r"哈哈",
)
GREETING_MAX_REST = 3  # words (or CJK characters) besides the greeting itself
_WORD = re.compile(r"[A-Za-z0-9']+|[\u4e00-\u9fff]")

QUESTION_MARK = re.compile(r"[?？]\s*$")
QUESTION_WORDS = _rx(
    r"^\W*(?:what|why|how|when|where|who|whom|which|whose)\b",
    r"^\W*(?:can|could|would|should|do|does|did|is|are|was|were|will|have|has)\s+(?:you|we|i|it|there|they|this|that)\b",
    r"吗[。.!！]*\s*$",
    r"呢[。.!！]*\s*$",
    r"怎么",
    r"为什么",
    r"为啥",
    r"如何",
    r"是否",
    r"哪(?:个|些|里|儿)",
    r"什么",
)

DECISION = _rx(
    r"\b(?:we|i|team)\s+(?:have\s+|'ve\s+)?decided\b",
    r"\b(?:we|i)'ve\s+decided\b",
    r"\blet'?s\s+(?:go\s+with|use|stick\s+with|switch\s+to|adopt)\b",
    r"\b(?:we|i)(?:'ll|\s+will)\s+(?:go\s+with|use|stick\s+with|switch\s+to)\b",
    r"\b(?:decision|verdict)\s*:",
    r"\bsettled\s+on\b",
    r"\bgoing\s+(?:forward\s+)?with\b",
    r"决定",
    r"就用",
    r"就这么定",
    r"定了",
    r"选用",
    r"采用",
    r"改用",
)

CONFIG = _rx(
    r"\bset\s+(?:the\s+)?[\w.\-]+(?:\s+[\w.\-]+)?\s+to\b",
    r"\bconfig(?:ure|ured|uration|s)?\b",
    r"\bsettings?\b",
    r"\benv(?:ironment)?\s+var(?:iable)?s?\b",
    r"(?-i:(?:^|\s)(?:export\s+)?[A-Z][A-Z0-9]*_[A-Z0-9_]+\s*=)",  # FOO_BAR=...
    r"\bport\s*[:=]?\s*\d{2,5}\b",
    r"\blocalhost:\d{2,5}\b",
    r"\.(?:ya?ml|toml|ini|env|conf)\b",
    r"配置",
    r"设置为",
    r"设为",
    r"设成",
    r"端口",
    r"环境变量",
)

PREFERENCE = _rx(
    r"\bi\s+(?:really\s+|much\s+|do\s+not\s+|don'?t\s+)?(?:prefer|like|love|hate|dislike|enjoy|can'?t\s+stand)\b",
    r"\bmy\s+fav(?:ou?rite)?\b",
    r"我(?:更|最|很|真|不太|不)?(?:喜欢|爱|讨厌|偏好|倾向)",
    r"我的爱好",
)

FACT = _rx(
    r"\bmy\s+(?:\w+\s+){0,3}(?:is|are|was)\b",
    r"\bi\s+(?:live|work|grew\s+up|was\s+born|study|moved)\b",
    r"\bi(?:'m|\s+am)\s+(?:a|an|from|based\s+in|\d+\s+years?\s+old)\b",
    r"\bi\s+have\s+(?:a|an|two|three|\d+)\s+\w+",
    r"我的.{1,12}?是",
    r"我(?:住在|来自|出生在|出生于)",
    r"我在.{1,12}?(?:工作|上班|上学|读书)",
    r"我叫",
    r"我是(?:一[名个位]|.{1,6}人)",
    r"我有(?:一|两|三|\d)",
)

SMALL_TALK = _rx(
    r"^\W*(?:ok(?:ay)?|k|cool|nice|great|sure|yes|yeah|yep|no|nope|lol|haha+|hmm+|wow|got\s+it|sounds\s+good)\W*$",
    r"^\W*(?:好的?|嗯+|哦+|好吧|可以|行|没问题|收到|厉害|不错|哈哈+|呵呵|嘿嘿|了解)\W*$",
)

_STATEMENT_RULES = (
    ("decision", DECISION, 0.85),
    ("config", CONFIG, 0.8),
    ("preference", PREFERENCE, 0.8),
    ("fact", FACT, 0.7),
)


def _looks_like_code(text: str) -> bool:
    if CODE_STRONG.search(text) is not None:
        return True
    # Dense symbols over several lines: a snippet pasted without a fence.
    if text.count("\n") < 2:  # checked first: most messages are one line, and counting symbols is the cost
        return False
    stripped = text.replace(" ", "")
    if len(stripped) < 30:
        return False
    symbols = sum(ch in CODE_SYMBOLS for ch in stripped)
    return symbols / len(stripped) > 0.12


def _is_greeting(text: str) -> bool:
    # "Hello, how are you?" is small talk; "Hi, what port is it on?" is a question.
    if GREETING.search(text) is None:
        return False
    return len(_WORD.findall(GREETING.sub(" ", text))) <= GREETING_MAX_REST


def classify(text: str) -> Classification:
    """The memory type of a message and a confidence in [0, 1]; same text, same answer."""
    text = rule_text(text).strip()
    if not text:
        return Classification("unknown", UNKNOWN_CONFIDENCE)
    if _looks_like_code(text):
        return Classification("code", 0.9)
    if ERROR.search(text):
        return Classification("error", 0.8)
    statement = next((rule for rule in _STATEMENT_RULES if rule[1].search(text)), None)
    if statement is None and _is_greeting(text):
        return Classification("chitchat", 0.75)
    if QUESTION_MARK.search(text):
        return Classification("question", 0.8)
    if statement is not None:
        return Classification(statement[0], statement[2])
    if QUESTION_WORDS.search(text):
        return Classification("question", 0.6)
    if SMALL_TALK.search(text):
        return Classification("chitchat", 0.6)
    return Classification("unknown", UNKNOWN_CONFIDENCE)


def classification_event(message_event_id: str, text: str) -> MessageClassified:
    """The event that records this classifier's verdict on one message, once."""
    result = classify(text)
    return MessageClassified(
        message_event_id=message_event_id,
        memory_type=result.memory_type,
        confidence=result.confidence,
        classifier=CLASSIFIER_ID,
        key_terms=key_terms(rule_text(text)),
    )
