"""The Feedback Judge on a shard (seed 003 §4): the decider of ``JudgeFeedback`` and the reader of signals.

The judge reads the user's turn (offline EN/ZH rules,
:mod:`projections.rules.feedback`) and records one ``feedback_detected``
event naming the memories and notes of the judged reply's context. It never
changes a memory: the signals wait in the log for the dispatcher.
"""

from __future__ import annotations

from actors.commands import Feedback, JudgeFeedback
from actors.decision import Answer, Decision, Deps, new_event_id
from events.envelope import PendingEvent
from events.errors import InvalidInputError
from events.feedback_events import FeedbackDetected
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
        judge=JUDGE_ID,
    )
    event_id = new_event_id()
    outcome = {"event_id": event_id, "feedback_detected": verdict.detected, "type": verdict.type,
               "confidence": verdict.confidence, "targets": list(verdict.targets),
               "action_hints": list(verdict.action_hints), "memory_ids": list(ids), "cues": list(verdict.cues),
               "judge": JUDGE_ID}
    return Decision([PendingEvent(tenant, user_id, event_id, event)], outcome, react=False)


def feedback(core, q: Feedback) -> Answer:
    memory = core.state.user(q.tenant, q.user_id)
    if memory is None:
        return Answer([])
    signals = memory.feedback.about(q.memory_id) if q.memory_id is not None else memory.feedback.signals
    return Answer([s.to_dict() for s in signals])
