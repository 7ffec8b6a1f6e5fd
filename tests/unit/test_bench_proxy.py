"""benchmarks.proxy's chats: a continued chat holds, at each call, the reply before its question and stays one
conversation (so the proxy reads without waiting for the call before); a new chat each call holds neither."""

from __future__ import annotations

from benchmarks.proxy import REPLY, _messages
from palimpsest.server.routes_proxy import _read_chat


def _asked(chat: str, calls: int = 4):
    return [_read_chat({"messages": _messages(7, f"question {i}", i, chat)}) for i in range(calls)]


def test_a_continued_chat_holds_the_reply_before_each_question_and_stays_one_conversation():
    asked = _asked("continued")
    assert [a.query for a in asked] == [f"question {i}" for i in range(4)]
    assert [a.prior_reply for a in asked] == ["", REPLY, REPLY, REPLY]
    assert len({a.opening for a in asked[1:]}) == 1  # the chat is named after its opening turn


def test_a_new_chat_each_call_holds_no_reply_and_names_a_new_conversation():
    asked = _asked("new")
    assert [a.prior_reply for a in asked] == [""] * 4
    assert len({a.opening for a in asked}) == 4
