"""What the memory proxy records once the upstream has answered: the user's turn, the reply, the memories the reply
was given, and the user's turn as feedback on the proxy's reply before it.

A reply is recorded as the conversation's assistant message with, in its metadata, the ids of the memories it was
given and the query they were retrieved for (:data:`GIVEN`, :data:`QUERY`), and the upstream's id of the
response when it has one (:data:`RESPONSE`, a Responses API response's); it is reported with them as
:meth:`palimpsest.Memory.record_reply` is (the usage judge reinforces those it drew on). A later request that
continues the conversation after that reply (resending it, or naming its response as ``previous_response_id``)
finds it there and has the Feedback Judge judge the new user turn
against it, naming the same memories, as :meth:`palimpsest.Memory.judge_feedback` does.

Recording runs after the answer has gone (the client does not wait for it; the writing starts once the answer's
last bytes are sent, so its work does not hold them up), in batches: the calls answered while
one batch is written go together in the next (their messages and the replies' reports, one command and one
transaction per shard). The next call of a user to this replica waits until the messages of their calls are written
before it reads their memory (:meth:`Recorder.settled`), so the memory is read with the user's last turn and reply in
it, and a replica answering faster than it can record slows down instead of piling recordings up. One call is spared
the wait for the latest of them: a call that carries that call's turn itself (:meth:`Turn.carried_by`: the same
conversation, continued after its reply or its response, or its user turn continued by tool results, as an agent's
loop does) reads at once; the memory is then read without that turn, which the request holds, and still waits for
any earlier call. A recording refused or failed is logged with its user and conversation; the answer had already gone.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

import structlog

from events.commands import MAX_TEXT_CHARS
from events.errors import InvalidInputError
from palimpsest import phases
from palimpsest.server.threads import in_thread

log = structlog.get_logger("palimpsest.server.proxy")

GIVEN = "palimpsest_given"  # reply metadata: the ids of the memories the reply was given, as a JSON list
QUERY = "palimpsest_query"  # reply metadata: the user turn they were retrieved for
RESPONSE = "palimpsest_response"  # reply metadata: the upstream's id of the response (Responses API)
SOURCE = "palimpsest_source"  # metadata of both messages: "proxy"
TRUNCATED = "palimpsest_truncated_from"  # metadata of a message whose text was cut to the limit: its length
LOOK_BACK = 50  # messages of the conversation searched for the reply a feedback turn answers
MAX_BATCH = 512  # calls recorded together at most
START_AFTER_S = 0.05  # a call's recording starts when its answer has been sent, or this long after it was queued


@dataclass(frozen=True)
class Asked:
    """What the proxy reads of a request, whichever its form: the last user turn (the memory is read for it), the
    same turn when the request ends with it (then it is recorded), the reply it answers, the opening user turn
    (which names the conversation unless the request names one; without a user turn, :func:`opening`), and the
    upstream response it continues (``previous_response_id``)."""

    query: str
    user_text: str
    prior_reply: str
    opening: str
    prior_response_id: str = ""
    conversation: object = None  # the conversation the request names (a response's ``conversation``), unchecked


def opening(first: dict) -> str:
    """What names the chat of a request without a user turn (a tool result, odd roles): its first message or item,
    whole (a client resending it names the same chat; another chat, another name)."""
    return json.dumps(first, ensure_ascii=False, sort_keys=True, default=str)


@dataclass(frozen=True)
class Turn:
    """One proxied call: whose, in which conversation, the user's new turn ("" when the request ends otherwise,
    e.g. with a tool result), the reply it answers ("" if none: then perhaps the response it continues), when it
    came; then the reply, its context and the upstream's id of it."""

    tenant: str
    user_id: str
    conversation_id: str
    user_text: str
    prior_reply: str
    received: datetime
    reply: str = ""
    context: object = None  # the Context the reply was given (None: none)
    answered: datetime | None = None
    prior_response_id: str = ""
    response_id: str = ""
    key: str = field(default_factory=lambda: uuid.uuid4().hex)  # its messages' client ids: a retried ingest adds none

    @property
    def stream(self) -> tuple[str, str]:
        return self.tenant, self.user_id

    def finished(self, reply: str, context, response_id: str = "") -> Turn:
        """The turn answered ``reply`` (now; the upstream's ``response_id`` for it), given ``context``."""
        return replace(self, reply=reply, context=context, response_id=response_id,
                       answered=max(datetime.now(UTC), self.received + timedelta(microseconds=1)))

    @property
    def continues(self) -> bool:
        """The turn answers an earlier reply (given in the request, or as the response it continues)."""
        return bool(self.user_text.strip() and (self.prior_reply.strip() or self.prior_response_id))

    def carried_by(self, later: Turn, asked: Asked) -> bool:
        """Whether the request ``asked`` (of the same user's call ``later``) holds this call's turn itself: in the
        same conversation, it continues after this call's reply (resent, or the response it continues) or, ending
        otherwise than with a user turn (a tool result), continues this call's user turn."""
        if later.conversation_id != self.conversation_id:
            return False
        return bool((self.reply.strip() and _replied_to(asked, self.reply, self.response_id))
                    or (self.user_text.strip() and not asked.user_text and asked.query == self.user_text))

    @property
    def given(self) -> list[str]:
        return [i.memory_id for i in self.context.items] if self.context is not None else []

    @property
    def asked_for(self) -> str:
        """The query the reply's memories were retrieved for (its user turn when it was given none), as recorded."""
        return (self.context.query if self.context is not None else self.user_text)[:2000]


