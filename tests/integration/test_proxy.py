"""The OpenAI-compatible memory proxy (``POST /v1/chat/completions``) driven by the official ``openai`` client, sync,
async and streamed, against a served store whose upstream is the project's scripted OpenAI-compatible server: what
the upstream receives (the user's memory as a system message), what comes back (the upstream's answer as it was),
what is recorded (the turn, the reply, the memories it was given; the used ones reinforced), and the errors
(the upstream's passed through with nothing recorded, the proxy's own in OpenAI's shape)."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import httpx
import pytest

pytest.importorskip("openai")

from openai import (  # noqa: E402
    APIError,
    APIStatusError,
    AsyncOpenAI,
    AuthenticationError,
    BadRequestError,
    InternalServerError,
    OpenAI,
    RateLimitError,
)

from palimpsest.server.proxy_record import GIVEN, QUERY, RESPONSE  # noqa: E402
from palimpsest.server.routes_proxy import (  # noqa: E402
    CONTEXT_HEADER,
    CONVERSATION_HEADER,
    MEMORIES_HEADER,
    USER_HEADER,
)
from tests.fakes.openai_server import Reply  # noqa: E402
from tests.integration.proxy_server import TENANT, shared_bench  # noqa: E402

pytestmark = pytest.mark.integration
ALLERGY = "allergic to peanuts"  # what the note drawn from "I am allergic to peanuts." says


@pytest.fixture(scope="module")
def b(ray_cluster, tmp_path_factory, request):
    served = shared_bench(request, tmp_path_factory)  # test_proxy_sessions.py's users are others
    yesterday = (datetime.now(UTC) - timedelta(days=1)).isoformat()
    served.memory.add_messages(
        [{"text": "I am allergic to peanuts.", "occurred_at": yesterday, "conversation_id": "intake"},
         {"text": "I live in Lisbon.", "occurred_at": yesterday, "conversation_id": "intake"}],
        tenant=TENANT, user_id="alice")
    [served.allergy_id] = [n["note_id"] for n in served.memory.notes(TENANT, "alice") if ALLERGY in n["text"]]
    return served


def client(b, user: str | None = "alice", conversation: str | None = None, key: str | None = None) -> OpenAI:
    headers = {USER_HEADER: user} if user else {}
    if conversation:
        headers[CONVERSATION_HEADER] = conversation
    return OpenAI(base_url=b.base_url, api_key=key or b.key, default_headers=headers, max_retries=0)


def ask(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def test_the_upstream_is_given_the_users_memory_and_its_answer_comes_back_unchanged(b):
    b.upstream.script(Reply.text("Avoid peanuts and satay."))
    raw = client(b, conversation="snacks").chat.completions.with_raw_response.create(
        model="gpt-test", temperature=0,
        messages=[{"role": "system", "content": "You are terse."},
                  {"role": "user", "content": "Which snacks should I avoid, given my peanuts allergy?"}])
    assert raw.parse().choices[0].message.content == "Avoid peanuts and satay."
    body = json.loads(raw.http_response.content)
    assert set(body) == {"id", "object", "created", "model", "choices", "usage"} and body["object"] == "chat.completion"
    assert int(raw.headers[MEMORIES_HEADER]) >= 1 and raw.headers[CONVERSATION_HEADER] == "snacks"
    phases = (p.partition(";dur=") for p in raw.headers["server-timing"].split(", "))
    timing = {name: float(ms) for name, _, ms in phases}  # the proxy's phases and the server's, in one header
    assert {"admit", "settle", "encode", "encode_cpu", "shard", "shard_read", "shard_read_cpu", "memory", "upstream",
            "total"} <= set(timing), timing
    assert timing["memory"] >= timing["encode"] + timing["shard"]
    assert timing["total"] >= timing["memory"] + timing["upstream"]

    received = b.upstream.requests[-1]
    assert received.headers["authorization"] == "Bearer upstream-secret"  # the Palimpsest key stays on the server
    assert b.key not in json.dumps(received.headers) + json.dumps(received.body)
    assert (received.body["model"], received.body["temperature"]) == ("gpt-test", 0)
    system, memory, question = received.body["messages"]
    assert system == {"role": "system", "content": "You are terse."}
    assert memory["role"] == "system" and memory["content"].startswith(CONTEXT_HEADER)
    assert ALLERGY in memory["content"]
    assert question == {"role": "user", "content": "Which snacks should I avoid, given my peanuts allergy?"}


def test_the_turn_the_reply_and_the_memories_it_was_given_are_recorded_and_the_used_ones_reinforced(b):
    b.upstream.script(Reply.text("Skip anything with peanuts: satay, peanut butter cookies."))
    reply = client(b, conversation="party").chat.completions.create(
        model="gpt-test", messages=ask("What should I not eat at the party? I have a peanuts allergy."))
    assert reply.choices[0].message.content == "Skip anything with peanuts: satay, peanut butter cookies."
    turn, answer = b.conversation("alice", "party", 2)
    assert (turn["role"], turn["text"]) == ("user", "What should I not eat at the party? I have a peanuts allergy.")
    assert (answer["role"], answer["text"]) == ("assistant", reply.choices[0].message.content)
    given = json.loads(answer["metadata"][GIVEN])
    assert b.allergy_id in given and answer["metadata"][QUERY] == turn["text"]
    assert b.until(lambda: [e for e in b.memory.events(TENANT, "alice", kinds=["memory_touched"])  # reinforced,
                            if e.event.reason == "used" and b.allergy_id in e.event.memory_ids  # as `reply` does
                            and e.event.query == turn["text"]])


def test_a_streamed_answer_passes_through_chunk_by_chunk_and_is_recorded_once_complete(b):
    b.upstream.script(Reply.text("Peanuts are the one thing to avoid; everything else is fine."))
    stream = client(b, conversation="stream").chat.completions.create(
        model="gpt-test", stream=True, messages=ask("Anything to avoid, with my peanuts allergy?"))
    chunks = [c.choices[0].delta.content or "" for c in stream if c.choices]
    assert len(chunks) > 3 and "".join(chunks) == "Peanuts are the one thing to avoid; everything else is fine."
    assert b.upstream.requests[-1].body["stream"] is True
    assert ALLERGY in b.sent()[0]["content"]
    rows = b.conversation("alice", "stream", 2)
    assert rows[1]["text"] == "".join(chunks) and b.allergy_id in json.loads(rows[1]["metadata"][GIVEN])


def test_the_async_client_plain_and_streamed_continues_one_conversation(b):
    async def chat() -> tuple[str, str, str]:
        async with AsyncOpenAI(base_url=b.base_url, api_key=b.key, max_retries=0,
                               default_headers={USER_HEADER: "alice"}) as aclient:
            b.upstream.script(Reply.text("Lisbon is lovely in May."), Reply.text("Pastel de nata, no peanuts."))
            raw = await aclient.chat.completions.with_raw_response.create(model="gpt-test",
                                                                          messages=ask("Where do I live again?"))
            said = raw.parse().choices[0].message.content
            stream = await aclient.chat.completions.create(model="gpt-test", stream=True, messages=[
                *ask("Where do I live again?"), {"role": "assistant", "content": said},
                *ask("And a snack there, safe for my peanuts allergy?")])
            streamed = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
            return raw.headers[CONVERSATION_HEADER], said, streamed

    named, said, streamed = asyncio.run(chat())
    assert (said, streamed) == ("Lisbon is lovely in May.", "Pastel de nata, no peanuts.")
    assert "lives in Lisbon" in b.sent(-2)[0]["content"]
    assert named.startswith("chat-")  # no conversation header: the chat is named by its opening, so a client
    rows = b.conversation("alice", named, 4)  # resending its history stays in one conversation, in order
    assert [r["text"] for r in rows] == ["Where do I live again?", said,
                                         "And a snack there, safe for my peanuts allergy?", streamed]


@pytest.mark.parametrize(("reply", "error", "says"), [
    (Reply.error(400, "max_tokens is too large"), BadRequestError, "max_tokens is too large"),
    (Reply.error(429, "slow down, scripted"), RateLimitError, "slow down, scripted"),
    (Reply.error(500, "the model fell over"), InternalServerError, "the model fell over"),
    (Reply(status=502, raw_body=b"Bad Gateway (not JSON)"), APIStatusError, "Bad Gateway (not JSON)"),
], ids=["400", "429", "500", "502-text"])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_an_upstream_error_passes_through_with_its_status_and_nothing_is_recorded(b, reply, error, says, stream):
    user = f"err-{reply.status}-{int(stream)}"
    b.upstream.script(reply)
    with pytest.raises(error) as raised:
        answer = client(b, user, "c").chat.completions.create(model="gpt-test", stream=stream,
                                                               messages=ask("This call fails upstream."))
        list(answer)
    assert raised.value.status_code == reply.status and says in raised.value.message
    b.upstream.script(Reply.text("This one worked."))
    client(b, user, "c").chat.completions.create(model="gpt-test", messages=ask("This call works."))
    rows = b.conversation(user, "c", 2)  # recorded in order per user: the failed call would come first
    assert [r["text"] for r in rows] == ["This call works.", "This one worked."]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_the_upstreams_request_id_rate_limits_and_retry_after_pass_through(b, stream):
    given = {"X-Request-Id": "req-scripted-1", "X-RateLimit-Remaining-Requests": "41", "OpenAI-Processing-Ms": "12",
             "X-Upstream-Private": "not passed on"}
    b.upstream.script(Reply.text("Headers too.", headers=given))
    raw = client(b, "headers", "c").chat.completions.with_raw_response.create(
        model="gpt-test", stream=stream, messages=ask("Which headers come back?"))
    if stream:
        list(raw.parse())
    # Ray Serve answers with its own request id too: the upstream's is one of the two
    assert "req-scripted-1" in raw.headers["x-request-id"].split(", ")
    assert raw.headers["x-ratelimit-remaining-requests"] == "41"
    assert raw.headers["openai-processing-ms"] == "12" and "x-upstream-private" not in raw.headers
    b.upstream.script(Reply.error(429, "slow down, scripted", headers={"Retry-After": "7"}))
    with pytest.raises(RateLimitError) as raised:
        list(client(b, "headers", "c").chat.completions.create(model="gpt-test", stream=stream,
                                                               messages=ask("And now too fast.")))
    assert raised.value.response.headers["retry-after"] == "7"


def test_a_stream_the_upstream_cuts_short_raises_in_the_client_and_records_nothing(b):
    b.upstream.script(Reply.text("This answer never gets to its end, the connection drops.", stream_cut_after=3))
    stream = client(b, "cut", "c").chat.completions.create(model="gpt-test", stream=True,
                                                           messages=ask("Tell me a long story."))
    with pytest.raises(APIError, match="ended the stream early"):
        list(stream)
    b.upstream.script(Reply.text("Short story."))
    client(b, "cut", "c").chat.completions.create(model="gpt-test", messages=ask("A short one then."))
    assert [r["text"] for r in b.conversation("cut", "c", 2)] == ["A short one then.", "Short story."]


def test_without_a_user_the_answer_is_a_400_naming_the_header_and_the_field(b):
    calls = len(b.upstream.requests)
    with pytest.raises(BadRequestError) as raised:
        client(b, user=None).chat.completions.create(model="gpt-test", messages=ask("Who am I?"))
    error = raised.value
    assert error.code == "missing_user" and error.param == USER_HEADER
    assert USER_HEADER in error.message and "`user` field" in error.message
    assert len(b.upstream.requests) == calls  # refused before anything was forwarded
    b.upstream.script(Reply.text("Hello Erin."))  # the OpenAI `user` field names the user as well
    client(b, user=None, conversation="hi").chat.completions.create(model="gpt-test", user="erin",
                                                                    messages=ask("Hi, I'm Erin."))
    assert [r["text"] for r in b.conversation("erin", "hi", 2)] == ["Hi, I'm Erin.", "Hello Erin."]
    assert b.upstream.requests[-1].body["user"] == "erin"


def test_a_wrong_key_is_a_401_and_nothing_is_forwarded(b):
    calls = len(b.upstream.requests)
    with pytest.raises(AuthenticationError) as raised:
        client(b, key="pk-not-a-key").chat.completions.create(model="gpt-test", messages=ask("Hi"))
    assert raised.value.status_code == 401 and "unknown or revoked API key" in raised.value.message
    assert raised.value.response.headers["www-authenticate"] == "Bearer"
    assert len(b.upstream.requests) == calls


@pytest.mark.parametrize(("route", "body", "param"), [
    ("/chat/completions", b"{not json", "body"), ("/chat/completions", b"[1, 2]", "body"),
    ("/chat/completions", b'{"model": "m", "messages": []}', "messages"),
    ("/chat/completions", b'{"model": "m", "messages": ["hi"]}', "messages"),
    ("/responses", b'{"model": "m"}', "input"), ("/responses", b'{"model": "m", "input": []}', "input"),
    ("/responses", b'{"model": "m", "input": [1]}', "input"),
    ("/responses", b'{"model": "m", "input": "hi", "conversation": {"id": 7}}', "conversation"),
])
def test_a_malformed_request_is_a_400_in_openais_shape(b, route, body, param):
    answer = httpx.post(b.base_url + route, content=body,
                        headers={"authorization": f"Bearer {b.key}", USER_HEADER: "alice",
                                 "content-type": "application/json"})
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["type"] == "invalid_request_error" and error["param"] == param and error["message"]


def test_replies_recorded_together_are_refused_one_by_one(b):
    """What the proxy records its calls' replies with: a refused reply is reported alone, the others recorded."""
    from events.errors import InvalidInputError

    outcomes = b.memory.record_replies([(TENANT, "alice", "You are allergic to peanuts.", [b.allergy_id]),
                                        (TENANT, "alice", "You are allergic to peanuts.", ["no-such-memory"]),
                                        (TENANT, "alice", "Peanuts: you are allergic to them.", [b.allergy_id])])
    assert isinstance(outcomes[1], InvalidInputError) and "no-such-memory" in str(outcomes[1].problems)
    assert [o[0]["memory_id"] for o in (outcomes[0], outcomes[2])] == [b.allergy_id, b.allergy_id]


