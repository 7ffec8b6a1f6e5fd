"""The user's retrieval policy as the Molt controller changed it (seed 003 §10): its history and its value.

A pure fold over ``policy_changed`` (applied; a revert is a change naming the
one it undoes) and ``policy_proposal_rejected`` (kept for the history). The
policy is a set of :class:`~projections.queries.retrieval.FusionConfig`
fields; :meth:`PolicyHistory.parameters` is what applies at a time, later
changes overriding earlier ones.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from events.envelope import Envelope
from events.learning_events import PolicyChanged, PolicyProposalRejected


@dataclass(frozen=True, slots=True)
class PolicyRecord:
    change_id: str
    seq: int
    at: datetime
    applied: bool  # False: a rejected proposal
    parameters: tuple[tuple[str, float], ...]
    previous: tuple[tuple[str, float], ...]
    metric: str
    before: float
    after: float
    queries: int
    trigger: str
    reverts: str | None
    reason: str
    controller: str

    def to_dict(self) -> dict:
        return {"change_id": self.change_id, "seq": self.seq, "at": self.at.isoformat(),
                "status": "applied" if self.applied else "rejected", "parameters": dict(self.parameters),
                "previous": dict(self.previous), "metric": self.metric, "before": self.before, "after": self.after,
                "queries": self.queries, "trigger": self.trigger, "reverts": self.reverts, "reason": self.reason,
                "controller": self.controller}


@dataclass
class PolicyHistory:
    records: list[PolicyRecord] = field(default_factory=list)

    def parameters(self, now: datetime | None = None) -> dict[str, float]:
        """The policy overrides in force at ``now`` (None: all applied changes)."""
        out: dict[str, float] = {}
        for r in self.records:
            if r.applied and (now is None or r.at <= now):
                out.update(r.parameters)
        return out

    def reverted(self) -> set[str]:
        return {r.reverts for r in self.records if r.applied and r.reverts}

    def get(self, change_id: str) -> PolicyRecord | None:
        return next((r for r in self.records if r.change_id == change_id), None)

    def canonical(self) -> list:
        return [tuple(r.to_dict().values()) for r in self.records]


HANDLES = (PolicyChanged, PolicyProposalRejected)


def evolve(state: PolicyHistory, env: Envelope) -> PolicyHistory:
    event = env.event
    if isinstance(event, PolicyChanged | PolicyProposalRejected):
        applied = isinstance(event, PolicyChanged)
        state.records.append(PolicyRecord(
            env.event_id, env.seq, event.at, applied, tuple(sorted(event.parameters.items())),
            tuple(sorted(event.previous.items())), event.metric, event.before, event.after, event.queries,
            event.trigger, event.reverts if applied else None, event.reason, event.controller,
        ))
    return state


def fold(state: PolicyHistory, envelopes: Iterable[Envelope]) -> PolicyHistory:
    for env in envelopes:
        state = evolve(state, env)
    return state
