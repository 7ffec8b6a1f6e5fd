"""The proxy's recorder starts writing a call's turn once the call's answer has gone (or shortly after, when the
client went away and the answer was never sent), and a user's next call waits for it, unless that call holds the
turn itself."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import UTC, datetime

import pytest

from palimpsest.server import proxy_record
from palimpsest.server.proxy_record import Asked, Recorder, Turn
from projections.queries.context import Context, ContextItem


def _turn(user: str = "alice") -> Turn:
    return Turn("acme", user, "c1", "I moved to Leeds", "", datetime.now(UTC)).finished("Noted.", None)


def _writes(monkeypatch) -> list[tuple[float, list[str]]]:
    writes = []

    def record(memory, turns, messages_written=None):  # the shards' side: timed, not run
        writes.append((time.monotonic(), [t.user_id for t in turns]))
        if messages_written is not None:
            messages_written()

    monkeypatch.setattr(proxy_record, "record", record)
    return writes


def test_a_recording_starts_when_its_answer_has_gone_and_the_users_next_call_waits_for_it(monkeypatch):
    writes = _writes(monkeypatch)

    async def scenario():
        recorder = Recorder(memory=None)
        recorder.record(_turn())
        recorder.record(_turn("bob"))
        await asyncio.sleep(0.01)
        assert writes == []  # the answers are still being sent
        sent = time.monotonic()
        recorder.start()  # the answer's last bytes have gone
        await asyncio.wait_for(recorder.settled(("acme", "alice")), 1)
        assert [users for _, users in writes] == [["alice", "bob"]] and writes[0][0] >= sent
        await asyncio.sleep(proxy_record.START_AFTER_S * 2)  # the timers that follow find nothing left
        assert len(writes) == 1

    asyncio.run(scenario())


def test_an_answer_never_sent_is_recorded_all_the_same_shortly_after(monkeypatch):
    writes = _writes(monkeypatch)

    async def scenario():
        recorder = Recorder(memory=None)
        queued = time.monotonic()
        recorder.record(_turn())  # its client went away: no start() comes
        await asyncio.wait_for(recorder.settled(("acme", "alice")), 1)
        assert [users for _, users in writes] == [["alice"]]
        assert writes[0][0] - queued >= proxy_record.START_AFTER_S * 0.9

    asyncio.run(scenario())


def _held(monkeypatch) -> threading.Event:
    """The shards' side held until the returned event is set (a recording still being written)."""
    release = threading.Event()

    def record(memory, turns, messages_written=None):
        release.wait(5)
        if messages_written is not None:
            messages_written()

    monkeypatch.setattr(proxy_record, "record", record)
    return release


def _asked(query: str, user_text: str, prior_reply: str = "", prior_response_id: str = "") -> Asked:
    return Asked(query, user_text, prior_reply, "hello", prior_response_id)


def test_a_call_holding_the_latest_calls_turn_reads_at_once_and_any_other_waits(monkeypatch):
    release = _held(monkeypatch)
    latest = Turn("acme", "alice", "c1", "I moved to Leeds", "", datetime.now(UTC)).finished("Noted.", None, "resp_1")
    nxt = Turn("acme", "alice", "c1", "And my sister?", "Noted.", datetime.now(UTC))
    elsewhere = Turn("acme", "alice", "c2", "And my sister?", "Noted.", datetime.now(UTC))
    tool_result = Turn("acme", "alice", "c1", "", "", datetime.now(UTC))

    async def scenario():
        recorder = Recorder(memory=None)
        recorder.record(latest)
        recorder.start()
        await asyncio.sleep(0.01)  # the batch is being written
        for later, asked in ((nxt, _asked("And my sister?", "And my sister?", prior_reply="Noted.")),
                             (nxt, _asked("And my sister?", "And my sister?", prior_response_id="resp_1")),
                             (tool_result, _asked("I moved to Leeds", ""))):  # a tool result continuing the turn
            await asyncio.wait_for(recorder.settled(later.stream, lambda p: p.carried_by(later, asked)), 1)
        for later, asked in ((elsewhere, _asked("And my sister?", "And my sister?", prior_reply="Noted.")),
                             (nxt, _asked("And my sister?", "And my sister?", prior_reply="Something else.")),
                             (nxt, _asked("I moved to Leeds", "I moved to Leeds"))):  # the same words, a new turn
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(recorder.settled(later.stream, lambda p: p.carried_by(later, asked)), 0.05)
        recorder.record(nxt.finished("She lives in Oslo.", None))  # the held call answered: two calls unwritten
        carried = _asked("Thanks", "Thanks", prior_reply="She lives in Oslo.")
        with pytest.raises(TimeoutError):  # it may skip the latest only: the one before is still being written
            await asyncio.wait_for(recorder.settled(nxt.stream, lambda p: p.carried_by(nxt, carried)), 0.05)
        release.set()
        await asyncio.wait_for(recorder.settled(nxt.stream), 2)
        assert recorder._pending == {}

    asyncio.run(scenario())


def test_a_turn_recorded_with_the_reply_it_answers_is_judged_against_what_that_reply_was_given():
    class Memory:
        def __init__(self):
            self.judged = []

        def judge_feedback(self, tenant, user_id, text, reply, *, retrieved, now, query):
            self.judged.append((text, reply, retrieved, query))

        def conversation(self, *args, **kwargs):
            return []  # nothing of the batch is written yet

        def record_turns(self, messages, replies):
            return [None] * len(messages), [None] * len(replies)

    context = Context(query="Where do I live?", budget=100, tokens=5,
                      items=(ContextItem(memory_id="m1", turn_id=None, conversation_id="c0", line="Leeds", tokens=5,
                                         score=1.0, provenance={}, occurred_at=None),))
    first = Turn("acme", "alice", "c1", "Where do I live?", "", datetime.now(UTC)).finished("In York.", context)
    objection = Turn("acme", "alice", "c1", "No, I moved to Leeds.", "In York.", datetime.now(UTC)).finished("Sorry!",
                                                                                                          None)
    memory = Memory()
    proxy_record.record(memory, [first, objection])
    assert memory.judged == [("No, I moved to Leeds.", "In York.", ["m1"], "Where do I live?")]
