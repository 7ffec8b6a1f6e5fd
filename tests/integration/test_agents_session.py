"""The Agents SDK session (palimpsest.integrations.agents_session) driven by the SDK's own Runner against the
project's scripted OpenAI-compatible chat server: items stored as the conversation's messages and read back
unchanged, recall from earlier sessions injected (English and Chinese) and never stored, the learning loop's
reply and feedback recorded, pop and clear as withdrawals (the log keeps everything), the recall tool."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime

import pytest

pytest.importorskip("agents")

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402

from events.errors import InvalidInputError  # noqa: E402
from palimpsest import Memory  # noqa: E402
from palimpsest.integrations import ClosedError  # noqa: E402
from palimpsest.integrations.agents_session import RECALL_HEADER, PalimpsestSession  # noqa: E402
from tests.fakes.openai_server import FakeOpenAI, Reply  # noqa: E402

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def mem(ray_cluster, tmp_path_factory):
    memory = Memory.open(tmp_path_factory.mktemp("agents") / "store", num_shards=2, embedder="hash")
    yield memory
    memory.close()


@pytest.fixture
def server():
    with FakeOpenAI() as fake:
        yield fake


def agent(server: FakeOpenAI, **kw) -> Agent:
    client = AsyncOpenAI(base_url=server.base_url, api_key="test-key")
    return Agent(name="assistant", instructions="You are a helpful assistant.",
                 model=OpenAIChatCompletionsModel(model="fake-model", openai_client=client), **kw)


def run(server: FakeOpenAI, session: PalimpsestSession, text: str, reply: str) -> str:
    server.script(Reply.text(reply))
    config = RunConfig(session_input_callback=session.recall, tracing_disabled=True)
    return asyncio.run(Runner.run(agent(server), text, session=session, run_config=config)).final_output


def system_texts(server: FakeOpenAI) -> list[str]:
    """The system messages of the last chat request (after the agent's instructions)."""
    return [m["content"] for m in server.requests[-1].body["messages"] if m["role"] == "system"][1:]


def test_a_later_session_recalls_what_an_earlier_one_was_told_and_stores_only_the_turns(mem, server):
    first = PalimpsestSession(mem, "acme", "alice", "s1")
    assert run(server, first, "I am allergic to peanuts.", "Noted, thanks!") == "Noted, thanks!"
    assert system_texts(server) == []  # nothing remembered yet: nothing recalled
    stored = asyncio.run(first.get_items())
    assert [(i["role"], i.get("type")) for i in stored] == [("user", None), ("assistant", "message")]
    assert stored[0]["content"] == "I am allergic to peanuts."
    assert stored[1]["content"][0]["text"] == "Noted, thanks!"

    second = PalimpsestSession(mem, "acme", "alice", "s2")
    run(server, second, "Which snacks should I avoid, given my peanuts allergy?", "Avoid peanuts and satay.")
    [recalled] = system_texts(server)
    assert recalled.startswith(RECALL_HEADER) and "allergic to peanuts" in recalled, recalled
    items = asyncio.run(second.get_items())
    assert [i["role"] for i in items] == ["user", "assistant"]  # the recall item is not stored
    used = mem.events("acme", "alice", kinds=["memory_touched"])
    assert any(e.event.reason == "used" for e in used)  # the reply drew on the recalled memory: reinforced
    assert [m["text"] for m in mem.conversation("acme", "alice", "s1")] == [
        "I am allergic to peanuts.", "Noted, thanks!"]


def test_chinese_turns_are_recalled_in_a_later_session(mem, server):
    run(server, PalimpsestSession(mem, "acme", "lin", "zh-1"), "我对花生过敏。", "好的，我记住了。")
    run(server, PalimpsestSession(mem, "acme", "lin", "zh-2"), "我对什么过敏？花生吗？", "你对花生过敏。")
    [recalled] = system_texts(server)
    assert "花生过敏" in recalled, recalled


def test_the_next_user_turn_is_judged_as_feedback_on_the_reply_that_used_memory(mem, server):
    session = PalimpsestSession(mem, "acme", "max", "m1")
    run(server, session, "My dog is called Biscuit", "What a lovely name!")
    run(server, session, "What is my dog called? Biscuit?", "Your dog is called Biscuit.")
    run(server, session, "Thanks, that's right!", "You're welcome.")
    signals = mem.feedback("acme", "max")
    assert signals, "the third turn answers a reply that was given recalled memory: it is judged"


def test_pop_and_clear_withdraw_items_that_the_log_keeps(mem, server):
    session = PalimpsestSession(mem, "acme", "ivy", "p1")
    run(server, session, "Remind me to water the plants", "I will remind you.")
    popped = asyncio.run(session.pop_item())
    assert popped["role"] == "assistant" and popped["content"][0]["text"] == "I will remind you."
    assert [i["role"] for i in asyncio.run(session.get_items())] == ["user"]
    asyncio.run(session.add_items([{"role": "assistant", "content": "Sure: plants, every Sunday."}]))
    assert asyncio.run(session.get_items(limit=1)) == [{"role": "assistant", "content": "Sure: plants, every Sunday."}]

    asyncio.run(session.clear_session())
    assert asyncio.run(session.get_items()) == [] and asyncio.run(session.pop_item()) is None
    withdrawn = mem.conversation("acme", "ivy", "p1", withdrawn=True)
    assert len(withdrawn) == 3 and all(m["archived"]["reason"] == "manual" for m in withdrawn)
    assert {m["archived"]["detail"] for m in withdrawn} == {"popped from the agent session",
                                                            "the agent session was cleared"}


def test_items_of_every_kind_read_back_unchanged(mem):
    session = PalimpsestSession(mem, "acme", "zed", "k1")
    items = [
        {"role": "user", "content": [{"type": "input_text", "text": "What's the weather in Oslo?"}]},
        {"type": "function_call", "call_id": "call_1", "name": "weather", "arguments": '{"city": "Oslo"}',
         "id": "fc_1", "status": "completed"},
        {"type": "function_call_output", "call_id": "call_1", "output": "Rain, 7 °C"},
        {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "text": "It rains in Oslo: 7 °C.", "annotations": []}]},
    ]
    asyncio.run(session.add_items(items))
    assert asyncio.run(session.get_items()) == items
    assert [(m["role"], m["text"]) for m in mem.conversation("acme", "zed", "k1")] == [
        ("user", "What's the weather in Oslo?"), ("assistant", '{"city": "Oslo"}'), ("tool", "Rain, 7 °C"),
        ("assistant", "It rains in Oslo: 7 °C.")]


