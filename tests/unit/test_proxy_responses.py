"""The memory proxy's Responses API form without a server: what it reads of a request's input, where the memory
goes, and the reply it reads of an answer, plain or streamed (the scripted server's events, split anywhere)."""

from __future__ import annotations

import json

import pytest

from palimpsest.server.errors import ApiError
from palimpsest.server.proxy_responses import StreamedResponse, read, reply, with_context
from tests.fakes.openai_responses import response_body, response_events


def test_a_string_input_is_the_users_turn():
    asked = read({"input": "I moved to Porto.", "previous_response_id": "resp_1", "conversation": {"id": "c1"}})
    assert (asked.query, asked.user_text, asked.prior_reply, asked.opening) == ("I moved to Porto.",) * 2 + (
        "", "I moved to Porto.")
    assert (asked.prior_response_id, asked.conversation) == ("resp_1", "c1")


def test_input_items_give_the_last_user_turn_the_reply_it_answers_and_the_opening():
    items = [{"role": "developer", "content": "Be brief."},
             {"role": "user", "content": [{"type": "input_text", "text": "我住在杭州。"}]},
             {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "好的。"}]},
             {"type": "message", "role": "user", "content": "Where do I live?"}]
    asked = read({"input": items})
    assert (asked.query, asked.user_text, asked.prior_reply, asked.opening) == (
        "Where do I live?", "Where do I live?", "好的。", "我住在杭州。")
    after_a_tool = read({"input": [*items, {"type": "function_call_output", "call_id": "c", "output": "{}"}]})
    assert (after_a_tool.query, after_a_tool.user_text) == ("Where do I live?", "")  # read for, not recorded
    assert read({"input": [{"type": "function_call_output", "call_id": "c", "output": "{}"}]}).query == ""


@pytest.mark.parametrize("body", [{}, {"input": ""}, {"input": []}, {"input": ["hi"]}, {"input": 3}])
def test_a_request_without_input_is_refused_naming_input(body):
    with pytest.raises(ApiError) as refused:
        read(body)
    assert refused.value.status == 400 and refused.value.problems[0][0] == "input"


def test_the_memory_goes_after_the_requests_own_instructions():
    assert with_context({"input": "q", "instructions": "Be brief."}, "MEMORY")["instructions"] == "Be brief.\n\nMEMORY"
    assert with_context({"input": "q"}, "MEMORY") == {"input": "q", "instructions": "MEMORY"}
    body = {"input": "q"}
    assert with_context(body, None) is body


def test_the_reply_of_a_response_and_none_for_a_failed_one():
    said = json.loads(response_body({"model": "m"}, "Lisbon, 里斯本."))
    assert reply(json.dumps(said).encode()) == ("Lisbon, 里斯本.", said["id"])
    assert reply(json.dumps({**said, "status": "failed"}).encode()) is None
    assert reply(json.dumps({**said, "output": [{"type": "function_call", "name": "f"}]}).encode()) == ("", said["id"])
    assert reply(b"not json") is None


def test_a_streamed_reply_is_read_from_its_events_split_anywhere():
    events = response_events({"model": "m"}, "Hello, 世界, from a streamed response.")
    completed = events.index(b"event: response.completed")
    streamed = StreamedResponse()
    for i in range(0, len(events), 7):  # split mid-line, mid-character even
        streamed.feed(events[i:i + 7])
        if i + 7 <= completed:
            assert not streamed.finished
    assert streamed.finished and streamed.reply[0] == "Hello, 世界, from a streamed response."
    assert streamed.reply[1].startswith("resp_fake_")
    cut = StreamedResponse()
    cut.feed(events[:completed])
    assert not cut.finished
    failed = StreamedResponse()
    failed.feed(events.replace(b'"response.completed"', b'"response.failed"'))
    assert not failed.finished
