"""The Feedback Judge and the Evolution Dispatcher on a shard (seed 003 §4–§6): deciders and readers.

``JudgeFeedback``: the judge reads the user's turn (offline EN/ZH rules,
:mod:`projections.rules.feedback`) and records one ``feedback_detected``
event naming the memories and notes of the judged reply's context; the
judge itself changes no memory. The dispatcher
(:mod:`projections.decisions.dispatch`) then reads the new signal against
the earlier ones and appends, in the same transaction, the
``memory_adjusted`` events it calls for. ``RevertAdjustment`` undoes one.
Both are idempotent by command id; a revert of a reverted adjustment adds nothing.
"""

from __future__ import annotations

from actors.commands import Adjustments, Feedback, JudgeFeedback, RevertAdjustment
from actors.decision import Answer, Decision, Deps, new_event_id
from events.envelope import PendingEvent
from events.errors import InvalidInputError
from events.feedback_events import FeedbackDetected
from events.learning_events import AdjustmentReverted
from projections.decisions.dispatch import dispatch
from projections.folds.state import ShardState
from projections.rules.feedback import JUDGE_ID, judge


def decide_feedback(state: ShardState, cmd: JudgeFeedback, deps: Deps) -> Decision:
    tenant, user_id = cmd.tenant, cmd.user_id
    memory = state.user(tenant, user_id)
    ids = tuple(dict.fromkeys(cmd.memory_ids))
    unknown = [m for m in ids if memory is None or (m not in memory.notes.notes and m not in memory.messages.by_id)]
    if unknown:
        raise InvalidInputError([("memory_ids", f"{', '.join(unknown[:5])} unknown for {tenant}/{user_id}; pass the "
                                                "ids of the context the judged reply was given")], what="feedback")
    verdict = judge(cmd.user_input)
    event = FeedbackDetected(
        user_input=cmd.user_input, agent_response=cmd.agent_response, context_window=cmd.context_window,
        feedback_detected=verdict.detected, type=verdict.type, confidence=verdict.confidence,
        targets=verdict.targets, action_hints=verdict.action_hints, memory_ids=ids, cues=verdict.cues,
        judge=JUDGE_ID, at=cmd.now,
    )
    event_id = new_event_id()
    adjusted = dispatch(memory, event_id, event, cmd.now, new_event_id) if memory is not None else []
    outcome = {"event_id": event_id, "feedback_detected": verdict.detected, "type": verdict.type,
               "confidence": verdict.confidence, "targets": list(verdict.targets),
               "action_hints": list(verdict.action_hints), "memory_ids": list(ids), "cues": list(verdict.cues),
               "judge": JUDGE_ID,
               "adjustments": [{"adjustment_id": a_id, "action": a.action, "layer": a.layer,
                                "target_ids": list(a.target_ids), "skill": a.skill, "reason": a.reason}
                               for a_id, a in adjusted]}
    pending = [PendingEvent(tenant, user_id, event_id, event)]
    pending += [PendingEvent(tenant, user_id, a_id, a, causation_id=event_id, correlation_id=event_id)
                for a_id, a in adjusted]
    return Decision(pending, outcome, react=False)


def decide_revert(state: ShardState, cmd: RevertAdjustment, deps: Deps) -> Decision:
    memory = state.user(cmd.tenant, cmd.user_id)
    adjustment = memory.adjustments.adjustments.get(cmd.adjustment_id) if memory is not None else None
    if adjustment is None:
        raise InvalidInputError([("adjustment_id", f"{cmd.adjustment_id!r} is no adjustment of {cmd.tenant}/"
                                                   f"{cmd.user_id}; list them with `palimpsest adjustments list`")],
                                what="revert")
    if adjustment.reverted_at is not None:  # already satisfied: nothing to append
        return Decision([], {"adjustment_id": cmd.adjustment_id, "reverted": False,
                             "already_reverted_at": adjustment.reverted_at.isoformat()}, react=False)
    event = AdjustmentReverted(adjustment_id=cmd.adjustment_id, at=cmd.now, reason=cmd.reason)
    event_id = new_event_id()
    return Decision([PendingEvent(cmd.tenant, cmd.user_id, event_id, event, causation_id=cmd.adjustment_id)],
                    {"adjustment_id": cmd.adjustment_id, "reverted": True, "event_id": event_id}, react=False)


def feedback(core, q: Feedback) -> Answer:
    memory = core.state.user(q.tenant, q.user_id)
    if memory is None:
        return Answer([])
    signals = memory.feedback.about(q.memory_id) if q.memory_id is not None else memory.feedback.signals
    return Answer([s.to_dict() for s in signals])


def adjustments(core, q: Adjustments) -> Answer:
    memory = core.state.user(q.tenant, q.user_id)
    if memory is None:
        return Answer([])
    items = memory.adjustments.about(q.target_id) if q.target_id else memory.adjustments.adjustments.values()
    return Answer([a.to_dict() for a in items if not (q.active_only and a.reverted_at is not None)])
