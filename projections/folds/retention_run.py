"""Retention's fold of a whole run of one user's events: the state :func:`retention.evolve` leaves, with less work.

A replay touches each memory hundreds of times, and ``evolve`` rebuilds the
frozen :class:`~projections.folds.retention.MemoryItem` (and copies its access
tuple) on every touch. :func:`fold_run` holds each item the run changes as a
mutable list and freezes it once, at the end of the run.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from datetime import UTC, datetime

from events.envelope import Envelope
from events.model import MemoryRestored, MemoryTouched, MessageClassified, MessageRecorded
from events.touch_block import TouchBlock
from projections.folds.policy import RetentionPolicy
from projections.folds.retention import (
    CATEGORY_METADATA_KEY, EXEMPT_METADATA_KEYS, MemoryItem, RetentionState, bind,
)
from projections.folds.touch_pairs import tally, times_of

# Where each MemoryItem field sits in fold_run's mutable working copy of an item.
_COUNT, _LAST, _IGNORED, _ACCESSES = 8, 9, 10, 11


def fold_run(state: RetentionState, envelopes: Iterable[Envelope], policy: RetentionPolicy) -> RetentionState:
    """The state :func:`evolve` leaves after each envelope in turn, with far less work per event.

    An item the run changes is held as a mutable list (its accesses a list)
    and frozen into a :class:`MemoryItem` once, at the end of the run: a replay
    touches each memory hundreds of times, and ``evolve`` rebuilds the item
    (and copies its access tuple) on every touch. The stability is computed
    at the end too: it is a closed form of (type, counted accesses), so it
    does not depend on the order classifications and touches arrived in.
    """
    bind(state, policy)
    items = state.items
    work: dict[str, list] = {}

    def open_item(memory_id: str) -> list | None:
        w = work.get(memory_id)
        if w is None:
            item = items.get(memory_id)
            if item is None:
                return None
            w = work[memory_id] = [item.memory_id, item.seq, item.created_at, item.stability, item.memory_type,
                                   item.classifier, item.category, item.exempt, item.access_count, item.last_access,
                                   item.ignored_touches, list(item.accesses)]
        return w

    def access(w: list, at: datetime) -> None:
        w[_COUNT] += 1
        w[_LAST] = at if w[_LAST] is None else max(w[_LAST], at)
        accesses = w[_ACCESSES]
        if not accesses or accesses[-1] <= at:
            accesses.append(at)
        else:
            bisect.insort_right(accesses, at)

    # The ids open_item opens are the state's items: an item in the run's work is in ``items`` too (opened from
    # there, or a message of the run, whose place in ``items`` is taken as it comes).
    known = items
    for env in envelopes:
        if type(env) is TouchBlock:
            counted = tally(env, reasons=policy.counts, member=known)
            for memory_id, times in zip(counted.groups, times_of(env, counted), strict=True):
                if times:
                    w = work.get(memory_id) or open_item(memory_id)
                    w[_COUNT] += len(times)
                    last = w[_LAST]
                    if last is None or times[-1] > last:
                        w[_LAST] = times[-1]
                    accesses = w[_ACCESSES]
                    if not accesses or accesses[-1] <= times[0]:
                        accesses += times
                    else:  # a stable sort: equal times keep the order insort_right gives them one by one
                        accesses[:] = sorted(accesses + times)
            ignored = tally(env, reasons=lambda reason: not policy.counts(reason), member=known)
            for memory_id, count in zip(ignored.groups, ignored.counts, strict=True):
                if count:
                    (work.get(memory_id) or open_item(memory_id))[_IGNORED] += count
            continue
        event = env.event
        if isinstance(event, MemoryTouched):
            counted, at = policy.counts(event.reason), env.occurred_at
            for memory_id in dict.fromkeys(event.memory_ids):
                w = work.get(memory_id) or open_item(memory_id)  # the common case without a call
                if w is None:
                    continue
                if counted:  # access(w, at), inlined: the innermost loop of a replay (every touched id)
                    w[_COUNT] += 1
                    last = w[_LAST]
                    if last is None or at > last:  # max(last, at): the earlier of equals stays, as max keeps it
                        w[_LAST] = at
                    accesses = w[_ACCESSES]
                    if not accesses or accesses[-1] <= at:
                        accesses.append(at)
                    else:
                        bisect.insort_right(accesses, at)
                else:
                    w[_IGNORED] += 1
        elif isinstance(event, MessageRecorded):
            meta = event.metadata
            category = meta.get(CATEGORY_METADATA_KEY)
            items[env.event_id] = None  # its place in the dict's order; frozen below
            work[env.event_id] = [
                env.event_id, env.seq, event.occurred_at.astimezone(UTC), 0.0, "unknown", None,
                category if isinstance(category, str) else policy.role_categories.get(event.role),
                any(meta.get(key) is True for key in EXEMPT_METADATA_KEYS), 0, None, 0, []]
        elif isinstance(event, MessageClassified):
            w = open_item(event.message_event_id)
            if w is not None:
                w[4], w[5] = event.memory_type, event.classifier
        elif isinstance(event, MemoryRestored):
            at = event.at.astimezone(UTC)
            for memory_id in dict.fromkeys(event.memory_ids):
                w = open_item(memory_id)
                if w is not None:
                    access(w, at)
    for memory_id, w in work.items():
        w[3] = policy.reinforced_stability(w[4], w[_COUNT])
        w[_ACCESSES] = tuple(w[_ACCESSES])
        items[memory_id] = MemoryItem(*w)
    return state
