"""The offline message-type classifier (rules-v1): a table of English and Chinese messages."""

from __future__ import annotations

import pytest

from events.model import MEMORY_TYPES, MessageClassified
from projections.rules.classify import (
    CLASSIFIER_ID,
    Classification,
    classification_event,
    classify,
)
from projections.rules.extraction import key_terms

CASES = [
    # decision
    ("We decided to use PostgreSQL for the main store.", "decision"),
    ("OK, let's go with React 18 and TypeScript.", "decision"),
    ("Decision: the service will be deployed on AWS.", "decision"),
    ("我们决定用 PostgreSQL 作为主数据库。", "decision"),
    ("就用 Redis 做缓存吧。", "decision"),
    ("后端改用 Go 重写。", "decision"),
    # config
    ("Set max_connections to 200 in the pool.", "config"),
    ("export DATABASE_URL=postgres://localhost/app", "config"),
    ("The API server listens on port 8080.", "config"),
    ("把超时时间设置为 30 秒。", "config"),
    ("nginx 的配置文件在 /etc/nginx 下面。", "config"),
    # code
    ("```python\nprint('hi')\n```", "code"),
    ("def load(path):\n    return open(path).read()", "code"),
    ("class UserRepository(Base):\n    pass", "code"),
    ("这个函数这样写:\nfunction add(a, b) { return a + b; }", "code"),
    # error
    ("Traceback (most recent call last): KeyError: 'user'", "error"),
    ("The build failed on CI again.", "error"),
    ("Why does it throw a NullPointerException here?", "error"),
    ("启动的时候报错了,端口被占用。", "error"),
    ("数据库连接出现异常", "error"),
    # question
    ("What time zone is the server in?", "question"),
    ("Should we go with Postgres?", "question"),
    ("How do I rotate the logs", "question"),
    ("你觉得这个方案可行吗", "question"),
    ("为什么要用消息队列？", "question"),
    ("这个接口怎么调用", "question"),
    # chitchat
    ("Hi!", "chitchat"),
    ("Thanks a lot!", "chitchat"),
    ("How are you?", "chitchat"),
    ("ok", "chitchat"),
    ("哈哈哈", "chitchat"),
    ("谢谢你！", "chitchat"),
    ("你好", "chitchat"),
    ("好的", "chitchat"),
    # preference
    ("I prefer dark mode in every editor.", "preference"),
    ("I really love spicy hotpot.", "preference"),
    ("I hate long meetings.", "preference"),
    ("我喜欢吃拉面。", "preference"),
    ("我更喜欢用 Vim。", "preference"),
    ("我不喜欢香菜。", "preference"),
    # fact
    ("My birthday is on March 3rd.", "fact"),
    ("I live in Berlin with two cats.", "fact"),
    ("I work at a small robotics startup.", "fact"),
    ("我的生日是三月三号。", "fact"),
    ("我住在上海浦东。", "fact"),
    ("我在一家银行工作。", "fact"),
    # mixed: the substance beats the greeting, a question beats a greeting
    ("Hi, what port is it on?", "question"),
    ("你好，我们决定用 Postgres。", "decision"),
    ("Thanks, I prefer tea.", "preference"),
    ("Hello, how are you?", "chitchat"),
    # unknown
    ("The meeting notes are attached below.", "unknown"),
    ("明天下午开会。", "unknown"),
    ("   ", "unknown"),
]


@pytest.mark.parametrize(("text", "expected"), CASES, ids=[f"{e}:{t[:24]}" for t, e in CASES])
def test_classify(text, expected):
    result = classify(text)
    assert result.memory_type == expected
    assert 0.0 <= result.confidence <= 1.0


def test_the_table_covers_every_memory_type_in_both_languages():
    assert {expected for _, expected in CASES} == set(MEMORY_TYPES)
    chinese = [t for t, _ in CASES if any("\u4e00" <= ch <= "\u9fff" for ch in t)]
    assert len(chinese) >= 20 and len(CASES) - len(chinese) >= 20


def test_classify_is_deterministic_and_returns_a_plain_pair():
    first = [classify(t) for t, _ in CASES]
    assert first == [classify(t) for t, _ in CASES]
    memory_type, confidence = classify("We decided to use PostgreSQL.")
    assert isinstance(classify("hi"), Classification) and (memory_type, confidence) == ("decision", 0.85)


def test_strong_signals_are_more_confident_than_fallbacks():
    assert classify("```sql\nSELECT 1;\n```").confidence > classify("What is this?").confidence
    assert classify("What is this?").confidence > classify("what is this").confidence
    assert classify("The meeting notes are attached below.").confidence < 0.5


def test_classification_event_records_the_verdict_once_with_the_classifier_version():
    event = classification_event("m-42", "我们决定用 PostgreSQL。")
    assert event == MessageClassified(
        message_event_id="m-42", memory_type="decision", confidence=0.85, classifier=CLASSIFIER_ID,
        key_terms=key_terms("我们决定用 PostgreSQL。"),
    )
    assert event.key_terms  # recorded, so the tier fold never reads the text again
    assert CLASSIFIER_ID == "rules-v1"


@pytest.mark.parametrize("text, error", [
    ("TypeError: x is None", True), ("too many exceptions", True), ("an errors log", True), ("no erroring", False),
    ("errorless", False), ("运行时报错了", True), ("我今天TypeError了好几次", False), ("我今天很开心", False),
])
def test_error_words_are_words_ending_in_error_or_exception(text, error):
    import re

    from projections.rules.classify import ERROR

    assert (ERROR.search(text) is not None) == error
    # The pattern as first written ("\b\w*" before the ending) finds the same words.
    old = re.compile(ERROR.pattern.replace("(?:error|exception)s?\\b", "\\b\\w*(?:error|exception)s?\\b"), ERROR.flags)
    assert old.pattern != ERROR.pattern and (old.search(text) is not None) == error