def record(memory, turns: list[Turn], messages_written=None) -> None:
    """Record ``turns`` (blocking: the shards' calls), of one user or many, in one batch: each turn's feedback
    first (it answers the reply before the turn), then every turn's messages and the replies' reports (the memories
    they were given) together, one command per shard (:meth:`palimpsest.Memory.record_turns`: one transaction),
    then ``messages_written()``, if given. A turn refused (its messages, its feedback or its reply) is logged; the
    others are recorded all the same: the turns of a shard that refused its part are recorded again one by one."""
    for n, turn in enumerate(turns):
        if turn.continues:
            _guarded(turn, "feedback", _judge, memory, turn, turns[:n])
    batch = [(t, _messages(t)) for t in turns if _messages(t)]
    refused = [t for t, _ in batch]
    try:
        message_outcomes, reply_outcomes = memory.record_turns([m for _, ms in batch for m in ms],
                                                               [_report(t) for t, _ in batch if _replied(t)])
    except InvalidInputError:  # a message was refused: each turn alone, so the others are kept
        pass
    else:
        outcomes, reports, refused = iter(message_outcomes), iter(reply_outcomes), []
        for turn, messages in batch:
            failed = [o for _, o in zip(messages, outcomes) if isinstance(o, Exception)]
            if failed or (_replied(turn) and isinstance(next(reports), Exception)):
                refused.append(turn)  # its shard wrote nothing of the batch
    written = [t for t in refused if _guarded(t, "messages", memory.add_messages, _messages(t))]
    if messages_written is not None:
        messages_written()
    replies = [t for t in written if _replied(t)]
    for turn, outcome in zip(replies, memory.record_replies([_report(t) for t in replies]) if replies else ()):
        if isinstance(outcome, Exception):
            _failed(turn, "reply", outcome)


def _replied(turn: Turn) -> bool:
    """The turn has a reply that was given memories: it is reported with them."""
    return bool(turn.reply.strip() and turn.given)


def _report(turn: Turn) -> tuple:
    return turn.tenant, turn.user_id, turn.reply, turn.context


def _messages(turn: Turn) -> list[dict]:
    """The turn's user message (if the request ended with one) and its reply (with what it was given)."""
    out = []
    base = {"tenant": turn.tenant, "user_id": turn.user_id, "conversation_id": turn.conversation_id}
    if turn.user_text.strip():
        out.append({**base, "role": "user", **_kept(turn.user_text, {SOURCE: "proxy"}),
                    "occurred_at": turn.received.isoformat(), "client_message_id": turn.key + "-u"})
    if turn.reply.strip():
        metadata = {SOURCE: "proxy", GIVEN: json.dumps(turn.given), QUERY: turn.asked_for}
        if turn.response_id:
            metadata[RESPONSE] = turn.response_id
        out.append({**base, "role": "assistant", **_kept(turn.reply, metadata),
                    "occurred_at": turn.answered.isoformat(), "client_message_id": turn.key + "-a"})
    return out


def _kept(text: str, metadata: dict) -> dict:
    """A message's text and metadata as recorded: a text over a message's limit is kept to its first
    :data:`~events.commands.MAX_TEXT_CHARS` characters, its whole length in the metadata (:data:`TRUNCATED`)."""
    if len(text) <= MAX_TEXT_CHARS:
        return {"text": text, "metadata": metadata}
    return {"text": text[:MAX_TEXT_CHARS], "metadata": {**metadata, TRUNCATED: len(text)}}


def _judge(memory, turn: Turn, earlier: list[Turn]) -> None:
    judged = _given_in(earlier, turn) or _given_to(memory, turn)
    if judged is not None:
        ids, query, reply = judged
        memory.judge_feedback(turn.tenant, turn.user_id, turn.user_text, reply, retrieved=ids,
                              now=turn.received, query=query or None)


def _guarded(turn: Turn, what: str, call, *args) -> bool:
    try:
        call(*args)
        return True
    except InvalidInputError as exc:
        _failed(turn, what, exc)
        return False


def _failed(turn: Turn, what: str, exc: Exception) -> None:
    log.error("proxy_record_refused", what=what, tenant=turn.tenant, user_id=turn.user_id,
              conversation_id=turn.conversation_id, error=str(exc).splitlines()[0] if str(exc) else type(exc).__name__)


