"""Learning-loop events (seed 003 §5, §6, §10): what the Evolution Dispatcher and the Molt controller decided.

- ``memory_adjusted``: the dispatcher's answer to aggregated feedback signals —
  a ``penalty`` (a ranking factor on memories or notes; the ``working`` layer's
  expires, the ``stable`` layer's holds), an ``invalidate`` (memories or notes
  leave default retrieval, with the reason) or a ``prefer`` (a weighted,
  versioned style / tool-choice skill in the profile). Each names the
  ``feedback_detected`` signals it aggregates.
- ``adjustment_reverted``: an adjustment no longer applies (by hand, with a reason).
- ``policy_changed``: the Molt controller changed this user's retrieval policy
  after a counterfactual replay of the recorded queries measured an
  improvement (the figures are in the event); a revert is another
  ``policy_changed`` naming the change it reverts.
- ``policy_proposal_rejected``: a proposal the replay did not support, with its figures.

The events are the decisions: replay folds them and never re-judges, re-dispatches or re-evaluates.
"""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar, Literal

from pydantic import AwareDatetime, Field, model_validator

from events.model import Event

AdjustmentAction = Literal["penalty", "invalidate", "prefer"]
AdjustmentLayer = Literal["working", "stable"]
SkillKind = Literal["style", "tool_choice"]


class MemoryAdjusted(Event):
    """The Evolution Dispatcher adjusted memories, notes or a skill; its event id is the adjustment id."""

    kind: ClassVar[str] = "memory_adjusted"
    schema_version: ClassVar[int] = 2  # v2: ``scope``

    action: AdjustmentAction
    layer: AdjustmentLayer
    target_ids: tuple[str, ...] = ()  # memory (turn) and note ids; empty for a skill
    factor: float | None = Field(default=None, gt=0.0, le=1.0)  # a penalty's ranking factor
    until: AwareDatetime | None = None  # a working-layer adjustment stops applying then
    skill: SkillKind | None = None
    preference: str | None = None  # the user's instruction the skill keeps ("shorter answers, please")
    weight: float | None = Field(default=None, ge=0.0, le=1.0)
    version: int | None = Field(default=None, ge=1)
    signal_ids: tuple[str, ...] = Field(min_length=1)  # the feedback_detected events aggregated
    at: AwareDatetime
    reason: str = Field(min_length=1)
    dispatcher: str = Field(min_length=1)
    # A penalty's topic: the question the rejected replies answered. It applies only to queries on the same
    # topic (projections.rules.text.same_topic); None (v1, or a signal without its question): to every query.
    scope: str | None = None

    @model_validator(mode="after")
    def _shape(self) -> MemoryAdjusted:
        if self.action == "prefer":
            if self.skill is None or self.preference is None or self.weight is None or self.version is None:
                raise ValueError("a prefer adjustment names its skill, preference, weight and version")
        elif not self.target_ids:
            raise ValueError(f"a {self.action} adjustment names its target_ids")
        if self.action == "penalty" and self.factor is None:
            raise ValueError("a penalty adjustment has a factor")
        if self.scope is not None and self.action != "penalty":
            raise ValueError("only a penalty is scoped to a topic; an invalidation or a skill holds for every query")
        return self

    def occurred(self, recorded_at: datetime) -> datetime:
        return self.at


class AdjustmentReverted(Event):
    """An adjustment was undone with a reason: from this event on it no longer applies."""

    kind: ClassVar[str] = "adjustment_reverted"
    schema_version: ClassVar[int] = 1

    adjustment_id: str = Field(min_length=1)
    at: AwareDatetime
    reason: str = Field(min_length=1)

    def occurred(self, recorded_at: datetime) -> datetime:
        return self.at


class PolicyChanged(Event):
    """The user's retrieval policy changed (``parameters``: FusionConfig fields); its event id is the change id."""

    kind: ClassVar[str] = "policy_changed"
    schema_version: ClassVar[int] = 1

    parameters: dict[str, float] = Field(min_length=1)
    previous: dict[str, float]
    metric: str = Field(min_length=1)
    before: float
    after: float
    queries: int = Field(ge=0)  # how many recorded queries the replay ranked
    trigger: str = ""  # the effectiveness figure that crossed its threshold
    reverts: str | None = None  # the change this one undoes
    at: AwareDatetime
    reason: str = Field(min_length=1)
    controller: str = Field(min_length=1)

    def occurred(self, recorded_at: datetime) -> datetime:
        return self.at


class PolicyProposalRejected(Event):
    """A proposed retrieval policy that did not improve the replayed queries enough, with its figures; nothing changed."""

    kind: ClassVar[str] = "policy_proposal_rejected"
    schema_version: ClassVar[int] = 1

    parameters: dict[str, float] = Field(min_length=1)
    previous: dict[str, float]
    metric: str = Field(min_length=1)
    before: float
    after: float
    queries: int = Field(ge=0)
    trigger: str = ""
    at: AwareDatetime
    reason: str = Field(min_length=1)
    controller: str = Field(min_length=1)

    def occurred(self, recorded_at: datetime) -> datetime:
        return self.at


LEARNING_EVENT_TYPES: dict[str, type[Event]] = {
    cls.kind: cls for cls in (MemoryAdjusted, AdjustmentReverted, PolicyChanged, PolicyProposalRejected)
}
