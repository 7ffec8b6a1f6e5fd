"""Note deciders: the usage judge of a reply (reinforcement) and the note reviewer (seed 002).

With a language model configured (``deps.llm``) both are judged by it, its
calls recorded beside the decisions; otherwise the offline rules decide.
"""

from __future__ import annotations

import uuid

from actors.commands import RecordReplies, RecordReply, ReviewNotes
from actors.decide_archive import selected
from actors.decision import Decision, Deps, new_event_id
from actors.llm.review import llm_review_notes
from actors.llm.usage import llm_judge_usage
from events.envelope import PendingEvent
from events.errors import InvalidInputError
from events.model import MemoryTouched
from projections.decisions.review import review_notes
from projections.folds.state import ShardState
from projections.rules.usage import judge_usage


def decide_reply(state: ShardState, cmd: RecordReply, deps: Deps) -> Decision:
    """Judge which of the retrieved notes/turns the reply drew on; those get a ``used`` touch (reinforced)."""
    tenant, user_id = cmd.tenant, cmd.user_id
    memory = state.user(tenant, user_id)
    if memory is None:
        raise InvalidInputError([("user_id", f"{tenant}/{user_id} has no memories")], what="reply")
    items, unknown = [], []
    for m in dict.fromkeys(cmd.memory_ids):
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
    pending = []
    if deps.llm is not None:
        (call_id, call), used_ids = llm_judge_usage(deps.llm, cmd.reply, items)
        pending.append(PendingEvent(tenant, user_id, call_id, call))
        scores = dict(judge_usage(cmd.reply, items, threshold=0.0))
        used = [(m, scores.get(m, 1.0)) for m in used_ids]
    else:
        used = judge_usage(cmd.reply, items)
    if used:
        touched = MemoryTouched(
            reason="used", query_id=uuid.uuid4().hex[:16], query=cmd.query or cmd.reply[:200],
            memory_ids=tuple(m for m, _ in used), ranks=tuple(range(1, len(used) + 1)),
            scores=tuple(score for _, score in used),
        )
        pending.append(PendingEvent(tenant, user_id, new_event_id(), touched))
    return Decision(pending, [{"memory_id": m, "score": score} for m, score in used])


def decide_replies(state: ShardState, cmd: RecordReplies, deps: Deps) -> Decision:
    """Each reply decided as :func:`decide_reply` decides it (a reply's decision reads the texts of the memories it
    was given, which no other reply's touches change), their events together."""
    decisions = [decide_reply(state, reply, deps) for reply in cmd.replies]
    return Decision([p for d in decisions for p in d.pending], [d.outcome for d in decisions])


def decide_review(state: ShardState, cmd: ReviewNotes, deps: Deps) -> Decision:
    """Review notes whose importance crossed 2.5 (promote?) or fell below 0.5 (retract?) at ``now``."""
    pending, report = [], []
    for t, u, memory in selected(state, cmd.tenant, cmd.user_id):
        if deps.llm is not None:
            calls, reviews = llm_review_notes(deps.llm, memory.notes, cmd.now)
            pending += [PendingEvent(t, u, event_id, call) for event_id, call in calls]
        else:
            reviews = review_notes(memory.notes, cmd.now)
        for review in reviews:
            pending.append(PendingEvent(t, u, new_event_id(), review, causation_id=review.note_id))
            report.append({"tenant": t, "user_id": u, **review.model_dump(mode="json"),
                           "text": memory.notes.notes[review.note_id].text})
    return Decision(pending, report)
