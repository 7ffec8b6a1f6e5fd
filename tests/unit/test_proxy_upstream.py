"""The memory proxy's upstream settings (read from the environment, bad values named), an upstream that cannot
be reached, and the pieces that read its answers: the assistant text of a completion and of a stream, and an
error made OpenAI-shaped."""

from __future__ import annotations

import asyncio
import json
import socket

import pytest

from events.errors import LlmError
from palimpsest.server.errors import ApiError
from palimpsest.server.proxy_upstream import StreamedReply, Upstream, close_sessions, error_body, reply_text, send
from palimpsest.server.routes_proxy import CONTEXT_HEADER, _with_context


def test_no_url_in_the_environment_means_no_proxy():
    assert Upstream.from_env({}) is None
    assert Upstream.from_env({"OPENAI_API_KEY": "sk-x"}) is None  # a key alone names no endpoint


def test_the_proxys_own_variables_win_and_the_key_never_shows_in_repr():
    env = {"PALIMPSEST_PROXY_UPSTREAM_URL": "http://127.0.0.1:11434/v1/", "PALIMPSEST_PROXY_UPSTREAM_MODEL": "llama3",
           "PALIMPSEST_PROXY_UPSTREAM_TIMEOUT_S": "30", "PALIMPSEST_PROXY_CONTEXT_TOKENS": "400",
           "PALIMPSEST_LLM_BASE_URL": "https://api.openai.com/v1", "OPENAI_API_KEY": "sk-memory-model"}
    upstream = Upstream.from_env(env)
    assert (upstream.base_url, upstream.model, upstream.timeout_s, upstream.context_tokens) == (
        "http://127.0.0.1:11434/v1", "llama3", 30.0, 400)
    assert upstream.api_key is None  # the memory model's key is not sent to another endpoint
    assert upstream.completions_url == "http://127.0.0.1:11434/v1/chat/completions"
    assert "sk-" not in repr(Upstream("https://api.openai.com/v1", api_key="sk-secret"))


def test_without_its_own_url_the_proxy_uses_the_memory_models_endpoint_and_key():
    upstream = Upstream.from_env({"OPENAI_BASE_URL": "https://api.openai.com/v1", "OPENAI_API_KEY": "sk-x"})
    assert (upstream.base_url, upstream.api_key, upstream.model) == ("https://api.openai.com/v1", "sk-x", None)


@pytest.mark.parametrize(("env", "named"), [
    ({"PALIMPSEST_PROXY_UPSTREAM_URL": "localhost:8000"}, "PALIMPSEST_PROXY_UPSTREAM_URL"),
    ({"PALIMPSEST_PROXY_UPSTREAM_URL": "http://h/v1", "PALIMPSEST_PROXY_UPSTREAM_TIMEOUT_S": "soon"},
     "PALIMPSEST_PROXY_UPSTREAM_TIMEOUT_S"),
    ({"PALIMPSEST_PROXY_UPSTREAM_URL": "http://h/v1", "PALIMPSEST_PROXY_CONTEXT_TOKENS": "0"},
     "PALIMPSEST_PROXY_CONTEXT_TOKENS"),
])
def test_a_bad_value_is_refused_naming_its_variable_and_a_fix(env, named):
    with pytest.raises(LlmError, match=named) as raised:
        Upstream.from_env(env)
    assert "e.g." in str(raised.value)


def test_a_streamed_reply_is_read_across_chunk_boundaries_and_complete_only_when_finished():
    events = b"".join(b"data: " + json.dumps({"choices": [{"index": 0, "delta": d, "finish_reason": f}]}).encode()
                      + b"\n\n" for d, f in [({"role": "assistant"}, None), ({"content": "Hel"}, None),
                                             ({"content": "lo, 世界"}, None), ({}, "stop")]) + b"data: [DONE]\n\n"
    stop = events.index(b'"stop"')
    reply = StreamedReply()
    for i in range(0, len(events), 7):  # split mid-line, mid-character even
        reply.feed(events[i:i + 7])
        if i + 7 <= stop:
            assert not reply.finished
    assert reply.text == "Hello, 世界" and reply.finished
    cut = StreamedReply()
    cut.feed(events[:events.index(b"lo, ")])
    assert not cut.finished


def test_errors_pass_as_they_are_when_openai_shaped_and_are_wrapped_otherwise():
    ours = json.dumps({"error": {"message": "no", "type": "x"}}).encode()
    assert error_body(400, ours) == ours
    wrapped = json.loads(error_body(502, b"<html>Bad Gateway</html>"))
    assert wrapped["error"]["message"] == "<html>Bad Gateway</html>" and wrapped["error"]["code"] == 502
    assert json.loads(error_body(500, b""))["error"]["message"] == "the upstream LLM answered 500"


def test_the_reply_text_of_a_completion():
    assert reply_text(json.dumps({"choices": [{"message": {"content": "hi"}}]}).encode()) == "hi"
    assert reply_text(json.dumps({"choices": [{"message": {"content": None, "tool_calls": []}}]}).encode()) == ""
    assert reply_text(b"not json") == ""


def test_the_memory_goes_after_the_requests_own_system_messages():
    class Context:
        text = "[fact] The user lives in Lisbon"

    messages = [{"role": "system", "content": "a"}, {"role": "developer", "content": "b"},
                {"role": "user", "content": "q"}]
    given = _with_context(messages, Context())
    assert [m["role"] for m in given] == ["system", "developer", "system", "user"]
    assert given[2]["content"] == CONTEXT_HEADER + Context.text
    assert _with_context([{"role": "user", "content": "q"}], Context())[0]["role"] == "system"
    assert _with_context(messages, None) is messages


async def _sent(upstream: Upstream):
    try:
        return await send(upstream, {"messages": []}, stream=False)
    finally:
        await close_sessions()  # the loop ends with the call: its connection pool with it


def test_an_upstream_nobody_answers_at_is_a_502_and_a_silent_one_a_504_each_naming_the_setting():
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]  # closed again: nothing listens there
    with pytest.raises(ApiError) as refused:
        asyncio.run(_sent(Upstream(f"http://127.0.0.1:{port}/v1")))
    assert (refused.value.status, refused.value.code) == (502, "upstream_unreachable")
    assert "PALIMPSEST_PROXY_UPSTREAM_URL" in refused.value.problems[0][1]
    with socket.socket() as silent:  # accepts connections (the backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        upstream = Upstream(f"http://127.0.0.1:{silent.getsockname()[1]}/v1", timeout_s=0.3)
        with pytest.raises(ApiError) as waited:
            asyncio.run(_sent(upstream))
    assert waited.value.status == 504 and "PALIMPSEST_PROXY_UPSTREAM_TIMEOUT_S" in waited.value.problems[0][1]
