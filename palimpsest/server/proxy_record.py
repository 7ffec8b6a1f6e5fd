"""What the memory proxy records once the upstream has answered: the user's turn, the reply, the memories the reply
was given, and the user's turn as feedback on the proxy's reply before it.

A reply is recorded as the conversation's assistant message with, in its metadata, the ids of the memories it was
given and the query they were retrieved for (:data:`GIVEN`, :data:`QUERY`); it is reported with them as
:meth:`palimpsest.Memory.record_reply` is (the usage judge reinforces those it drew on). A later request that
continues the conversation after that reply finds it there and has the Feedback Judge judge the new user turn
against it, naming the same memories, as :meth:`palimpsest.Memory.judge_feedback` does.

Recording runs after the answer has gone (the client does not wait for it), one call after another per user: the
next request of the same user to this replica waits for it before reading the memory (:meth:`Recorder.settled`),
so a user's memory is read as their last call left it. A recording that fails is logged with its request's user
and conversation; the answer had already gone.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

import structlog
from starlette.concurrency import run_in_threadpool

log = structlog.get_logger("palimpsest.server.proxy")

GIVEN = "palimpsest_given"  # reply metadata: the ids of the memories the reply was given, as a JSON list
QUERY = "palimpsest_query"  # reply metadata: the user turn they were retrieved for
SOURCE = "palimpsest_source"  # metadata of both messages: "proxy"
LOOK_BACK = 50  # messages of the conversation searched for the reply a feedback turn answers


@dataclass(frozen=True)
class Turn:
    """One proxied call: whose, in which conversation, the user's new turn ("" when the request ends otherwise,
    e.g. with a tool result), the reply it answers ("" if none), when it came; then the reply and its context."""

    tenant: str
    user_id: str
    conversation_id: str
    user_text: str
    prior_reply: str
    received: datetime
    reply: str = ""
    context: object = None  # the Context the reply was given (None: none)

    @property
    def stream(self) -> tuple[str, str]:
        return self.tenant, self.user_id

    def finished(self, reply: str, context) -> Turn:
        return replace(self, reply=reply, context=context)

    @property
    def given(self) -> list[str]:
        return [i.memory_id for i in self.context.items] if self.context is not None else []


def record(memory, turn: Turn) -> None:
    """Record ``turn`` (blocking: the shards' calls). Feedback first: it answers the reply before this turn."""
    if turn.user_text.strip() and turn.prior_reply.strip():
        judged = _given_to(memory, turn)
        if judged is not None:
            ids, query = judged
            memory.judge_feedback(turn.tenant, turn.user_id, turn.user_text, turn.prior_reply, retrieved=ids,
                                  now=turn.received, query=query or None)
    messages = []
    base = {"conversation_id": turn.conversation_id, "speaker": None}
    if turn.user_text.strip():
        messages.append({**base, "role": "user", "text": turn.user_text, "occurred_at": turn.received.isoformat(),
                         "client_message_id": uuid.uuid4().hex, "metadata": {SOURCE: "proxy"}})
    if turn.reply.strip():
        at = max(datetime.now(UTC), turn.received + timedelta(microseconds=1))
        query = turn.context.query if turn.context is not None else turn.user_text
        messages.append({**base, "role": "assistant", "text": turn.reply, "occurred_at": at.isoformat(),
                         "client_message_id": uuid.uuid4().hex,
                         "metadata": {SOURCE: "proxy", GIVEN: json.dumps(turn.given), QUERY: query[:2000]}})
    if messages:
        memory.add_messages([{k: v for k, v in m.items() if v is not None} for m in messages],
                            tenant=turn.tenant, user_id=turn.user_id)
    if turn.reply.strip() and turn.given:
        memory.record_reply(turn.tenant, turn.user_id, turn.reply, turn.context)


def _given_to(memory, turn: Turn) -> tuple[list[str], str] | None:
    """The memories (and their query) the proxy gave the reply this turn answers; None if it gave no such reply."""
    rows = memory.conversation(turn.tenant, turn.user_id, turn.conversation_id, limit=LOOK_BACK)
    for row in reversed(rows):
        metadata = row.get("metadata") or {}
        if row["role"] == "assistant" and row["text"] == turn.prior_reply and GIVEN in metadata:
            return json.loads(metadata[GIVEN]), metadata.get(QUERY, "")
    return None


class Recorder:
    """The recordings of one replica's event loop, chained per user (tenant, user)."""

    def __init__(self) -> None:
        self._last: dict[tuple[str, str], asyncio.Task] = {}

    async def settled(self, stream: tuple[str, str]) -> None:
        """Return once every recording of ``stream`` started before now is done (failed ones were logged)."""
        task = self._last.get(stream)
        if task is not None:
            await asyncio.wait([task])

    def record(self, memory, turn: Turn) -> None:
        """Record ``turn`` after the user's earlier recordings, without waiting for it."""
        before = self._last.get(turn.stream)
        task = asyncio.get_running_loop().create_task(self._run(before, memory, turn))
        self._last[turn.stream] = task
        task.add_done_callback(lambda t: self._last.pop(turn.stream) if self._last.get(turn.stream) is t else None)

    async def _run(self, before: asyncio.Task | None, memory, turn: Turn) -> None:
        if before is not None:
            await asyncio.wait([before])
        try:
            await run_in_threadpool(record, memory, turn)
        except Exception as exc:  # noqa: BLE001 - the answer has gone: the failure is logged, with what it lost
            log.error("proxy_record_failed", tenant=turn.tenant, user_id=turn.user_id,
                      conversation_id=turn.conversation_id, error=str(exc).splitlines()[0] if str(exc) else
                      type(exc).__name__, exc_info=exc)


_recorders: dict[int, tuple[asyncio.AbstractEventLoop, Recorder]] = {}


def recorder() -> Recorder:
    """The running event loop's recorder (the loop of this replica's HTTP server)."""
    loop = asyncio.get_running_loop()
    held = _recorders.get(id(loop))
    if held is None or held[0] is not loop:
        held = _recorders[id(loop)] = (loop, Recorder())
    return held[1]