def _replied_to(turn: Turn | Asked, reply: str, response_id: str | None) -> bool:
    """Whether ``turn`` (a call, or a request) answers the reply ``reply`` (the upstream's ``response_id`` for it)."""
    return bool((turn.prior_reply and reply == turn.prior_reply)
                or (turn.prior_response_id and response_id == turn.prior_response_id))


def _given_in(earlier: list[Turn], turn: Turn) -> tuple[list[str], str, str] | None:
    """As :func:`_given_to`, for a reply of the same batch (``earlier``: the turns before ``turn`` in it; a call
    that held the turn before it records with it, :meth:`Turn.carried_by`)."""
    for before in reversed(earlier):
        if before.stream == turn.stream and before.conversation_id == turn.conversation_id and \
                before.reply.strip() and _replied_to(turn, before.reply, before.response_id):
            return before.given, before.asked_for, before.reply
    return None


def _given_to(memory, turn: Turn) -> tuple[list[str], str, str] | None:
    """The memories (their query, and the reply's text) the proxy gave the reply this turn answers, found by its
    text or its response id; None if it gave no such reply."""
    rows = memory.conversation(turn.tenant, turn.user_id, turn.conversation_id, limit=LOOK_BACK)
    for row in reversed(rows):
        metadata = row.get("metadata") or {}
        if row["role"] != "assistant" or GIVEN not in metadata:
            continue
        if _replied_to(turn, row["text"], metadata.get(RESPONSE)):
            return json.loads(metadata[GIVEN]), metadata.get(QUERY, ""), row["text"]
    return None


class Recorder:
    """The recordings of one replica's event loop: queued as calls are answered, written in batches one after
    another (each batch every call answered while the one before was written), so a user's calls are recorded in
    the order they were answered."""

    def __init__(self, memory) -> None:
        self.memory = memory
        self._queue: list[tuple[Turn, asyncio.Future]] = []
        # per user: their calls not yet recorded, in the order they were answered (and are written)
        self._pending: dict[tuple[str, str], list[tuple[Turn, asyncio.Future]]] = {}
        self._writer: asyncio.Task | None = None

    async def settled(self, stream: tuple[str, str], carries: Callable[[Turn], bool] | None = None) -> None:
        """Return once the messages of every call of ``stream`` answered before now are recorded (or the failure
        to record them logged), but that of the latest when ``carries(turn)`` says the caller holds its turn."""
        pending = self._pending.get(stream, [])
        if pending and carries is not None and carries(pending[-1][0]):
            pending = pending[:-1]
        if pending:
            await asyncio.wait([done for _, done in pending])

    def record(self, turn: Turn) -> None:
        """Queue ``turn``; it is written after everything queued before it, without anyone waiting for it. The
        writing starts once :meth:`start` is called (when the call's answer has been sent: the recording's work
        does not hold up the answer's last bytes) or :data:`START_AFTER_S` later, whichever comes first (an answer
        whose client went away is never sent)."""
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        self._queue.append((turn, done))
        self._pending.setdefault(turn.stream, []).append((turn, done))
        done.add_done_callback(lambda _: self._recorded(turn.stream, done))
        loop.call_later(START_AFTER_S, self.start)

    def _recorded(self, stream: tuple[str, str], done: asyncio.Future) -> None:
        pending = [p for p in self._pending.get(stream, ()) if p[1] is not done]
        if pending:
            self._pending[stream] = pending
        else:
            self._pending.pop(stream, None)

    def start(self) -> None:
        """Write what is queued, unless a batch is being written (the next batch then takes it)."""
        if self._queue and (self._writer is None or self._writer.done()):
            self._writer = asyncio.get_running_loop().create_task(self._write())

    async def _write(self) -> None:
        phases.use(None)  # the task began in a call's context: its recording is not that call's time
        loop = asyncio.get_running_loop()
        while self._queue:
            batch, self._queue = self._queue[:MAX_BATCH], self._queue[MAX_BATCH:]
            waiting = [done for _, done in batch]
            try:  # the users' next calls may read once the messages are in (the fallback's replies are reported after)
                await in_thread(record, self.memory, [turn for turn, _ in batch],
                                lambda: loop.call_soon_threadsafe(_settle, waiting))
            except Exception as exc:  # noqa: BLE001 - the answers have gone: the failure is logged with what it lost
                log.error("proxy_record_failed", turns=len(batch), users=sorted({t.user_id for t, _ in batch})[:20],
                          error=str(exc).splitlines()[0] if str(exc) else type(exc).__name__, exc_info=exc)
            finally:
                _settle(waiting)


def _settle(waiting: list[asyncio.Future]) -> None:
    for done in waiting:
        if not done.done():
            done.set_result(None)


_recorders: dict[int, tuple[asyncio.AbstractEventLoop, Recorder]] = {}


def recorder(memory) -> Recorder:
    """The recorder of the running event loop (the loop of this replica's HTTP server) for ``memory``."""
    loop = asyncio.get_running_loop()
    held = _recorders.get(id(loop))
    if held is None or held[0] is not loop or held[1].memory is not memory:
        held = _recorders[id(loop)] = (loop, Recorder(memory))
    return held[1]
