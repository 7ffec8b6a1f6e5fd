"""The proxy's recorder starts writing a call's turn once the call's answer has gone (or shortly after, when the
client went away and the answer was never sent), and a user's next call waits for it."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

from palimpsest.server import proxy_record
from palimpsest.server.proxy_record import Recorder, Turn


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
