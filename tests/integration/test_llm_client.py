"""The LLM client against a real local OpenAI-compatible server with scripted replies, and replay without it.

Every test talks to ``tests.fakes.openai_server.FakeOpenAI`` over a real
socket on 127.0.0.1; timeouts are kept under a second so the file stays fast.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from actors.llm import LlmClient, LlmConfig, LlmResult, RecordedLlm
from events.duckdb_log import DuckDBEventLog
from events.envelope import PendingEvent
from events.errors import LlmError
from events.log import ScanFilter
from events.model import LlmCallRecorded
from tests.fakes.openai_server import FakeOpenAI, Reply

pytestmark = pytest.mark.integration

API_KEY = "sk-test-5f2c9a-never-recorded"
MESSAGES = [
    {"role": "system", "content": "Extract stable facts about the user."},
    {"role": "user", "content": "我们决定改用 MySQL，不再用 PostgreSQL。"},
]
GOOD = {"category": "decision", "text": "改用 MySQL", "confidence": 0.9}


class Note(BaseModel):
    category: Literal["preference", "decision", "constraint", "fact"]
    text: str = Field(min_length=1)
    confidence: float = Field(ge=0, le=1)


@pytest.fixture
def server():
    with FakeOpenAI() as fake:
        yield fake


def client_for(fake: FakeOpenAI, sleeps: list[float] | None = None, **overrides) -> LlmClient:
    """A client with test-sized timeouts; ``sleeps`` collects every backoff pause (which still happens)."""
    settings = dict(timeout_s=0.5, max_retries=2, backoff_base_s=0.01, max_tokens=200) | overrides
    config = LlmConfig(base_url=fake.base_url, model="fake-model", api_key=API_KEY, **settings)

    def sleep(seconds: float) -> None:
        if sleeps is not None:
            sleeps.append(seconds)
        time.sleep(seconds)

    return LlmClient(config, sleep=sleep)


def extract(client, **params) -> LlmResult:
    return client.complete_json("note_extraction", MESSAGES, Note, **params)


def test_clean_structured_reply(server):
    server.script(Reply.json(GOOD))
    result = extract(client_for(server))
    assert result.ok and not result.replayed
    assert result.parsed == Note(**GOOD)
    event = result.event
    assert isinstance(event, LlmCallRecorded)
    assert (event.purpose, event.model, event.base_url) == ("note_extraction", "fake-model", server.base_url)
    assert event.attempts == 1 and event.error is None and event.latency_ms > 0
    assert json.loads(event.raw_output) == GOOD and json.loads(event.parsed_json) == GOOD
    assert json.loads(event.messages_json) == MESSAGES
    # Anyone can check the hash from the event alone.
    canonical = json.dumps(
        {"model": event.model, "messages": json.loads(event.messages_json), "parameters": event.parameters},
        sort_keys=True, separators=(",", ":"), ensure_ascii=False,
    )
    assert event.prompt_sha256 == hashlib.sha256(canonical.encode()).hexdigest()


def test_request_carries_model_messages_response_format_and_bearer_key(server):
    server.script(Reply.json(GOOD))
    result = extract(client_for(server, temperature=0.3), seed=7)
    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.headers["content-type"] == "application/json"
    body = request.body
    assert body["model"] == "fake-model"
    assert body["messages"] == MESSAGES
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Note", "schema": Note.model_json_schema()},
    }
    assert (body["temperature"], body["max_tokens"], body["seed"]) == (0.3, 200, 7)
    assert result.event.parameters["seed"] == 7
    assert API_KEY not in result.event.model_dump_json()
    assert API_KEY not in repr(result)


def test_malformed_json_is_repaired_without_a_re_ask(server):
    raw = "Here you go:\n```json\n{'category': 'decision', 'text': '改用 MySQL', 'confidence': 0.9,}\n```"
    server.script(Reply.text(raw))
    result = extract(client_for(server))
    assert result.parsed == Note(**GOOD)
    assert result.event.attempts == 1 and result.event.raw_output == raw
    assert len(server.requests) == 1


def test_output_failing_the_schema_is_re_asked(server):
    server.script(Reply.json({"category": "mood", "text": "x", "confidence": 0.5}), Reply.json(GOOD))
    result = extract(client_for(server))
    assert result.ok and result.parsed == Note(**GOOD)
    assert result.event.attempts == 2
    second = server.requests[1].body["messages"]
    assert second[: len(MESSAGES)] == MESSAGES
    assert second[-2]["role"] == "assistant" and '"mood"' in second[-2]["content"]
    assert second[-1]["role"] == "user" and "category" in second[-1]["content"]
    # The record keeps the caller's prompt, so replay finds it by the caller's messages.
    assert json.loads(result.event.messages_json) == MESSAGES


def test_timeout_then_success(server):
    server.script(Reply.json(GOOD, delay_s=1.0), Reply.json(GOOD))
    started = time.perf_counter()
    result = extract(client_for(server, timeout_s=0.3))
    assert result.ok and result.event.attempts == 2
    assert time.perf_counter() - started < 1.0


def test_server_error_then_success(server):
    sleeps: list[float] = []
    server.script(Reply.error(500), Reply.json(GOOD))
    result = extract(client_for(server, sleeps))
    assert result.ok and result.event.attempts == 2
    assert len(sleeps) == 1 and 0.005 <= sleeps[0] <= 0.01  # backoff_base_s with jitter


def test_rate_limit_respects_retry_after(server):
    sleeps: list[float] = []
    server.script(Reply.error(429, "slow down", headers={"Retry-After": "1"}), Reply.json(GOOD))
    started = time.perf_counter()
    result = extract(client_for(server, sleeps))
    assert result.ok and result.event.attempts == 2
    assert sleeps == [1.0] and time.perf_counter() - started >= 1.0


def test_a_retry_after_beyond_a_minute_gives_up_at_once(server):
    sleeps: list[float] = []
    server.script(Reply.error(503, "maintenance", headers={"Retry-After": "3600"}))
    result = extract(client_for(server, sleeps))
    assert not result.ok and sleeps == [] and result.event.attempts == 1
    assert "3600 s pause" in result.event.error


def test_exhausted_retries_return_a_recorded_failure(server):
    server.script(Reply.error(500, "boom"), Reply.error(502), Reply.error(500, "still boom"))
    result = extract(client_for(server))
    assert result.parsed is None and not result.ok
    event = result.event
    assert event.attempts == 3 and "HTTP 500" in event.error and "still boom" in event.error
    assert event.parsed_json is None and event.raw_output is None
    assert LlmCallRecorded.model_validate_json(event.model_dump_json()) == event
    assert server.remaining() == 0


def test_output_that_never_parses_is_a_recorded_failure(server):
    server.script(*[Reply.text("I am not sure what you mean.")] * 3)
    result = extract(client_for(server))
    assert result.parsed is None and result.event.attempts == 3
    assert "did not match the schema" in result.event.error
    assert result.event.raw_output == "I am not sure what you mean."


def test_unreachable_server_is_a_recorded_failure(server):
    client = client_for(server, max_retries=1)
    server.stop()
    result = extract(client)
    assert not result.ok and result.event.attempts == 2 and "cannot reach" in result.event.error


def test_a_body_that_is_not_a_chat_completion_is_retried(server):
    server.script(Reply(raw_body=b"<html>proxy error</html>"), Reply.json(GOOD))
    result = extract(client_for(server))
    assert result.ok and result.event.attempts == 2


def test_bad_key_is_not_retried_and_says_what_to_check(server):
    server.script(Reply.error(401, f"invalid key {API_KEY}"))
    result = extract(client_for(server))
    assert not result.ok and result.event.attempts == 1
    assert "PALIMPSEST_LLM_API_KEY" in result.event.error
    assert API_KEY not in result.event.model_dump_json()  # the server echoed it; the record masks it


def test_json_schema_rejected_falls_back_to_json_object():
    with FakeOpenAI(reject_json_schema=True) as fake:
        fake.script(Reply.json(GOOD), Reply.json(GOOD))
        client = client_for(fake, max_retries=0)  # the fallback does not use up a retry
        first = extract(client)
        assert first.ok and first.parsed == Note(**GOOD) and first.event.attempts == 2
        rejected, accepted = (r.body for r in fake.requests)
        assert rejected["response_format"]["type"] == "json_schema"
        assert accepted["response_format"] == {"type": "json_object"}
        system = accepted["messages"][0]
        assert system["role"] == "system" and system["content"].startswith(MESSAGES[0]["content"])
        assert json.dumps(Note.model_json_schema()) in system["content"]
        assert accepted["messages"][1:] == MESSAGES[1:]
        # The client remembers: the next call goes straight to json_object.
        second = extract(client)
        assert second.ok and second.event.attempts == 1 and len(fake.requests) == 3
        assert second.event.prompt_sha256 == first.event.prompt_sha256


def test_replay_answers_from_the_log_with_the_server_stopped(server, tmp_path):
    schema = {"type": "object", "properties": {"used": {"type": "boolean"}}, "required": ["used"]}
    usage = [{"role": "user", "content": "Did the reply use the note?"}]
    server.script(Reply.json(GOOD), Reply.error(500), Reply.error(500), Reply.error(500), Reply.json({"used": True}))
    client = client_for(server)
    live = [extract(client), extract(client, seed=1), client.complete_json("usage_judge", usage, schema)]
    assert [r.ok for r in live] == [True, False, True]
    log = DuckDBEventLog(tmp_path / "log.duckdb")
    log.append([PendingEvent("t", "u", f"llm-{i}", r.event) for i, r in enumerate(live)])
    log.close()
    server.stop()
    assert not extract(client).ok  # nothing is listening any more

    reopened = DuckDBEventLog(tmp_path / "log.duckdb")
    recorded = RecordedLlm(reopened.scan(ScanFilter(kinds=("llm_call_recorded",))))
    reopened.close()
    assert len(recorded) == 3
    replayed = [extract(recorded), extract(recorded, seed=1), recorded.complete_json("usage_judge", usage, schema)]
    for live_result, replay_result in zip(live, replayed, strict=True):
        assert replay_result.replayed
        assert replay_result.event == live_result.event
        assert replay_result.parsed == live_result.parsed
    assert isinstance(replayed[0].parsed, Note) and replayed[1].parsed is None and replayed[2].parsed == {"used": True}

    with pytest.raises(LlmError, match="no recorded call for this prompt; replay never calls a model"):
        recorded.complete_json("note_extraction", [{"role": "user", "content": "never asked"}], Note)
    with pytest.raises(LlmError, match="no recorded call"):
        recorded.complete_json("another_purpose", MESSAGES, Note)  # same prompt, other purpose
    with pytest.raises(LlmError, match="no recorded call"):
        extract(recorded, seed=2)  # other parameters


def test_replay_repeats_a_prompt_asked_twice_in_recorded_order(server):
    server.script(Reply.json(GOOD), Reply.json(GOOD | {"confidence": 0.5}))
    client = client_for(server, temperature=1.0)
    live = [extract(client), extract(client)]
    recorded = RecordedLlm([r.event for r in live])
    assert [extract(recorded).parsed.confidence for _ in range(3)] == [0.9, 0.5, 0.5]


def test_replay_refuses_to_guess_between_models(server):
    server.script(Reply.json(GOOD), Reply.json(GOOD))
    events = [extract(client_for(server)).event]
    other = LlmClient(LlmConfig(base_url=server.base_url, model="other-model", timeout_s=0.5, max_tokens=200))
    events.append(extract(other).event)
    with pytest.raises(LlmError, match="several models"):
        extract(RecordedLlm(events))
    chosen = RecordedLlm(events, config=other.config)
    assert extract(chosen).event.model == "other-model"
