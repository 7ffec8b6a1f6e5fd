"""Seed 003 §4's Feedback Judge with a language model: the user's reaction to the agent's reply, read in context.

One call per judged turn (``purpose="feedback_judge"``), only when the
store's LLM config turns it on (``LlmConfig.feedback_judge``; the offline
rules of :mod:`projections.rules.feedback` stay the default). The model gets
the seed's input — the user's turn, the agent's reply, the short context
window — and answers the seed's signal: ``type``, ``confidence``,
``targets``, ``action_hints``, and a short ``reason``. It catches what the
cue tables miss ("Hmm, my sister moved to Denver last spring" after a reply
placing her in Boston is a stale-fact correction without a "wrong" in it).

The call is recorded (``llm_call_recorded``) and the ``feedback_detected``
event names it (``llm_call_id``, judge ``llm:<model>``), so replay folds the
verdict and never asks again. When the call fails or its answer is unusable
the offline rules judge, and the signal still names the failed call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from actors.decision import new_event_id
from actors.llm.client import StructuredLlm
from actors.llm.steps import LINE_CHARS, clip, llm_decider
from events.model import LlmCallRecorded
from projections.rules.feedback import JUDGE_ID, Judgement, judge

PURPOSE = "feedback_judge"
TYPES = ("negative", "positive", "neutral", "mixed")
TARGETS = ("reasoning", "final_answer", "style", "tool_choice")
HINTS = ("penalty", "invalidate", "prefer")
CONTEXT_TURNS = 6  # the last turns of the context window shown

SCHEMA: dict[str, Any] = {
    "title": "FeedbackSignal",
    "type": "object",
    "properties": {
        "type": {"type": "string", "enum": list(TYPES)},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "targets": {"type": "array", "items": {"type": "string", "enum": list(TARGETS)}},
        "action_hints": {"type": "array", "items": {"type": "string", "enum": list(HINTS)}},
        "reason": {"type": "string"},
    },
    "required": ["type", "confidence", "targets", "action_hints", "reason"],
}

INSTRUCTIONS = """\
You judge how a user reacted to an AI assistant's reply. You do not reply to the user and you change nothing: \
you only report the signal. The user may write in any language (often English or Chinese).
- type: "negative" (the user rejects or corrects the reply), "positive" (accepts or thanks it), "mixed" (both, \
e.g. right answer but too long), "neutral" (no reaction to the reply: a new topic, small talk).
- confidence: how sure you are, from 0 to 1.
- targets: what the reaction is about: "final_answer", "reasoning", "style", "tool_choice" (empty when neutral).
- action_hints: "invalidate" when the user says a fact the reply relied on is outdated or was corrected before \
("I told you I don't eat cilantro", "她去年就搬走了"); "penalty" when the answer is wrong; "prefer" when the \
user states how they want it (shorter, in Chinese, another tool) or confirms the reply.
- reason: one short sentence quoting the words you read.
Reply with JSON {"type", "confidence", "targets", "action_hints", "reason"} and nothing else."""


def prompt(user_input: str, agent_response: str, context_window: Sequence[str]) -> str:
    window = "\n".join(f"- {clip(t, LINE_CHARS)}" for t in list(context_window)[-CONTEXT_TURNS:]) or "(none)"
    return (f"Earlier turns, oldest first:\n{window}\n\nThe assistant's reply:\n{clip(agent_response, LINE_CHARS)}"
            f"\n\nThe user's next turn (judge this):\n{clip(user_input, LINE_CHARS)}")


def _judgement(parsed: dict) -> Judgement:
    kind = parsed["type"]
    targets = tuple(dict.fromkeys(t for t in parsed["targets"] if t in TARGETS)) if kind != "neutral" else ()
    hints = tuple(dict.fromkeys(h for h in parsed["action_hints"] if h in HINTS)) if kind != "neutral" else ()
    if kind != "neutral" and not targets:
        targets = ("final_answer",)
    reason = clip(str(parsed.get("reason") or ""), 200)
    return Judgement(kind, round(min(1.0, max(0.0, float(parsed["confidence"]))), 4), targets, hints,
                     (f"llm:{reason}",) if reason else ())


def llm_judge_feedback(
    client: StructuredLlm, user_input: str, agent_response: str, context_window: Sequence[str] = (), *,
    new_id: Callable[[], str] = new_event_id,
) -> tuple[tuple[str, LlmCallRecorded], Judgement, str]:
    """(call record, the verdict, the judge id: ``llm:<model>``, or the offline rules' when the call failed)."""
    call_id = new_id()
    result = client.complete_json(PURPOSE, [{"role": "system", "content": INSTRUCTIONS},
                                            {"role": "user", "content": prompt(user_input, agent_response,
                                                                               context_window)}], SCHEMA)
    if result.parsed is None or result.parsed.get("type") not in TYPES:
        return (call_id, result.event), judge(user_input), JUDGE_ID
    return (call_id, result.event), _judgement(result.parsed), llm_decider(result.event)