def test_a_recording_batch_is_one_transaction_and_a_refused_reply_costs_only_its_own_report(b):
    """What the proxy records a batch of answered calls with (``proxy_record.record``): per shard one command, the
    turns' messages and the replies' usage in one transaction; a reply the shard refuses has that shard's turns
    recorded one by one: every turn's messages, the other replies' usage."""
    from dataclasses import replace

    from palimpsest.server.proxy_record import Turn, record

    given = b.memory.build_context(TENANT, "alice", "peanuts allergy", token_budget=300)
    assert b.allergy_id in [i.memory_id for i in given.items]
    unknown = replace(given, items=(replace(given.items[0], memory_id="no-such-memory"),))
    now = datetime.now(UTC)
    turn = lambda conversation, text, reply, context: Turn(  # noqa: E731
        TENANT, "alice", conversation, text, "", now).finished(reply, context)

    record(b.memory, [turn("batch-1", "Any allergies I should mention?", "Peanuts: you are allergic to them.", given)])
    user, assistant = b.conversation("alice", "batch-1", 2)
    appended = {e.event_id: e.recorded_at for e in b.memory.events(TENANT, "alice", kinds=["message_recorded"])}
    [used] = [e for e in b.memory.events(TENANT, "alice", kinds=["memory_touched"])
              if e.event.reason == "used" and e.recorded_at == appended[user["memory_id"]]]
    assert appended[user["memory_id"]] == appended[assistant["memory_id"]]  # one append: one recorded_at
    assert b.allergy_id in used.event.memory_ids and used.event.query == "peanuts allergy"

    record(b.memory, [turn("batch-2", "What am I allergic to?", "You are allergic to peanuts.", given),
                      turn("batch-3", "还有别的吗？", "没有别的了。", unknown)])
    assert [r["text"] for r in b.conversation("alice", "batch-2", 2)] == ["What am I allergic to?",
                                                                         "You are allergic to peanuts."]
    assert [r["text"] for r in b.conversation("alice", "batch-3", 2)] == ["还有别的吗？", "没有别的了。"]
    assert b.until(lambda: [e for e in b.memory.events(TENANT, "alice", kinds=["memory_touched"])
                            if e.event.reason == "used" and b.allergy_id in e.event.memory_ids
                            and e.recorded_at > used.recorded_at])  # the other reply's usage, reported alone


