"""Archive projection: which memories have left default retrieval, when and why.

Archival is an event (``memory_archived``: the retention floor, a category's
age limit, or a manual request); restoring is another (``memory_restored``).
Nothing is deleted: an archived memory stays in the log and in every other
projection, default retrieval skips it, and an explicit archive search still
finds it.

An LFU eviction (reason ``lfu_eviction``) archives a session out of the
mid-term *tier* only: the tier projection drops it and this projection
records it under ``evicted``, but its turns stay in the long-term store and
in default retrieval until their own retention archives them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from events.envelope import Envelope
from events.model import MemoryArchived, MemoryRestored

SCOPES: tuple[str, ...] = ("active", "archive", "all")


@dataclass(frozen=True, slots=True)
class ArchiveEntry:
    memory_id: str
    reason: str
    at: datetime
    policy: str
    retention: float | None
    event_id: str
    detail: str = ""


@dataclass
class ArchiveState:
    archived: dict[str, ArchiveEntry] = field(default_factory=dict)
    restored: dict[str, int] = field(default_factory=dict)  # memory id -> times restored
    evicted: dict[str, ArchiveEntry] = field(default_factory=dict)  # out of the mid-term tier, still retrievable

    def is_archived(self, memory_id: str) -> bool:
        return memory_id in self.archived

    def canonical(self) -> list:
        return [
            sorted(
                (e.memory_id, e.reason, e.at.isoformat(), e.policy, repr(e.retention), e.event_id, e.detail)
                for e in self.archived.values()
            ),
            sorted(self.restored.items()),
            sorted((e.memory_id, e.at.isoformat(), e.event_id) for e in self.evicted.values()),
        ]


def in_scope(state: ArchiveState, memory_id: str, scope: str) -> bool:
    """Whether a memory belongs to a search ``scope``: ``active`` (default), ``archive`` or ``all``."""
    if scope == "all":
        return True
    return state.is_archived(memory_id) == (scope == "archive")


# The events evolve reads; the shard fold (projections.folds.state) does not call it for any other.
HANDLES = (MemoryArchived, MemoryRestored)


def evolve(state: ArchiveState, env: Envelope) -> ArchiveState:
    event = env.event
    if isinstance(event, MemoryArchived):
        retentions = event.retentions or (math.nan,) * len(event.memory_ids)
        target = state.evicted if event.reason == "lfu_eviction" else state.archived
        for memory_id, value in zip(event.memory_ids, retentions):
            if memory_id not in target:  # the first archival of a stretch is the one that counts
                target[memory_id] = ArchiveEntry(
                    memory_id, event.reason, event.at, event.policy, None if math.isnan(value) else value,
                    env.event_id, event.detail,
                )
    elif isinstance(event, MemoryRestored):
        for memory_id in event.memory_ids:
            if state.archived.pop(memory_id, None) is not None:
                state.restored[memory_id] = state.restored.get(memory_id, 0) + 1
    return state


def fold(state: ArchiveState, envelopes: Iterable[Envelope]) -> ArchiveState:
    for env in envelopes:
        state = evolve(state, env)
    return state
