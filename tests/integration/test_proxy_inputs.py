"""The memory proxy against careless and hostile requests: ids that cannot go in a header, headers written in UTF-8,
bodies too large, too deep or holding a lone surrogate, answers that are no chat completion, turns over a message's
limit, requests without a user turn. Each is answered in OpenAI's error shape naming the field to fix, or served
with what it recorded said plainly; nothing is recorded for a call that failed."""

from __future__ import annotations

import json
from urllib.parse import quote

import httpx
import pytest

from events.commands import MAX_TEXT_CHARS
from palimpsest.server.proxy_record import TRUNCATED
from palimpsest.server.routes_proxy import CONVERSATION_HEADER, MEMORIES_HEADER, USER_HEADER
from tests.fakes.openai_server import Reply
from tests.integration.proxy_server import TENANT, shared_bench

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def b(ray_cluster, tmp_path_factory, request):
    return shared_bench(request, tmp_path_factory)  # users of this module: inputs-*


def post(b, route: str, body, user: str | bytes | None = "inputs-a", **headers) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    given = {"authorization": f"Bearer {b.key}", "content-type": "application/json", **headers}
    if user is not None:
        given[USER_HEADER] = user
    return httpx.post(b.base_url + route, content=content, headers=given, timeout=60)


def refused(answer: httpx.Response, status: int, param: str) -> dict:
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]
    assert error["param"] == param and error["type"] == "invalid_request_error" and error["message"], error
    return error


def test_a_conversation_named_in_chinese_is_recorded_under_its_name_and_echoed_percent_encoded(b):
    b.upstream.script(Reply.text("记住了。"))
    answer = post(b, "/responses", {"model": "m", "input": "我喜欢龙井茶。", "conversation": "会话二"},
                  user="inputs-zh")
    assert answer.status_code == 200, answer.text
    assert answer.headers[CONVERSATION_HEADER] == quote("会话二", safe="")
    assert [r["text"] for r in b.conversation("inputs-zh", "会话二", 2)] == ["我喜欢龙井茶。", "记住了。"]


@pytest.mark.parametrize("name", ["x\r\nX-Injected: yes", "a\x00b"], ids=["crlf", "nul"])
def test_a_conversation_holding_control_characters_is_refused_before_anything_is_forwarded(b, name):
    calls = len(b.upstream.requests)
    answer = post(b, "/responses", {"model": "m", "input": "hi", "conversation": name}, user="inputs-ctl")
    assert "control characters" in refused(answer, 400, "conversation")["message"]
    assert len(b.upstream.requests) == calls
    assert b.memory.conversation(TENANT, "inputs-ctl", name) == []


def test_user_and_conversation_headers_are_read_as_utf8(b):
    b.upstream.script(Reply.text("Hola José."))
    answer = post(b, "/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "Soy José."}]},
                  user="josé-李".encode(), **{CONVERSATION_HEADER: "会话一".encode()})
    assert answer.status_code == 200, answer.text
    assert [r["text"] for r in b.conversation("josé-李", "会话一", 2)] == ["Soy José.", "Hola José."]


@pytest.mark.parametrize("raw", [b"this is not json", b"", b'{"error": {"message": "no"}}'],
                         ids=["text", "empty", "error-object"])
def test_an_answer_that_is_no_chat_completion_passes_through_and_nothing_is_recorded(b, raw):
    user = f"inputs-raw-{len(raw)}"
    b.upstream.script(Reply(status=200, raw_body=raw))
    answer = post(b, "/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "A lost turn."}]},
                  user=user, **{CONVERSATION_HEADER: "c"})
    assert answer.status_code == 200 and answer.content == raw
    b.upstream.script(Reply.text("This one worked."))
    post(b, "/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "A kept turn."}]},
         user=user, **{CONVERSATION_HEADER: "c"})
    assert [r["text"] for r in b.conversation(user, "c", 2)] == ["A kept turn.", "This one worked."]


def test_a_body_over_the_cap_is_a_413_in_openais_shape(b):
    big = {"model": "m", "messages": [{"role": "user", "content": "x" * (4 * 1024 * 1024 + 10)}]}
    error = refused(post(b, "/chat/completions", big), 413, "body")
    assert error["code"] == "too_large" and "--max-body-bytes" in error["message"]