def test_the_recall_tool_answers_the_agent_from_the_users_memory(mem, server):
    session = PalimpsestSession(mem, "acme", "kai", "t1")
    run(server, session, "I work as a nurse in Boston", "Good to know.")
    call = {"id": "c1", "object": "chat.completion", "created": 0, "model": "fake-model", "choices": [{
        "index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_r", "type": "function", "function": {"name": "recall_memories",
                                                               "arguments": json.dumps({"query": "job nurse"})}}]}}]}
    server.script(Reply(raw_body=json.dumps(call).encode()), Reply.text("You are a nurse in Boston."))
    later = PalimpsestSession(mem, "acme", "kai", "t2")
    result = asyncio.run(Runner.run(agent(server, tools=[later.recall_tool()]), "What is my job?", session=later,
                                    run_config=RunConfig(tracing_disabled=True)))
    assert result.final_output == "You are a nurse in Boston."
    tool_answer = [m for m in server.requests[-1].body["messages"] if m["role"] == "tool"]
    assert "nurse in Boston" in tool_answer[0]["content"]
    assert [i.get("type", "message") for i in asyncio.run(later.get_items())] == [
        "message", "function_call", "function_call_output", "message"]


def test_a_session_may_not_be_the_conversation_that_holds_the_users_store_items(mem):
    mem.put_item("acme", "uma", "diet", {"text": "Uma is vegan"})
    mem.put_item("acme", "uma", "city", {"text": "Uma lives in Lisbon"}, collection="notes")
    for session_id in ("items", "items:notes", "items:"):
        with pytest.raises(InvalidInputError, match=r"session_id: .* is where the store keeps the user's items"):
            PalimpsestSession(mem, "acme", "uma", session_id)
    assert [i["key"] for i in mem.items("acme", "uma")] == ["city", "diet"]  # nothing read, nothing withdrawn
    assert asyncio.run(PalimpsestSession(mem, "acme", "uma", "items-chat").get_items()) == []  # a name like it is


