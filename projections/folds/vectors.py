"""Vector projection: the recorded embedding of every message of one user.

The fold keeps the vectors in memory (for the digest and to re-seed the
LanceDB table); the LanceDB writer in :mod:`projections.adapters.lance` persists them
and answers nearest-neighbour queries.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from events.envelope import Envelope
from events.model import EmbedderSwitched, MessageEmbedded


@dataclass(frozen=True, slots=True)
class VectorRow:
    memory_id: str
    event_id: str
    seq: int
    model_id: str
    vector: np.ndarray


@dataclass
class VectorStore:
    """The user's vectors: ``rows`` those of the ``active`` model (the one searches use), ``others`` those of any
    other model the log holds (a re-embedding records the new model's beside the old; switching back is a fold)."""

    rows: dict[str, VectorRow] = field(default_factory=dict)
    active: str = ""  # the model ``rows`` are of: the first vector's, until an ``embedder_switched`` event
    others: dict[str, dict[str, VectorRow]] = field(default_factory=dict)
    first: str = ""  # the model of the user's first vector: the LanceDB table holds those (actors.dense)

    def canonical(self) -> list:
        rows = [(r.memory_id, r.event_id, r.seq, r.model_id, r.vector.tobytes()) for r in self.rows.values()]
        if not self.others and all(r.model_id == self.active for r in self.rows.values()):
            return rows  # one model: the form every store had before re-embedding existed
        others = [(m, [(r.memory_id, r.event_id, r.seq, r.vector.tobytes()) for r in held.values()])
                  for m, held in sorted(self.others.items())]
        return [rows, self.active, others]

    def of_model(self, model_id: str) -> dict[str, VectorRow]:
        """The vectors of ``model_id`` (empty if the user has none of it)."""
        return self.rows if model_id == self.active else self.others.get(model_id, {})


# The events evolve reads; the shard fold (projections.folds.state) does not call it for any other.
HANDLES = (MessageEmbedded, EmbedderSwitched)


def evolve(state: VectorStore, env: Envelope) -> VectorStore:
    event = env.event
    if isinstance(event, MessageEmbedded):
        row = VectorRow(memory_id=event.message_event_id, event_id=env.event_id, seq=env.seq,
                        model_id=event.model_id, vector=event.array())
        if not state.active:
            state.active = state.first = event.model_id
        if event.model_id == state.active:
            state.rows[event.message_event_id] = row
        else:
            state.others.setdefault(event.model_id, {})[event.message_event_id] = row
    elif isinstance(event, EmbedderSwitched) and event.model_id != state.active:
        if state.active:
            state.others[state.active] = state.rows
        state.rows = state.others.pop(event.model_id, {})
        state.active = event.model_id
    return state
