"""Vector projection: the recorded embedding of every message of one user.

The fold keeps the vectors in memory (for the digest and to re-seed the
LanceDB table); the LanceDB writer in :mod:`projections.adapters.lance` persists them
and answers nearest-neighbour queries.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from events.envelope import Envelope
from events.model import MessageEmbedded


@dataclass(frozen=True, slots=True)
class VectorRow:
    memory_id: str
    event_id: str
    seq: int
    model_id: str
    vector: np.ndarray


@dataclass
class VectorStore:
    rows: dict[str, VectorRow] = field(default_factory=dict)

    def canonical(self) -> list:
        return [(r.memory_id, r.event_id, r.seq, r.model_id, r.vector.tobytes()) for r in self.rows.values()]


# The events evolve reads; the shard fold (projections.folds.state) does not call it for any other.
HANDLES = (MessageEmbedded,)


def evolve(state: VectorStore, env: Envelope) -> VectorStore:
    event = env.event
    if isinstance(event, MessageEmbedded):
        state.rows[event.message_event_id] = VectorRow(
            memory_id=event.message_event_id, event_id=env.event_id, seq=env.seq, model_id=event.model_id, vector=event.array()
        )
    return state