# -- the Responses API form: POST /v1/responses -----------------------------------------------------------------
def test_a_response_is_given_the_users_memory_in_its_instructions_and_comes_back_unchanged(b):
    b.upstream.script(Reply.text("Avoid peanuts and satay."))
    raw = client(b, conversation="r-snacks").responses.with_raw_response.create(
        model="gpt-test", instructions="You are terse.", temperature=0,
        input="Which snacks should I avoid, given my peanuts allergy?")
    answer = raw.parse()
    assert answer.output_text == "Avoid peanuts and satay." and answer.status == "completed"
    assert json.loads(raw.http_response.content)["object"] == "response"
    assert int(raw.headers[MEMORIES_HEADER]) >= 1 and raw.headers[CONVERSATION_HEADER] == "r-snacks"

    received = b.upstream.requests[-1]
    assert received.path == "/v1/responses" and received.headers["authorization"] == "Bearer upstream-secret"
    assert received.body["input"] == "Which snacks should I avoid, given my peanuts allergy?"  # the input as sent
    own, memory = received.body["instructions"].split("\n\n", 1)  # the memory after the request's instructions
    assert own == "You are terse." and memory.startswith(CONTEXT_HEADER) and ALLERGY in memory
    turn, reply = b.conversation("alice", "r-snacks", 2)
    assert (turn["text"], reply["text"]) == ("Which snacks should I avoid, given my peanuts allergy?",
                                             "Avoid peanuts and satay.")
    assert b.allergy_id in json.loads(reply["metadata"][GIVEN]) and reply["metadata"][RESPONSE] == answer.id


