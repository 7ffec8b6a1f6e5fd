"""Feedback events (seed 003 §4): what the Feedback Judge read in the user's reaction to the agent.

A ``feedback_detected`` event is a *signal*: it names the memories and notes
that were in the context of the judged reply, and it changes no memory by
itself (seed 003: "outputs signals, does not modify memory"). Every judgement
is recorded, neutral ones too, so the record of what the judge saw is whole
and a later dispatcher (or a re-judging with another judge) reads it from the
log, never from the text again.
"""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar, Literal

from pydantic import AwareDatetime, Field, model_validator

from events.model import Event

FeedbackType = Literal["negative", "positive", "neutral", "mixed"]
FeedbackTarget = Literal["reasoning", "final_answer", "style", "tool_choice"]
ActionHint = Literal["penalty", "invalidate", "prefer"]


class FeedbackDetected(Event):
    """The Feedback Judge's verdict on one (user input, agent response) pair, with the cues it read."""

    kind: ClassVar[str] = "feedback_detected"
    schema_version: ClassVar[int] = 3  # v2: ``at``; v3: ``query``

    user_input: str = Field(min_length=1)
    agent_response: str = Field(min_length=1)
    context_window: tuple[str, ...] = ()  # the turns before, oldest first (seed 003 §4 input)
    feedback_detected: bool
    type: FeedbackType
    confidence: float = Field(ge=0.0, le=1.0)
    targets: tuple[FeedbackTarget, ...] = ()
    action_hints: tuple[ActionHint, ...] = ()
    memory_ids: tuple[str, ...] = ()  # the memories (turns) and notes in the judged reply's context
    cues: tuple[str, ...] = ()  # what the judge read, e.g. "negative:不对", "style:too long"
    judge: str = Field(min_length=1)  # "feedback-rules-v2" or "llm:<model>"
    llm_call_id: str | None = None  # the llm_call_recorded event the verdict was read from
    at: AwareDatetime | None = None  # when the user reacted (None in v1: when it was recorded)
    query: str | None = None  # the question the judged reply answered (None before v3, or not given)

    @model_validator(mode="after")
    def _consistent(self) -> FeedbackDetected:
        if self.feedback_detected == (self.type == "neutral"):
            raise ValueError("feedback_detected is true exactly when type is not neutral")
        return self

    def occurred(self, recorded_at: datetime) -> datetime:
        return self.at if self.at is not None else recorded_at


FEEDBACK_EVENT_TYPES: dict[str, type[Event]] = {cls.kind: cls for cls in (FeedbackDetected,)}
