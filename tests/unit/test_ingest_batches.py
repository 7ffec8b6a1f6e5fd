"""The server's group commit across concurrent ingests (:mod:`palimpsest.server.ingest_batches`), on a real
one-shard store answered in process (DuckDB log, LanceDB, the shard's folds; the hash encoder)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from events.errors import InvalidInputError
from events.log import ScanFilter
from palimpsest import config as store_config
from palimpsest.server.ingest_batches import IngestBatches
from tests.cli_inprocess import InProcessMemory, use_in_process

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def memory(tmp_path, monkeypatch):
    store_config.StoreConfig.create(tmp_path / "s", 1, "hash", encrypted=False)
    use_in_process(monkeypatch)
    mem = InProcessMemory(tmp_path / "s")
    yield mem
    mem.close()


class Held:
    """The store, with its first batch held until ``release`` (so the requests sent meanwhile queue behind it) and,
    with ``refuse_merged``, the first batch of several requests refused before anything is written."""

    def __init__(self, memory, refuse_merged: bool = False) -> None:
        self.memory, self.shards = memory, memory.shards
        self.entered, self.release = threading.Event(), threading.Event()
        self.calls: list[int] = []  # requests per call
        self.refuse_merged = refuse_merged

    def add_batches(self, batches, **kwargs):
        self.calls.append(len(batches))
        if len(self.calls) == 1:
            self.entered.set()
            assert self.release.wait(30)
        if self.refuse_merged and len(batches) > 1:
            self.refuse_merged = False
            raise InvalidInputError([("vectors", "refused for the test")], what="record batch")
        return self.memory.add_batches(batches, **kwargs)


def message(user: str, n: int, text: str, **extra) -> dict:
    return {"tenant": "t", "user_id": user, "conversation_id": "c", "role": "user", "text": text,
            "occurred_at": (T0 + timedelta(minutes=n)).isoformat(), **extra}


def concurrently(batches: IngestBatches, held: Held, requests: list[list[dict]]) -> list:
    """The first request sent and held in the store; the others sent meanwhile; then the store let go."""
    answers: list = [None] * len(requests)

    def send(i: int) -> None:
        try:
            answers[i] = batches.add(requests[i])
        except Exception as exc:  # noqa: BLE001 - the test reads it
            answers[i] = exc

    threads = [threading.Thread(target=send, args=(0,))]
    threads[0].start()
    assert held.entered.wait(30)
    threads += [threading.Thread(target=send, args=(i,)) for i in range(1, len(requests))]
    for t in threads[1:]:
        t.start()
    deadline = datetime.now() + timedelta(seconds=30)
    while sum(len(q) for q in batches._waiting.values()) < len(requests) - 1 and datetime.now() < deadline:
        threading.Event().wait(0.01)
    held.release.set()
    for t in threads:
        t.join(60)
    return answers


def logged_texts(memory) -> list[str]:
    """The texts of the messages the log holds, in log order."""
    return [e.event.text for e in memory.core.scan(ScanFilter(kinds=("message_recorded",)))]


def test_requests_sent_while_the_shard_writes_go_together_each_answered_with_its_own_report(memory):
    held = Held(memory)
    batches = IngestBatches(held)
    requests = [[message("ann", 0, "I moved to Lisbon.")],
                [message("bob", 1, "我喜欢喝绿茶。"), message("bob", 2, "My sister lives in Oslo.")],
                [message("ann", 3, "I adopted a cat named Miso."), message("ann", 4, "I moved to Lisbon.")],
                [message("cat", 5, "We chose PostgreSQL.", client_message_id="x1")],
                [message("cat", 6, "We chose PostgreSQL.", client_message_id="x1")]]
    answers = concurrently(batches, held, requests)
    assert held.calls == [1, 4]  # the first alone (its shard was idle), the four sent meanwhile as one batch
    assert (batches.batches, batches.merged) == (2, 4)
    assert [(a.received, a.created, a.duplicates) for a in answers] == [(1, 1, 0), (2, 2, 0), (2, 2, 0), (1, 1, 0),
                                                                        (1, 0, 1)]
    assert answers[4].memory_ids == answers[3].memory_ids  # the same client id: one memory
    assert len(set(answers[1].memory_ids + answers[2].memory_ids + answers[0].memory_ids)) == 5
    assert len(logged_texts(memory)) == 6
    hits = memory.search("t", "bob", "green tea sister Oslo", k=5)
    assert {h.memory_id for h in hits} == set(answers[1].memory_ids)


def test_an_invalid_request_is_refused_alone_and_the_others_are_written(memory):
    batches = IngestBatches(memory)
    with pytest.raises(InvalidInputError, match="text"):
        batches.add([message("ann", 0, "fine"), message("ann", 1, "")])
    assert logged_texts(memory) == []
    report = batches.add([message("ann", 2, "I moved to Lisbon.")])
    assert (report.received, report.created) == (1, 1)


def test_a_merged_batch_refused_is_sent_again_request_by_request(memory):
    held = Held(memory, refuse_merged=True)
    batches = IngestBatches(held)
    requests = [[message("ann", 0, "first")], [message("ann", 1, "second")], [message("bob", 2, "third")]]
    answers = concurrently(batches, held, requests)
    assert held.calls == [1, 2, 1, 1]  # the merged batch refused, then each of its requests alone
    assert [(a.received, a.created) for a in answers] == [(1, 1), (1, 1), (1, 1)]
    assert len(logged_texts(memory)) == 3


def test_a_request_bigger_than_a_batch_or_for_two_shards_is_sent_alone(memory, monkeypatch):
    held = Held(memory)
    held.release.set()
    batches = IngestBatches(held, max_messages=2)
    report = batches.add([message("ann", i, f"turn {i}") for i in range(3)])
    assert (report.received, report.created, held.calls) == (3, 3, [1])
    monkeypatch.setattr(memory.shards, "route", lambda streams: list(range(len(streams))))
    report = batches.add([message("ann", 5, "one"), message("bob", 6, "two")])
    assert (report.created, held.calls, batches.batches) == (2, [1, 1], 0)