def test_a_streamed_response_passes_its_events_through_and_is_recorded_once_complete(b):
    said = "花生是唯一要避开的东西，其他都可以吃。"  # the scripted server streams it 8 characters at a time
    b.upstream.script(Reply.text(said), Reply.text("Peanut-free, all of them."))
    events = list(client(b, conversation="r-stream").responses.create(model="gpt-test", stream=True, input=[
        {"role": "user", "content": [{"type": "input_text", "text": "我对花生过敏，有什么要避开的？"}]}]))
    assert [e.type for e in events[:4]] == ["response.created", "response.in_progress",
                                            "response.output_item.added", "response.content_part.added"]
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == said
    assert events[-1].type == "response.completed" and events[-1].response.output_text == said
    assert CONTEXT_HEADER in b.upstream.requests[-1].body["instructions"]
    with client(b, conversation="r-stream-helper").responses.stream(model="gpt-test", input="Snacks for a hike, "
                                                                    "with my peanuts allergy?") as stream:
        helped = stream.get_final_response()  # the SDK's stream helper, which checks the events' order
    assert helped.output_text == "Peanut-free, all of them."
    rows = b.conversation("alice", "r-stream", 2)
    assert [r["text"] for r in rows] == ["我对花生过敏，有什么要避开的？", said]
    assert rows[1]["metadata"][RESPONSE] == events[-1].response.id


