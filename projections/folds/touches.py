"""Access projection: how often and when each memory was touched, and why.

Touches drive reinforcement later (retention); for now they are counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from events.envelope import Envelope
from events.model import MemoryTouched


@dataclass
class AccessStats:
    count: int = 0
    by_reason: dict[str, int] = field(default_factory=dict)
    last_touched_at: datetime | None = None


@dataclass
class TouchLog:
    stats: dict[str, AccessStats] = field(default_factory=dict)
    total: int = 0

    def canonical(self) -> list:
        return [
            (mid, s.count, sorted(s.by_reason.items()), s.last_touched_at.isoformat() if s.last_touched_at else None)
            for mid, s in sorted(self.stats.items())
        ]


# The events evolve reads; the shard fold (projections.folds.state) does not call it for any other.
HANDLES = (MemoryTouched,)


def evolve(state: TouchLog, env: Envelope) -> TouchLog:
    event = env.event
    if isinstance(event, MemoryTouched):
        every, reason, at = state.stats, event.reason, env.occurred_at
        for memory_id in event.memory_ids:
            stats = every.get(memory_id)
            if stats is None:  # not setdefault(id, AccessStats()): that builds a record for every touch of a replay
                stats = every[memory_id] = AccessStats()
            stats.count += 1
            by_reason = stats.by_reason
            by_reason[reason] = by_reason.get(reason, 0) + 1
            stats.last_touched_at = at
        state.total += len(event.memory_ids)
    return state


def count_burst(pending: dict, keys, at) -> None:
    """Count one touch event of a burst: each of ``keys`` (distinct) gains a visit, its latest time the max.

    ``pending`` maps a key to ``[visits, latest time]``; the run folds (tiers, graph) apply it once per burst.
    """
    for key in keys:
        entry = pending.get(key)
        if entry is None:
            pending[key] = [1, at]
        else:
            entry[0] += 1
            if at > entry[1]:
                entry[1] = at
