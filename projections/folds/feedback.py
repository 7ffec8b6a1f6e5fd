"""Feedback signals (seed 003 §4): the ``feedback_detected`` events of one user, in log order.

A pure fold: signals are listed as recorded and indexed by the memories and
notes they name, for the dispatcher and for ``explain``. It changes no memory.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from events.envelope import Envelope
from events.feedback_events import FeedbackDetected


@dataclass(frozen=True, slots=True)
class Signal:
    event_id: str
    seq: int
    at: datetime
    type: str
    confidence: float
    targets: tuple[str, ...]
    action_hints: tuple[str, ...]
    memory_ids: tuple[str, ...]
    cues: tuple[str, ...]
    judge: str
    query: str | None = None  # the question the judged reply answered (None: not recorded)
    reply: str = ""  # the judged agent reply: what it drew on is read from it (kept out of to_dict and the digest)

    def to_dict(self) -> dict:
        return {"event_id": self.event_id, "seq": self.seq, "at": self.at.isoformat(), "type": self.type,
                "confidence": self.confidence, "targets": list(self.targets), "action_hints": list(self.action_hints),
                "memory_ids": list(self.memory_ids), "cues": list(self.cues), "judge": self.judge,
                "query": self.query}


@dataclass
class FeedbackLog:
    signals: list[Signal] = field(default_factory=list)
    by_memory: dict[str, list[int]] = field(default_factory=dict)  # memory or note id → positions in signals

    def about(self, memory_id: str) -> list[Signal]:
        return [self.signals[i] for i in self.by_memory.get(memory_id, ())]

    def canonical(self) -> list:
        return [(s.event_id, s.seq, s.at.isoformat(), s.type, s.confidence, s.targets, s.action_hints, s.memory_ids,
                 s.cues, s.judge, s.query) for s in self.signals]


HANDLES = (FeedbackDetected,)


def evolve(log: FeedbackLog, env: Envelope) -> FeedbackLog:
    event = env.event
    if isinstance(event, FeedbackDetected):
        position = len(log.signals)
        log.signals.append(Signal(env.event_id, env.seq, env.occurred_at, event.type, event.confidence, event.targets,
                                  event.action_hints, event.memory_ids, event.cues, event.judge, event.query,
                                  event.agent_response))
        for memory_id in dict.fromkeys(event.memory_ids):
            log.by_memory.setdefault(memory_id, []).append(position)
    return log


def fold(log: FeedbackLog, envelopes: Iterable[Envelope]) -> FeedbackLog:
    for env in envelopes:
        log = evolve(log, env)
    return log
