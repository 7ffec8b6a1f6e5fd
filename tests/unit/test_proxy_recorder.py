"""The memory proxy's recorder (:class:`palimpsest.server.proxy_record.Recorder`): the calls answered within its
delay are written in one batch once the delay has passed, a user calling again has their queued call written at
once, and a stopping replica writes what is queued; the delay's setting. The memory is a stand-in that notes each write (the real
store's recording is tested in ``tests/integration/test_proxy.py``)."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

import pytest

from events.errors import LlmError
from palimpsest.server.proxy_record import Recorder, Turn
from palimpsest.server.proxy_upstream import Upstream


class Written:
    """A memory that notes each ``record_turns`` call: the user ids of its messages, and when it came."""

    def __init__(self) -> None:
        self.batches: list[tuple[float, list[str]]] = []

    def record_turns(self, messages, replies):
        messages = list(messages)
        self.batches.append((time.monotonic(), [m["user_id"] for m in messages]))
        return [{"memory_id": f"m{i}", "created": True} for i in range(len(messages))], []


def turn(user_id: str, text: str = "I like green tea.") -> Turn:
    return Turn("acme", user_id, "chat-1", text, "", datetime.now(UTC))


def test_calls_answered_within_the_delay_are_written_together_once_it_has_passed():
    async def scenario(memory: Written) -> float:
        recorder = Recorder(memory, delay_s=0.3)
        began = time.monotonic()
        recorder.record(turn("alice"))
        await asyncio.sleep(0.1)
        recorder.record(turn("bob"))
        recorder.record(turn("alice", "And oolong."))
        await asyncio.sleep(0.1)
        assert memory.batches == []  # still within the delay
        await asyncio.sleep(0.4)
        return began

    memory = Written()
    began = asyncio.run(scenario(memory))
    [(at, users)] = memory.batches
    assert users == ["alice", "bob", "alice"]  # in the order the calls were answered
    assert at - began >= 0.3


def test_a_user_calling_again_has_their_queued_call_written_at_once():
    async def scenario(memory: Written) -> float:
        recorder = Recorder(memory, delay_s=60)
        recorder.record(turn("alice"))
        began = time.monotonic()
        await asyncio.wait_for(recorder.settled(("acme", "alice")), 10)  # alice is back: no minute's wait
        return time.monotonic() - began

    memory = Written()
    waited = asyncio.run(scenario(memory))
    assert [users for _, users in memory.batches] == [["alice"]] and waited < 5


def test_a_user_with_nothing_queued_reads_at_once_and_writes_nothing():
    async def scenario(memory: Written) -> None:
        recorder = Recorder(memory, delay_s=60)
        await asyncio.wait_for(recorder.settled(("acme", "alice")), 1)

    memory = Written()
    asyncio.run(scenario(memory))
    assert memory.batches == []


def test_a_stopping_replica_writes_what_is_queued():
    async def scenario(memory: Written) -> None:
        recorder = Recorder(memory, delay_s=60)
        recorder.record(turn("alice"))
        recorder.record(turn("bob"))
        await asyncio.wait_for(recorder.flush(), 10)

    memory = Written()
    asyncio.run(scenario(memory))
    assert [users for _, users in memory.batches] == [["alice", "bob"]]


def test_the_delay_is_read_from_the_environment_and_a_bad_value_is_named():
    url = {"PALIMPSEST_PROXY_UPSTREAM_URL": "http://127.0.0.1:11434/v1"}
    assert Upstream.from_env(url).record_delay_s == 1.0
    assert Upstream.from_env({**url, "PALIMPSEST_PROXY_RECORD_DELAY_S": "0"}).record_delay_s == 0.0
    for bad in ("-1", "61", "soon", "nan"):
        with pytest.raises(LlmError, match="PALIMPSEST_PROXY_RECORD_DELAY_S"):
            Upstream.from_env({**url, "PALIMPSEST_PROXY_RECORD_DELAY_S": bad})