def test_ids_and_the_recall_budget_are_checked_when_the_session_is_made(mem):
    for args, field in (((5, "alice", "s"), "tenant"), (("acme", None, "s"), "user_id"),
                        (("acme", "alice", ""), "session_id"), (("acme", "alice", "s" * 1000), "session_id"),
                        (("acme", "alice", None), "session_id")):
        with pytest.raises(InvalidInputError, match=rf"rejected agent session.*\n  - {field}: "):
            PalimpsestSession(mem, *args)
    with pytest.raises(InvalidInputError, match=r"user_id: ' alice ': has leading or trailing spaces; remove the "
                                                r"spaces at either end, e.g. 'alice'"):
        PalimpsestSession(mem, "acme", " alice ", "s")
    for budget in (0, -5, "600", 2.5):
        with pytest.raises(InvalidInputError, match=r"recall_budget: .*give a positive integer number of tokens"):
            PalimpsestSession(mem, "acme", "alice", "s", recall_budget=budget)


def test_bad_items_are_refused_by_their_index_and_none_of_the_batch_is_recorded(mem):
    session = PalimpsestSession(mem, "acme", "vic", "v1")
    ok = {"role": "user", "content": "I like tea"}
    for items, field in ((["hello"], r"items\[0\]: 'hello' \(a str\)"), ([None], r"items\[0\]: None"),
                         (None, r"items: None"), (ok, r"items: \{'role'")):
        with pytest.raises(InvalidInputError, match=field):
            asyncio.run(session.add_items(items))
    with pytest.raises(InvalidInputError) as rejected:
        asyncio.run(session.add_items([ok, "bad", {"role": "user", "content": "x", "when": datetime(2024, 1, 1)}]))
    assert [f for f, _ in rejected.value.problems] == ["items[1]", "items[2]"]
    assert "not JSON (Object of type datetime is not JSON serializable)" in rejected.value.problems[1][1]
    assert asyncio.run(session.get_items()) == [] and mem.conversation("acme", "vic", "v1") == []
    with pytest.raises(InvalidInputError, match=r"new_items\[0\]: 'hi' \(a str\)"):
        asyncio.run(session.recall([], ["hi"]))
    with pytest.raises(InvalidInputError, match=r"limit: '2'; give an integer"):
        asyncio.run(session.get_items(limit="2"))


def test_open_takes_the_memory_options_and_the_sessions_own_and_a_closed_session_says_so(ray_cluster, tmp_path):
    session = PalimpsestSession.open(tmp_path / "store", "acme", "wes", "w1", embedder="hash", num_shards=1,
                                     recall_budget=300, judge_feedback=False)
    assert (session.recall_budget, session.judge) == (300, False)
    asyncio.run(session.add_items([{"role": "user", "content": "I live in Oslo"}]))
    assert asyncio.run(session.get_items()) == [{"role": "user", "content": "I live in Oslo"}]
    session.close()
    session.close()  # twice: nothing more
    with pytest.raises(ClosedError, match="the session is closed"):
        asyncio.run(session.get_items())
    with pytest.raises(InvalidInputError, match="session_id"):  # refused before a store is opened
        PalimpsestSession.open(tmp_path / "other", "acme", "wes", "items", embedder="hash")
    assert not (tmp_path / "other").exists()


def test_a_session_on_a_served_store_through_its_url_and_key(ray_cluster, tmp_path_factory, request, server):
    from tests.integration.proxy_server import shared_bench

    # the store of unit "served" (tests/xdist_schedule.py), whose other modules keep to users of their own
    bench = shared_bench(request, tmp_path_factory)
    running, key = bench.running, bench.key
    first = PalimpsestSession.connect(running.url, key, "noa", "r1")
    assert asyncio.run(first.get_items()) == [] and asyncio.run(first.pop_item()) is None  # a user not held yet
    run(server, first, "I am allergic to peanuts.", "Noted.")
    second = PalimpsestSession.connect(running.url, key, "noa", "r2")
    run(server, second, "Which snacks should I avoid? Peanuts?", "Avoid peanuts.")
    assert "allergic to peanuts" in system_texts(server)[0]
    assert [i["role"] for i in asyncio.run(second.get_items())] == ["user", "assistant"]
    asyncio.run(second.clear_session())
    assert asyncio.run(second.get_items()) == [] and len(running.memory.conversation("acme", "noa", "r2",
                                                                                     withdrawn=True)) == 2
    first.close(), second.close()
