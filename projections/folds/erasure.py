"""The erasures of a user: each ``user_forgotten`` event, the key generation it destroyed and how far it reached.

This is the one projection a forget keeps: :func:`projections.folds.state.evolve` replaces every other
projection of the user by an empty one at a ``user_forgotten`` event, so the digest of a forgotten user says
it was forgotten (and when) and nothing else. Pure: no I/O, no clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from events.envelope import Envelope
from events.erasure_events import UserForgotten

HANDLES = (UserForgotten,)


@dataclass(frozen=True, slots=True)
class Erasure:
    seq: int
    key_generation: int
    through_seq: int
    at: datetime


@dataclass(slots=True)
class ErasureState:
    erasures: tuple[Erasure, ...] = field(default=())

    @property
    def last_seq(self) -> int:
        return self.erasures[-1].seq if self.erasures else 0

    def canonical(self) -> tuple:
        return tuple((e.seq, e.key_generation, e.through_seq, e.at.isoformat()) for e in self.erasures)


def evolve(state: ErasureState, env: Envelope) -> ErasureState:
    event = env.event
    if not isinstance(event, UserForgotten):
        return state
    return ErasureState(state.erasures + (Erasure(env.seq, event.key_generation, event.through_seq, event.at),))
