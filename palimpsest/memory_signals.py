"""What the agent did with the memory and how the user took it (a mixin of :class:`palimpsest.Memory`):
the agent's reply (the usage judge reinforces what it drew on) and the Feedback Judge (seed 003 §4).
"""

from __future__ import annotations

from collections.abc import Iterable

from actors import commands as c
from events.errors import InvalidInputError
from palimpsest.remote import Shards
from projections.queries.context import Context


class SignalsApiMixin:
    shards: Shards  # set by Memory.__init__

    def record_reply(
        self, tenant: str, user_id: str, reply: str, retrieved: Context | Iterable[str], *, query: str = ""
    ) -> list[dict]:
        """Tell the memory what the agent replied: the retrieved notes/turns the reply drew on are reinforced.

        ``retrieved`` is the :class:`Context` given to the agent (or the memory
        and note ids it held). Returns the ids judged used, with their scores.
        """
        if not isinstance(reply, str) or not reply.strip():
            raise InvalidInputError([("reply", "empty; give the agent's reply text")], what="reply")
        if isinstance(retrieved, Context):
            query = query or retrieved.query
            ids = [i.memory_id for i in retrieved.items]
        else:
            ids = list(retrieved)
        return self.shards.send(tenant, user_id, c.RecordReply(tenant=tenant, user_id=user_id, reply=reply,
                                                         memory_ids=tuple(ids), query=query))

    def judge_feedback(
        self, tenant: str, user_id: str, user_input: str, agent_response: str, *,
        context_window: Iterable[str] = (), retrieved: Context | Iterable[str] = (),
    ) -> dict:
        """The Feedback Judge on the user's turn answering ``agent_response`` (seed 003 §4); records the signal.

        ``retrieved`` is the :class:`Context` the judged reply was given (or the
        memory and note ids it held): the signal names them. Returns the verdict
        (``type`` negative/positive/neutral/mixed, ``confidence``, ``targets``,
        ``action_hints``, the ``cues`` read) with its ``event_id``. No memory
        changes: the signal waits in the log for the dispatcher.
        """
        problems = [(name, "empty; give the text") for name, text in (("user_input", user_input),
                                                                      ("agent_response", agent_response))
                    if not isinstance(text, str) or not text.strip()]
        if problems:
            raise InvalidInputError(problems, what="feedback")
        ids = [i.memory_id for i in retrieved.items] if isinstance(retrieved, Context) else list(retrieved)
        return self.shards.send(tenant, user_id, c.JudgeFeedback(
            tenant=tenant, user_id=user_id, user_input=user_input, agent_response=agent_response,
            context_window=tuple(context_window), memory_ids=tuple(ids)))

    def feedback(self, tenant: str, user_id: str, *, memory_id: str | None = None) -> list[dict]:
        """The user's feedback signals, oldest first (only those naming ``memory_id`` when given)."""
        return self.shards.ask(tenant, user_id, c.Feedback(tenant=tenant, user_id=user_id, memory_id=memory_id))

