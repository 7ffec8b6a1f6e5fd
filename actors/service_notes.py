"""The notes, profile and tier queries and commands of a shard (a mixin of :class:`ShardService`).

Reads the folded notes / profile / tier projections through :mod:`projections.views`;
writes reviews and usage touches through the service's ``_commit``. With a
language model configured (``self.llm``) reviews and usage are judged by it,
its calls recorded beside the decisions.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from actors.deciders import new_event_id
from actors.llm.review import llm_review_notes
from actors.llm.usage import llm_judge_usage
from events.envelope import PendingEvent
from events.errors import InvalidInputError
from events.model import MemoryTouched
from projections import views
from projections.review import review_notes
from projections.usage import judge_usage


class NotesMixin:
    def notes(self, tenant: str, user_id: str, now: datetime, at: datetime | None = None,
              include_inactive: bool = False) -> list[dict]:
        memory = self.state.user(tenant, user_id)
        return views.notes_view(memory, now, at, include_inactive) if memory else []

    def note_history(self, note_id: str, now: datetime, tenant: str | None = None, user_id: str | None = None) -> dict | None:
        """The version chain of ``note_id`` and whose it is (None when no user of this shard has it)."""
        for (t, u), memory in self.state.users.items():
            if (tenant and t != tenant) or (user_id and u != user_id) or note_id not in memory.notes.notes:
                continue
            return {"tenant": t, "user_id": u, "chain": views.history_view(memory, note_id, now)}
        return None

    def record_reply(self, tenant: str, user_id: str, reply: str, memory_ids: list[str], query: str) -> list[dict]:
        """Judge which of the retrieved notes/turns ``reply`` drew on; those get a ``used`` touch (reinforced)."""
        memory = self.state.user(tenant, user_id)
        if memory is None:
            raise InvalidInputError([("user_id", f"{tenant}/{user_id} has no memories")], what="reply")
        items, unknown = [], []
        for m in dict.fromkeys(memory_ids):
            if m in memory.notes.notes:
                items.append((m, memory.notes.notes[m].text))
            elif m in memory.messages.by_id:
                items.append((m, memory.messages.by_id[m].text))
            else:
                unknown.append(m)
        if unknown:
            raise InvalidInputError(
                [("memory_ids", f"{', '.join(unknown)} unknown for {tenant}/{user_id}; pass ids from a search or context")],
                what="reply",
            )
        calls = []
        if self.llm is not None:
            (call_id, call), used_ids = llm_judge_usage(self.llm, reply, items)
            calls = [PendingEvent(tenant, user_id, call_id, call)]
            scores = dict(judge_usage(reply, items, threshold=0.0))
            used = [(m, scores.get(m, 1.0)) for m in used_ids]
        else:
            used = judge_usage(reply, items)
        if calls and not used:
            self._commit(calls)
        if used:
            touched = MemoryTouched(
                reason="used", query_id=uuid.uuid4().hex[:16], query=query or reply[:200],
                memory_ids=tuple(m for m, _ in used), ranks=tuple(range(1, len(used) + 1)),
                scores=tuple(score for _, score in used),
            )
            self._commit([*calls, PendingEvent(tenant, user_id, new_event_id(), touched)])
        return [{"memory_id": m, "score": score} for m, score in used]

    def review(self, now: datetime, tenant: str | None = None, user_id: str | None = None) -> list[dict]:
        """Review notes whose importance crossed 2.5 (promote?) or fell below 0.5 (retract?) at ``now``."""
        pending, report = [], []
        for (t, u), memory in sorted(self.state.users.items()):
            if (tenant and t != tenant) or (user_id and u != user_id):
                continue
            if self.llm is not None:
                calls, reviews = llm_review_notes(self.llm, memory.notes, now)
                pending += [PendingEvent(t, u, event_id, call) for event_id, call in calls]
            else:
                reviews = review_notes(memory.notes, now)
            for review in reviews:
                pending.append(PendingEvent(t, u, new_event_id(), review, causation_id=review.note_id))
                report.append({"tenant": t, "user_id": u, **review.model_dump(mode="json"),
                               "text": memory.notes.notes[review.note_id].text})
        if pending:
            self._commit(pending)
        return report

    def profile(self, tenant: str, user_id: str, include_knowledge: bool = True,
                include_assistant_knowledge: bool = False) -> dict:
        memory = self.state.user(tenant, user_id)
        if memory is None:
            return {"traits": {}, "user_knowledge": [], "distillations": 0}
        return views.profile_view(memory, include_knowledge, include_assistant_knowledge)

    def tiers(self, tenant: str, user_id: str, now: datetime, conversation_id: str | None = None) -> dict:
        memory = self.state.user(tenant, user_id)
        if memory is None:
            return {}
        out = views.tiers_view(memory, now, self.state.tier_config)
        if conversation_id is None and memory.messages.order:
            conversation_id = memory.messages.by_id[memory.messages.order[-1]].conversation_id
        out["conversation_id"] = conversation_id
        out.update(views.working_view(memory, conversation_id, now) if conversation_id else {})
        return out
