"""Access projection: how often and when each memory was touched, and why.

Touches drive reinforcement later (retention); for now they are counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from events.envelope import Envelope
from events.model import MemoryTouched
from events.touch_block import TouchBlock
from projections.folds.touch_pairs import reason_counts, tally


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


def evolve(state: TouchLog, env: Envelope | TouchBlock) -> TouchLog:
    if type(env) is TouchBlock:
        return _block(state, env)
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


def _block(state: TouchLog, block: TouchBlock) -> TouchLog:
    """:func:`evolve` over each event of ``block``: every pair counted (no dedup), the latest is the last event's."""
    every, times = state.stats, block.times
    whole = tally(block, once_per_event=False, latest="seq")
    for memory_id, count, last in zip(whole.groups, whole.counts, whole.latest, strict=True):
        if count:
            stats = every.get(memory_id)
            if stats is None:
                stats = every[memory_id] = AccessStats()
            stats.count += count
            stats.last_touched_at = times[last]
    groups = whole.groups
    for reason, group, count in reason_counts(block, whole):
        by_reason = every[groups[group]].by_reason
        by_reason[reason] = by_reason.get(reason, 0) + count
    state.total += int(sum(whole.counts))
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
