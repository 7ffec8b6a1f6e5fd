"""Concurrent ingests of one replica written together: a group commit across requests.

A write's cost on a shard is mostly per transaction, not per message (the
durable append and its commit, the vector index's write, the follow-ups'
append; in process, recording four calls at once costs about half the CPU
per call of recording them one by one), and the encoder's per-call cost
shrinks with the batch too. So :class:`IngestBatches` sends the requests
that arrive while their shard is busy with an earlier batch as one batch
once it is done: one encode, one ``RecordMessages`` command, one
transaction. A request that came to an idle shard is sent at once (no
waiting for company), so a lone request costs what it did.

Each request is validated on its own first (its errors are its own, nothing
written), and is written whole in one command: only requests whose messages
all go to one shard and that fit in one chunk together are merged (a larger
or multi-shard request is sent alone, as before). Should a merged batch be
refused, each of its requests is sent again alone, so each gets its own
answer; nothing of a refused command was written, and a message written
before is known by its idempotency key, so nothing is written twice.

Leadership passes along: the thread of the first waiting request sends the
next batch, so no request's answer waits for other requests' batches.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from events.commands import RecordMessage, validate_messages
from palimpsest.phases import timed
from palimpsest.reports import IngestReport

MAX_MESSAGES = 256  # messages of one merged batch at most: the ingest's chunk, so each request is one command


class _Request:
    __slots__ = ("commands", "woken", "lead", "done", "report", "error")

    def __init__(self, commands: list[RecordMessage]) -> None:
        self.commands = commands
        self.woken = threading.Event()  # set when the request is answered, or is to send the next batch
        self.lead = False  # this request's thread is to send the next batch
        self.done = False
        self.report: IngestReport | None = None
        self.error: BaseException | None = None

    def answer(self) -> IngestReport:
        if self.error is not None:
            raise self.error
        return self.report


class IngestBatches:
    """The ingests of one :class:`palimpsest.Memory`, merged per shard while the shard is busy (module docstring).
    Thread-safe; ``add`` blocks until the request's messages are durable, as ``Memory.add_messages`` does."""

    def __init__(self, memory, max_messages: int = MAX_MESSAGES, merge: bool = True) -> None:
        self.memory = memory
        self.max_messages = max_messages
        self.merge = merge  # False: each request sent alone (``ServeSettings.merge_writes``)
        self._lock = threading.Lock()
        # per (shard, extract_graph) with a batch being sent: the requests waiting for it, in arrival order
        self._waiting: dict[tuple[int, bool], list[_Request]] = {}
        self.batches = self.merged = 0  # batches sent, and requests sent in a batch with others

    def add(self, messages: list[Mapping[str, Any]], *, extract_graph: bool = True) -> IngestReport:
        commands = validate_messages(list(messages))  # this request's problems are its own: nothing is queued
        shards = set(self.memory.shards.route([(m.tenant, m.user_id) for m in commands])) \
            if self.merge and commands else set()
        if len(shards) != 1 or len(commands) > self.max_messages:
            return self.memory.add_batches([commands], extract_graph=extract_graph)[0]
        key = (shards.pop(), extract_graph)
        request = _Request(commands)
        with self._lock:
            request.lead = key not in self._waiting  # no batch being sent: this request sends one
            self._waiting.setdefault(key, []).append(request)
        while True:
            if request.lead:
                request.lead = False
                self._send(key)
            with self._lock:
                if request.done:
                    return request.answer()
                if not request.lead:
                    request.woken.clear()
            if not request.lead:
                with timed("batch_wait"):  # for the shard's batch before, or the one this request went in
                    request.woken.wait()

    def _send(self, key: tuple[int, bool]) -> None:
        """Send the requests waiting for ``key``'s shard (as many as fit one batch), then pass the lead on."""
        with self._lock:
            waiting = self._waiting.get(key, [])
            batch, size = [], 0
            while waiting and (not batch or size + len(waiting[0].commands) <= self.max_messages):
                size += len(waiting[0].commands)
                batch.append(waiting.pop(0))
        try:
            self._write(batch, extract_graph=key[1])
        finally:
            with self._lock:
                self.batches += 1
                self.merged += len(batch) if len(batch) > 1 else 0
                for request in batch:
                    request.done = True
                    request.woken.set()
                waiting = self._waiting.get(key)
                if waiting:
                    waiting[0].lead = True  # its thread sends the next batch
                    waiting[0].woken.set()
                else:
                    self._waiting.pop(key, None)

    def _write(self, batch: list[_Request], *, extract_graph: bool) -> None:
        try:
            reports = self.memory.add_batches([r.commands for r in batch], extract_graph=extract_graph)
        except BaseException as exc:  # noqa: BLE001 - each request gets its own answer below
            if len(batch) == 1:
                batch[0].error = exc
                return
            for request in batch:  # nothing of the refused command was written: each alone, for its own answer
                try:
                    request.report = self.memory.add_batches([request.commands], extract_graph=extract_graph)[0]
                except BaseException as alone:  # noqa: BLE001 - raised in the request's own thread
                    request.error = alone
            return
        for request, report in zip(batch, reports):
            request.report = report
