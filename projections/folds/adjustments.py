"""Adjustments (seed 003 §5–§6): what the Evolution Dispatcher changed, and which changes still apply.

A pure fold over ``memory_adjusted`` and ``adjustment_reverted``. Nothing is
edited in place elsewhere: retrieval and contexts ask this projection, at
the query's time, for a memory's ranking factor (the product of the
penalties that apply), whether it is invalidated, and which style /
tool-choice skills hold. An adjustment applies at ``now`` when it was made
by then, was not reverted by then, and (working layer) has not expired.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime

from events.envelope import Envelope
from events.learning_events import AdjustmentReverted, MemoryAdjusted


@dataclass(frozen=True, slots=True)
class Adjustment:
    adjustment_id: str
    seq: int
    at: datetime
    action: str  # penalty | invalidate | prefer
    layer: str  # working | stable
    target_ids: tuple[str, ...]
    factor: float | None
    until: datetime | None
    skill: str | None
    preference: str | None
    weight: float | None
    version: int | None
    signal_ids: tuple[str, ...]
    reason: str
    dispatcher: str
    reverted_at: datetime | None = None
    revert_reason: str | None = None
    revert_event_id: str | None = None

    def applies(self, now: datetime | None) -> bool:
        """Made by ``now``, not reverted by then, not expired (``now`` None: as the log stands, expiry ignored)."""
        if now is None:
            return self.reverted_at is None
        if self.at > now or (self.reverted_at is not None and self.reverted_at <= now):
            return False
        return self.until is None or now < self.until

    def to_dict(self) -> dict:
        def iso(t: datetime | None) -> str | None:
            return t.isoformat() if t is not None else None

        return {"adjustment_id": self.adjustment_id, "seq": self.seq, "at": iso(self.at), "action": self.action,
                "layer": self.layer, "target_ids": list(self.target_ids), "factor": self.factor,
                "until": iso(self.until), "skill": self.skill, "preference": self.preference, "weight": self.weight,
                "version": self.version, "signal_ids": list(self.signal_ids), "reason": self.reason,
                "dispatcher": self.dispatcher, "reverted_at": iso(self.reverted_at),
                "revert_reason": self.revert_reason, "revert_event_id": self.revert_event_id}


@dataclass
class AdjustmentState:
    adjustments: dict[str, Adjustment] = field(default_factory=dict)  # by id, in log order
    by_target: dict[str, list[str]] = field(default_factory=dict)  # memory or note id -> adjustment ids
    by_signal: dict[str, list[str]] = field(default_factory=dict)  # feedback signal id -> adjustment ids

    def about(self, target_id: str) -> list[Adjustment]:
        return [self.adjustments[a] for a in self.by_target.get(target_id, ())]

    def factor(self, target_id: str, now: datetime | None) -> float:
        """The product of the penalty factors that apply to a memory or note at ``now`` (1.0: none)."""
        out = 1.0
        for a in self.about(target_id):
            if a.action == "penalty" and a.factor is not None and a.applies(now):
                out *= a.factor
        return out

    def invalidated(self, target_id: str, now: datetime | None) -> Adjustment | None:
        """The invalidation that keeps a memory or note out of default retrieval at ``now``, if any."""
        for a in self.about(target_id):
            if a.action == "invalidate" and a.applies(now):
                return a
        return None

    def skills(self, now: datetime | None = None) -> list[Adjustment]:
        """The latest applying version of each skill (style, tool_choice), heaviest first."""
        latest: dict[str, Adjustment] = {}
        for a in self.adjustments.values():
            if a.action == "prefer" and a.skill is not None and a.applies(now):
                latest[a.skill] = a
        return sorted(latest.values(), key=lambda a: (-(a.weight or 0.0), a.seq))

    def canonical(self) -> list:
        return [tuple(a.to_dict().values()) for a in self.adjustments.values()]


HANDLES = (MemoryAdjusted, AdjustmentReverted)


def evolve(state: AdjustmentState, env: Envelope) -> AdjustmentState:
    event = env.event
    if isinstance(event, MemoryAdjusted):
        adjustment = Adjustment(
            env.event_id, env.seq, event.at, event.action, event.layer, event.target_ids, event.factor, event.until,
            event.skill, event.preference, event.weight, event.version, event.signal_ids, event.reason,
            event.dispatcher,
        )
        state.adjustments[env.event_id] = adjustment
        for target in dict.fromkeys(event.target_ids):
            state.by_target.setdefault(target, []).append(env.event_id)
        for signal in dict.fromkeys(event.signal_ids):
            state.by_signal.setdefault(signal, []).append(env.event_id)
    elif isinstance(event, AdjustmentReverted):
        adjustment = state.adjustments.get(event.adjustment_id)
        if adjustment is not None and adjustment.reverted_at is None:  # an unknown or second revert changes nothing
            state.adjustments[event.adjustment_id] = replace(
                adjustment, reverted_at=event.at, revert_reason=event.reason, revert_event_id=env.event_id)
    return state


def fold(state: AdjustmentState, envelopes: Iterable[Envelope]) -> AdjustmentState:
    for env in envelopes:
        state = evolve(state, env)
    return state