@pytest.mark.parametrize(("body", "says"), [
    (b"[" * 50_000 + b"]" * 50_000, "nested too deeply"),
    (b'{"model": "m", "messages": [{"role": "user", "content": "bad \\ud800"}]}', "lone surrogate"),
    (b'{"model": "m\\udfff", "input": "hi"}', "lone surrogate"),
], ids=["deep", "surrogate-content", "surrogate-model"])
def test_a_body_too_deep_or_with_a_lone_surrogate_is_a_400_naming_the_body(b, body, says):
    calls = len(b.upstream.requests)
    route = "/responses" if b'"input"' in body else "/chat/completions"
    assert says in refused(post(b, route, body), 400, "body")["message"]
    assert len(b.upstream.requests) == calls


@pytest.mark.parametrize(("route", "body", "param"), [
    ("/chat/completions", {"model": "m", "stream": "false", "messages": [{"role": "user", "content": "hi"}]},
     "stream"),
    ("/responses", {"model": "m", "input": "hi", "instructions": ["be terse"]}, "instructions"),
], ids=["stream-text", "instructions-list"])
def test_a_parameter_of_the_wrong_type_is_refused_not_reinterpreted(b, route, body, param):
    calls = len(b.upstream.requests)
    refused(post(b, route, body), 400, param)
    assert len(b.upstream.requests) == calls


def test_a_turn_over_a_messages_limit_is_recorded_cut_to_it_with_its_length(b):
    long = "I keep a long diary. " * (MAX_TEXT_CHARS // 20)
    b.upstream.script(Reply.text("That is a long diary."))
    answer = post(b, "/chat/completions", {"model": "m", "messages": [{"role": "user", "content": long}]},
                  user="inputs-long", **{CONVERSATION_HEADER: "diary"})
    assert answer.status_code == 200, answer.text
    turn, reply = b.conversation("inputs-long", "diary", 2)
    assert turn["text"] == long[:MAX_TEXT_CHARS] and turn["metadata"][TRUNCATED] == len(long)
    assert reply["text"] == "That is a long diary." and TRUNCATED not in reply["metadata"]


def test_requests_without_a_user_turn_are_chats_of_their_own(b):
    names = []
    for call in ("call_1", "call_2"):
        b.upstream.script(Reply.text(f"Done with {call}."))
        answer = post(b, "/responses", {"model": "m", "input": [
            {"type": "function_call_output", "call_id": call, "output": "42"}]}, user="inputs-tools")
        assert answer.status_code == 200 and answer.headers[MEMORIES_HEADER] == "0", answer.text
        names.append(answer.headers[CONVERSATION_HEADER])
    assert names[0] != names[1]
    assert [r["text"] for r in b.conversation("inputs-tools", names[0], 1)] == ["Done with call_1."]


def test_the_model_list_is_the_upstreams_asked_with_its_key(b):
    from openai import NotFoundError, OpenAI

    client = OpenAI(base_url=b.base_url, api_key=b.key, max_retries=0)
    assert [m.id for m in client.models.list()] == ["fake-model"]
    assert b.upstream.requests[-1].path == "/v1/models"
    assert b.upstream.requests[-1].headers["authorization"] == "Bearer upstream-secret"  # never the caller's key
    assert client.models.retrieve("fake-model").owned_by == "fake"
    with pytest.raises(NotFoundError) as missing:
        client.models.retrieve("no-such-model")
    assert "no model no-such-model" in missing.value.message
    assert httpx.get(b.base_url + "/models", headers={"authorization": "Bearer pk-wrong"}).status_code == 401


def test_a_wrong_method_or_an_openai_path_the_proxy_does_not_serve_answers_in_openais_shape(b):
    headers = {"authorization": f"Bearer {b.key}"}
    wrong = httpx.get(b.base_url + "/chat/completions", headers=headers)
    assert wrong.status_code == 405 and wrong.json()["error"]["param"] == "path"
    unserved = httpx.post(b.base_url + "/embeddings", headers=headers, json={"model": "m", "input": "hi"})
    error = unserved.json()["error"]
    assert unserved.status_code == 404 and error["code"] == "not_served" and "/v1/chat/completions" in error["message"]
    ours = httpx.get(b.base_url + "/no-such-thing", headers=headers)  # the API's own paths keep its own shape
    assert ours.status_code == 404 and ours.json()["error"] == "http_error"
