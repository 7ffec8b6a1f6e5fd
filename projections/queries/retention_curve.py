"""One memory's forgetting curve over time: R(t) with its reinforcement points and archival date.

Pure: every value is the retention fold's own answer for the item as it
stood at that time (:func:`projections.folds.retention.as_of` then
:func:`~projections.folds.retention.retention`), so the curve drops with
e^(−Δt/S), jumps at each counted access and agrees exactly with
``retention`` / time-travel queries at every sampled instant. Past the last
access it is a projection that assumes no further access; the projected
archival date is the first time the policy's archive rule (floor or the
category's age limit) holds.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from projections.folds.policy import RetentionPolicy
from projections.folds.retention import MemoryItem, as_of, assess, retention

HORIZON = timedelta(days=3650)  # beyond this an item is "not archived within ten years"
EPSILON = timedelta(milliseconds=1)


def archive_floor(item: MemoryItem, policy: RetentionPolicy) -> float:
    """The retention below which ``item`` is archived (its category's own floor, else the policy's)."""
    rule = policy.rule_for(item.category)
    return rule.archive_below if rule is not None and rule.archive_below is not None else policy.archive_floor


def projected_archival(item: MemoryItem, policy: RetentionPolicy) -> datetime | None:
    """When the policy would archive ``item`` if it is never accessed again (None: not within the horizon).

    After the last access R only falls and age only grows, so the archive
    rule, once true, stays true: a bisection finds the first time (to a second).
    """
    lo = item.reference_time
    hi = lo + HORIZON
    if not assess(item, hi, policy).archive:
        return None
    if assess(item, lo, policy).archive:
        return lo
    while hi - lo > timedelta(seconds=1):
        mid = lo + (hi - lo) / 2
        if assess(item, mid, policy).archive:
            hi = mid
        else:
            lo = mid
    return hi


def curve(item: MemoryItem, policy: RetentionPolicy, now: datetime, *, until: datetime | None = None,
          points: int = 80) -> dict:
    """R over [creation, end]: ``points`` even samples plus both sides of each counted access and ``now``.

    ``end`` is ``until`` when given, else a little past the later of ``now``
    and the projected archival date. Each access is reported with R just
    after it (the top of the jump).
    """
    archival = projected_archival(item, policy)
    start = item.created_at
    if until is None:
        last = max(now, archival or now, start + timedelta(days=1))
        until = last + (last - start) * 0.1
    until = max(until, start + timedelta(minutes=1))
    step = (until - start) / max(1, points - 1)
    times = {start + step * i for i in range(points)}
    for access in item.accesses:
        times.update((access - EPSILON, access))
    if start <= now <= until:
        times.add(now)

    def value(t: datetime) -> float:
        past = as_of(item, t, policy)
        return retention(past, t, policy) if past is not None else 0.0

    samples = [(t, value(t)) for t in sorted(t for t in times if start <= t <= until)]
    return {
        "start": start.isoformat(), "end": until.isoformat(), "now": now.isoformat(),
        "floor": archive_floor(item, policy),
        "points": [[t.isoformat(), round(r, 6)] for t, r in samples],
        "accesses": [{"at": a.isoformat(), "retention": round(value(a), 6)} for a in item.accesses],
        "archive_projected": archival.isoformat() if archival is not None else None,
    }