def test_the_async_client_continues_a_response_chain_and_an_objection_is_judged_against_what_it_was_given(b):
    async def chain() -> tuple[str, str]:
        async with AsyncOpenAI(base_url=b.base_url, api_key=b.key, max_retries=0, default_headers={
                USER_HEADER: "alice", CONVERSATION_HEADER: "r-chain"}) as aclient:
            b.upstream.script(Reply.text("Satay is fine for you."), Reply.text("Sorry, avoid satay."))
            first = await aclient.responses.create(model="gpt-test", input="Can I eat satay with my peanuts allergy?")
            stream = await aclient.responses.create(model="gpt-test", stream=True, previous_response_id=first.id,
                                                    input="No, that's wrong, satay has peanuts in it.")
            last = [e async for e in stream][-1]
            return first.output_text, last.response.output_text

    said, corrected = asyncio.run(chain())
    assert (said, corrected) == ("Satay is fine for you.", "Sorry, avoid satay.")
    assert b.upstream.requests[-1].body["previous_response_id"].startswith("resp_")  # forwarded as given
    rows = b.conversation("alice", "r-chain", 4)
    given = json.loads(rows[1]["metadata"][GIVEN])
    assert b.allergy_id in given  # the objection names the response it answers, not its text: found by its id
    [signal] = [s for s in b.memory.feedback(TENANT, "alice") if s["type"] == "negative"
                and s["query"] == "Can I eat satay with my peanuts allergy?"]
    assert signal["memory_ids"] == given


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_a_failed_response_passes_through_and_nothing_is_recorded(b, stream):
    user = f"r-err-{int(stream)}"
    b.upstream.script(Reply.error(429, "slow down, scripted"))
    with pytest.raises(RateLimitError, match="slow down, scripted"):
        list(client(b, user, "c").responses.create(model="gpt-test", stream=stream, input="This call fails."))
    b.upstream.script(Reply.text("A long answer the connection drops before its end.", stream_cut_after=3))
    with pytest.raises(APIError, match="ended the stream early"):
        list(client(b, user, "c").responses.create(model="gpt-test", stream=True, input="This one is cut short."))
    b.upstream.script(Reply.text("This one worked."))
    client(b, user, "c").responses.create(model="gpt-test", input="This call works.")
    assert [r["text"] for r in b.conversation(user, "c", 2)] == ["This call works.", "This one worked."]
