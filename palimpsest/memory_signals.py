"""What the agent did with the memory and how the user took it (a mixin of :class:`palimpsest.Memory`):
the agent's reply (the usage judge reinforces what it drew on), the feedback judge and the
Evolution Dispatcher's adjustments (§5–§6), listed and reverted here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

import numpy as np

from actors import commands as c
from events.commands import validate_messages
from events.errors import InvalidInputError
from palimpsest.remote import Shards
from palimpsest.remote import aware, get
from projections.queries.context import Context

CHUNK = 256  # messages the encoder takes at once


class SignalsApiMixin:
    shards: Shards  # set by Memory.__init__

    def record_reply(
        self, tenant: str, user_id: str, reply: str, retrieved: Context | Iterable[str], *, query: str = ""
    ) -> list[dict]:
        """Tell the memory what the agent replied: the retrieved notes/turns the reply drew on are reinforced.

        ``retrieved`` is the :class:`Context` given to the agent (or the memory
        and note ids it held). Returns the ids judged used, with their scores.
        """
        return self.shards.send(tenant, user_id, _reply(tenant, user_id, reply, retrieved, query))

    def record_replies(
        self, replies: Iterable[tuple[str, str, str, Context | Iterable[str]]]
    ) -> list[list[dict] | InvalidInputError]:
        """:meth:`record_reply` for many ``(tenant, user_id, reply, retrieved)`` at once, of one user or many: one
        command per shard (one commit for all its replies), the shards in parallel. Each reply's outcome in order:
        the ids judged used, or the :class:`InvalidInputError` that refused it (the others are recorded all the
        same)."""
        commands = [_reply(*r) for r in replies]
        by_shard: dict[int, list[int]] = {}
        for n, command in enumerate(commands):
            by_shard.setdefault(self.shards.index_of(command.tenant, command.user_id, assign=True), []).append(n)
        pending = {index: self.shards.submit(index, [c.RecordReplies(replies=tuple(commands[n] for n in ns))])
                   for index, ns in by_shard.items()}
        outcomes: list = [None] * len(commands)
        for index, ns in by_shard.items():
            try:
                for n, outcome in zip(ns, get(pending[index])[0]):
                    outcomes[n] = outcome
            except InvalidInputError:  # one was refused, so none was written: each again alone
                for n in ns:
                    try:
                        outcomes[n] = self.shards.send(commands[n].tenant, commands[n].user_id, commands[n])
                    except InvalidInputError as exc:
                        outcomes[n] = exc
        return outcomes

    def record_turns(
        self, messages: Iterable[Mapping[str, Any]], replies: Iterable[tuple[str, str, str, Context | Iterable[str]]],
    ) -> tuple[list[dict | InvalidInputError], list[list[dict] | InvalidInputError]]:
        """:meth:`add_messages` and :meth:`record_replies` at once: conversation turns (each message names its tenant
        and user) and the replies among them with the memories each was given (recorded before these messages). One
        command per shard, in one transaction there, the shards in parallel. The messages are validated first, as
        :meth:`add_messages` validates them (an invalid one refuses the call, nothing written).

        Per message its outcome (its memory id and whether it is new), per reply the ids judged used, in the order
        given; or, for those of a shard that refused its part, the :class:`InvalidInputError` (nothing of that
        shard's part was written: record them apart, to find which)."""
        commands = validate_messages(list(messages))
        reply_commands = [_reply(*r) for r in replies]
        staged, readings = self._graph_memories(commands) if commands else ([], [])
        embedder = self.embedder
        texts = [m.index_text() for m in commands]
        vectors = np.concatenate([embedder.encode(texts[i:i + CHUNK]) for i in range(0, len(texts), CHUNK)]) \
            if texts else np.zeros((0, embedder.dim), dtype=np.float32)
        by_shard: dict[int, tuple[list[int], list[int]]] = {}
        for n, index in enumerate(self.shards.route([(m.tenant, m.user_id) for m in commands])):
            by_shard.setdefault(index, ([], []))[0].append(n)
        for n, r in enumerate(reply_commands):
            by_shard.setdefault(self.shards.index_of(r.tenant, r.user_id, assign=True), ([], []))[1].append(n)
        pending = {index: self.shards.submit(index, [c.RecordTurns(
            messages=c.RecordMessages(messages=tuple(commands[n] for n in ms), vectors=vectors[ms],
                                      model_id=embedder.model_id, graph=tuple(staged[n] for n in ms),
                                      readings=tuple(readings[n] for n in ms)),
            replies=tuple(reply_commands[n] for n in rs))]) for index, (ms, rs) in by_shard.items()}
        message_outcomes: list = [None] * len(commands)
        reply_outcomes: list = [None] * len(reply_commands)
        for index, (ms, rs) in by_shard.items():
            try:
                [outcome] = get(pending[index])
            except InvalidInputError as exc:  # the shard wrote none of its part
                outcome = {"messages": [exc] * len(ms), "replies": [exc] * len(rs)}
            for n, o in zip(ms, outcome["messages"]):
                message_outcomes[n] = o
                if not isinstance(o, Exception) and o["created"]:
                    self._since_consolidation += len(staged[n])
            for n, o in zip(rs, outcome["replies"]):
                reply_outcomes[n] = o
        self._labels_staged(commands)
        if self.consolidate_every and self._since_consolidation >= self.consolidate_every:
            self.consolidate()
        return message_outcomes, reply_outcomes

    def judge_feedback(
        self, tenant: str, user_id: str, user_input: str, agent_response: str, *,
        context_window: Iterable[str] = (), retrieved: Context | Iterable[str] = (), now: datetime | None = None,
        query: str | None = None,
    ) -> dict:
        """The Feedback Judge on the user's turn answering ``agent_response``; records the signal.

        ``retrieved`` is the :class:`Context` the judged reply was given (or the
        memory and note ids it held): the signal names them. Returns the verdict
        (``type`` negative/positive/neutral/mixed, ``confidence``, ``targets``,
        ``action_hints``, the ``cues`` read) with its ``event_id``, and the
        ``adjustments`` the Evolution Dispatcher made from it and the earlier
        signals (working-layer penalties at once; invalidations and lasting
        penalties only after repeated, consistent, confident corrections;
        style / tool-choice skills). ``now`` is when the user reacted (default: now). ``query`` is the question
        the judged reply answered (default: the ``retrieved`` context's): a penalty applies to queries on its
        topic only.
        """
        problems = [(name, "empty; give the text") for name, text in (("user_input", user_input),
                                                                      ("agent_response", agent_response))
                    if not isinstance(text, str) or not text.strip()]
        if problems:
            raise InvalidInputError(problems, what="feedback")
        if isinstance(retrieved, Context):
            query = query or retrieved.query
            ids = [i.memory_id for i in retrieved.items]
        else:
            ids = list(retrieved)
        return self.shards.send(tenant, user_id, c.JudgeFeedback(
            tenant=tenant, user_id=user_id, user_input=user_input, agent_response=agent_response,
            context_window=tuple(context_window), memory_ids=tuple(ids), now=aware(now, "feedback"),
            query=query or None))

    def feedback(self, tenant: str, user_id: str, *, memory_id: str | None = None) -> list[dict]:
        """The user's feedback signals, oldest first (only those naming ``memory_id`` when given)."""
        return self.shards.ask(tenant, user_id, c.Feedback(tenant=tenant, user_id=user_id, memory_id=memory_id))


    def adjustments(self, tenant: str, user_id: str, *, active_only: bool = False,
                    target_id: str | None = None) -> list[dict]:
        """The dispatcher's adjustments, oldest first: action, layer, targets, factor, skill, signals, reason, revert."""
        return self.shards.ask(tenant, user_id, c.Adjustments(tenant=tenant, user_id=user_id, active_only=active_only,
                                                              target_id=target_id))

    def revert_adjustment(self, tenant: str, user_id: str, adjustment_id: str, *, reason: str = "reverted by hand",
                          now: datetime | None = None) -> dict:
        """Undo an adjustment (an ``adjustment_reverted`` event): what it invalidated or penalised comes back."""
        return self.shards.send(tenant, user_id, c.RevertAdjustment(
            tenant=tenant, user_id=user_id, adjustment_id=adjustment_id, reason=reason, now=aware(now, "feedback")))




def _reply(tenant: str, user_id: str, reply: str, retrieved: Context | Iterable[str], query: str = "") -> c.RecordReply:
    if not isinstance(reply, str) or not reply.strip():
        raise InvalidInputError([("reply", "empty; give the agent's reply text")], what="reply")
    if isinstance(retrieved, Context):
        query = query or retrieved.query
        ids = [i.memory_id for i in retrieved.items]
    else:
        ids = list(retrieved)
    return c.RecordReply(tenant=tenant, user_id=user_id, reply=reply, memory_ids=tuple(ids), query=query)
