"""Retention projection: the forgetting curve of every memory, with reinforcement.

The fold keeps, per memory (a recorded message, keyed by its event id): when
it was created, its memory type (from ``message_classified``; the last record
wins, default ``unknown``), its seed-002 category, its stability S and its
counted accesses. Queries compute, for a given ``now``,

    R = base · e^(−Δt / S) · (1 + w · ln(1 + access_count)) · category factor

with Δt in days since the last counted access (else since creation). Exempt
items (metadata flag, exempt type, a category that never decays, or a
message stating a constraint in force: the queries' ``pinned`` ids, read from
the notes) keep R = base and are never archived.

Stability depends on the policy, so the state remembers the fold digest of
the policy it was folded with (:meth:`RetentionPolicy.fold_digest`: stability,
reinforcement and category-by-role parameters), and ``evolve`` and the
queries refuse a policy whose fold parameters differ. A policy that differs
only in query parameters (floor, bonus, base, exemptions, category rules)
queries the same state. Re-projecting under policy B is
``fold(RetentionState(), log, B)``.

Like the other projections, ``evolve`` updates the state's dict in place and
returns the state; the items themselves are immutable records.
"""

from __future__ import annotations

import bisect
import math
import weakref
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from itertools import chain
from typing import NamedTuple

from events.envelope import Envelope
from events.errors import PalimpsestError
from events.model import MemoryRestored, MemoryTouched, MessageClassified, MessageRecorded
from projections.folds.policy import RetentionPolicy

SECONDS_PER_DAY = 86_400.0
EXEMPT_METADATA_KEYS = ("exempt", "compression_exempt")  # the latter is seed 000's column name
CATEGORY_METADATA_KEY = "category"


class PolicyMismatchError(PalimpsestError, ValueError):
    """A retention state is being evolved or queried with a policy other than the one it was folded with."""


@dataclass(frozen=True, slots=True)
class MemoryItem:
    """What retention knows about one memory; ``stability`` is in days."""

    memory_id: str
    seq: int
    created_at: datetime
    stability: float
    memory_type: str = "unknown"
    classifier: str | None = None
    category: str | None = None
    exempt: bool = False
    access_count: int = 0
    last_access: datetime | None = None
    ignored_touches: int = 0  # touches whose reason the policy does not count
    accesses: tuple[datetime, ...] = ()  # when each counted access happened, sorted (time travel bisects it)

    @property
    def reference_time(self) -> datetime:
        """Where Δt starts: the last counted access, else creation."""
        if self.last_access is None:
            return self.created_at
        return max(self.last_access, self.created_at)


@dataclass
class RetentionState:
    items: dict[str, MemoryItem] = field(default_factory=dict)
    fold_digest: str | None = None

    def canonical(self) -> list:
        # A replay's accesses are a million references to a few thousand datetime objects (one per touch
        # event): each object is formatted once, found by its id (every one is alive while this runs).
        every = [i.accesses for i in self.items.values()]
        objects = dict(zip(map(id, chain.from_iterable(every)), chain.from_iterable(every)))
        iso = {key: a.isoformat() for key, a in objects.items()}.__getitem__
        return [
            self.fold_digest,
            [
                (i.memory_id, i.seq, i.created_at.isoformat(), repr(i.stability), i.memory_type, i.classifier,
                 i.category, i.exempt, i.access_count, i.last_access.isoformat() if i.last_access else None,
                 i.ignored_touches, tuple(map(iso, map(id, i.accesses))))
                for i in sorted(self.items.values(), key=lambda i: i.seq)
            ],
        ]


def _check_policy(state: RetentionState, policy: RetentionPolicy) -> None:
    if state.fold_digest is not None and state.fold_digest != policy.fold_digest():
        raise PolicyMismatchError(
            f"this retention state was folded with stability/reinforcement parameters {state.fold_digest[:12]}, "
            f"but policy {policy.name!r} has {policy.fold_digest()[:12]}; "
            "re-project with fold(RetentionState(), log, policy)"
        )


def _with_access(accesses: tuple[datetime, ...], at: datetime) -> tuple[datetime, ...]:
    if not accesses or accesses[-1] <= at:  # the usual case: touches arrive in time order
        return (*accesses, at)
    i = bisect.bisect_right(accesses, at)
    return (*accesses[:i], at, *accesses[i:])


def bind(state: RetentionState, policy: RetentionPolicy) -> None:
    """Refuse a policy with other fold parameters, then remember the policy's fold digest (every event does this)."""
    if state.fold_digest is not policy.fold_digest():
        _check_policy(state, policy)
        state.fold_digest = policy.fold_digest()


# The events evolve reads; the shard fold (projections.folds.state) does not call it for any other.
HANDLES = (MessageRecorded, MessageClassified, MemoryTouched, MemoryRestored)


def evolve(state: RetentionState, env: Envelope, policy: RetentionPolicy) -> RetentionState:
    """Apply one envelope. Messages create items, classifications set their type, counted touches reinforce."""
    bind(state, policy)
    event = env.event
    if isinstance(event, MessageRecorded):
        meta = event.metadata
        category = meta.get(CATEGORY_METADATA_KEY)
        state.items[env.event_id] = MemoryItem(
            memory_id=env.event_id,
            seq=env.seq,
            created_at=event.occurred_at.astimezone(UTC),  # the UTC singleton: compared per candidate
            stability=policy.reinforced_stability("unknown", 0),
            category=category if isinstance(category, str) else policy.role_categories.get(event.role),
            exempt=any(meta.get(key) is True for key in EXEMPT_METADATA_KEYS),
        )
    elif isinstance(event, MessageClassified):
        item = state.items.get(event.message_event_id)
        if item is not None:
            state.items[item.memory_id] = replace(
                item,
                memory_type=event.memory_type,
                classifier=event.classifier,
                stability=policy.reinforced_stability(event.memory_type, item.access_count),
            )
    elif isinstance(event, MemoryTouched):
        counts = policy.counts(event.reason)
        for memory_id in dict.fromkeys(event.memory_ids):  # one access per memory per touch event
            item = state.items.get(memory_id)
            if item is None:  # not a message memory (or not ours): nothing to reinforce
                continue
            # Spelled out instead of dataclasses.replace: this runs once per touched memory per query,
            # tens of thousands of times in a replay, and replace() costs five times as much.
            if counts:
                n = item.access_count + 1
                last = env.occurred_at if item.last_access is None else max(item.last_access, env.occurred_at)
                stability, ignored = policy.reinforced_stability(item.memory_type, n), item.ignored_touches
                accesses = _with_access(item.accesses, env.occurred_at)
            else:
                n, last, stability, ignored = item.access_count, item.last_access, item.stability, item.ignored_touches + 1
                accesses = item.accesses
            state.items[memory_id] = MemoryItem(
                item.memory_id, item.seq, item.created_at, stability, item.memory_type, item.classifier,
                item.category, item.exempt, n, last, ignored, accesses,
            )
    elif isinstance(event, MemoryRestored):
        # Bringing a memory back from the archive is a deliberate recall: it counts as an access.
        at = event.at.astimezone(UTC)
        for memory_id in dict.fromkeys(event.memory_ids):
            item = state.items.get(memory_id)
            if item is not None:
                n = item.access_count + 1
                last = at if item.last_access is None else max(item.last_access, at)
                state.items[memory_id] = replace(
                    item, access_count=n, last_access=last, stability=policy.reinforced_stability(item.memory_type, n),
                    accesses=_with_access(item.accesses, at),
                )
    return state


def fold(state: RetentionState, envelopes: Iterable[Envelope], policy: RetentionPolicy) -> RetentionState:
    for env in envelopes:
        state = evolve(state, env, policy)
    return state


# -- queries: pure functions of (state or item, now, policy) ------------------


@dataclass(frozen=True, slots=True)
class RetentionRow:
    """One item's retention at ``now``, with the numbers that produced it and a sentence saying why."""

    memory_id: str
    memory_type: str
    category: str | None
    retention: float
    stability: float
    delta_days: float
    age_days: float
    access_count: int
    ignored_touches: int
    exempt: bool
    archive: bool
    why: str
    archive_reason: str | None = None  # "retention_floor" or "category_rule" when ``archive``


def as_of(item: MemoryItem, now: datetime, policy: RetentionPolicy) -> MemoryItem | None:
    """The item as it stood at ``now``: None if created later; accesses after ``now`` not yet counted."""
    if item.created_at > now:
        return None
    if item.last_access is None or item.last_access <= now:
        return item
    past = item.accesses[: bisect.bisect_right(item.accesses, now)]
    # Positional, not dataclasses.replace: a ranking asks this for every candidate of every query.
    return MemoryItem(
        item.memory_id, item.seq, item.created_at, policy.reinforced_stability(item.memory_type, len(past)),
        item.memory_type, item.classifier, item.category, item.exempt, len(past), past[-1] if past else None,
        item.ignored_touches, past,
    )


def _days(now: datetime, then: datetime) -> float:
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware (e.g. datetime.now(UTC)); naive times are ambiguous")
    return max(0.0, (now - then).total_seconds() / SECONDS_PER_DAY)


def _exempt_reason(item: MemoryItem, policy: RetentionPolicy, pinned: Collection[str] = ()) -> str | None:
    if item.memory_id in pinned:
        return "states a constraint in force"
    if item.exempt:
        return "exempt by its message metadata"
    if item.memory_type in policy.exempt_types:
        return f"type {item.memory_type} is exempt"
    rule = policy.rule_for(item.category)
    if rule is not None and not rule.decays:
        return f"category {item.category} never decays"
    return None


class _Terms(NamedTuple):
    delta: float
    age: float
    exempt: str | None
    bonus: float
    factor: float
    value: float


def _terms(item: MemoryItem, now: datetime, policy: RetentionPolicy, pinned: Collection[str] = ()) -> _Terms:
    delta = _days(now, item.reference_time)
    age = _days(now, item.created_at)
    exempt = _exempt_reason(item, policy, pinned)
    if exempt is not None:
        return _Terms(delta, age, exempt, 1.0, 1.0, policy.base_retention)
    bonus = 1.0 + policy.access_bonus_weight * math.log1p(item.access_count)
    rule = policy.rule_for(item.category)
    factor = rule.step_multiplier(delta) if rule is not None else 1.0
    value = policy.base_retention * math.exp(-delta / item.stability) * bonus * factor
    return _Terms(delta, age, None, bonus, factor, value)


def retention(item: MemoryItem, now: datetime, policy: RetentionPolicy, pinned: Collection[str] = ()) -> float:
    """R of one item at ``now`` (the item must come from a state folded with ``policy``); ``pinned``: the ids of
    messages stating a constraint in force (:meth:`~projections.folds.notes.NoteState.constraint_sources`)."""
    return _terms(item, now, policy, pinned).value


def assess(item: MemoryItem, now: datetime, policy: RetentionPolicy, pinned: Collection[str] = ()) -> RetentionRow:
    """Retention of one item at ``now`` under ``policy``, whether it is to be archived, and why (``pinned``: as
    :func:`retention`)."""
    t = _terms(item, now, policy, pinned)
    base = policy.base_retention
    row = {"memory_id": item.memory_id, "memory_type": item.memory_type, "category": item.category,
           "retention": t.value, "stability": item.stability, "delta_days": t.delta, "age_days": t.age,
           "access_count": item.access_count, "ignored_touches": item.ignored_touches}
    if t.exempt is not None:
        return RetentionRow(**row, exempt=True, archive=False, why=f"{t.exempt}: R = base {base:g}; never archived")

    since = "last access" if item.last_access is not None else "creation"
    parts = [
        f"type {item.memory_type}: S = {policy.stability_for(item.memory_type):g} d"
        + (f" × {policy.reinforcement_factor:g}^{item.access_count}" if item.access_count else "")
        + f" = {item.stability:.4g} d",
        f"Δt = {t.delta:.4g} d since {since}",
        f"R = {base:g} · e^(−{t.delta:.4g}/{item.stability:.4g})"
        + (f" · bonus {t.bonus:.4g}" if t.bonus != 1.0 else "")
        + (f" · category {item.category} ×{t.factor:.4g}" if t.factor != 1.0 else "")
        + f" = {t.value:.4g}",
    ]
    if item.ignored_touches:
        parts.append(f"{item.ignored_touches} touch(es) not counted by the policy")
    rule = policy.rule_for(item.category)
    own_floor = rule is not None and rule.archive_below is not None
    floor = rule.archive_below if own_floor else policy.archive_floor
    floor_name = f"category {item.category} floor" if own_floor else "floor"
    if rule is not None and rule.archive_after_days is not None and t.age >= rule.archive_after_days:
        archive, verdict = "category_rule", f"archive: category {item.category}, age {t.age:.4g} d ≥ {rule.archive_after_days:g} d"
    elif t.value < floor:
        archive, verdict = "retention_floor", f"archive: R < {floor_name} {floor:g}"
    else:
        archive, verdict = None, f"kept: R ≥ {floor_name} {floor:g}"
    parts.append(verdict)
    return RetentionRow(**row, exempt=False, archive=archive is not None, why="; ".join(parts), archive_reason=archive)


def _items_at(state: RetentionState, now: datetime, policy: RetentionPolicy) -> list[MemoryItem]:
    """The items that existed at ``now``, as they stood then, in log order (time travel is exact)."""
    _check_policy(state, policy)
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware (e.g. datetime.now(UTC)); naive times are ambiguous")
    items = (as_of(item, now, policy) for item in sorted(state.items.values(), key=lambda i: i.seq))
    return [item for item in items if item is not None]


def retention_table(state: RetentionState, now: datetime, policy: RetentionPolicy,
                    pinned: Collection[str] = ()) -> list[RetentionRow]:
    """Every item's retention at ``now``, in log order: the explainability view.

    Items created after ``now`` are absent and accesses after ``now`` are not
    counted, so ``--at`` in the past shows the memory as it was then.
    """
    return [assess(item, now, policy, pinned) for item in _items_at(state, now, policy)]


_EPOCH, _MICROSECOND = datetime(1970, 1, 1, tzinfo=UTC), timedelta(microseconds=1)
# Derived per state, dropped with it (never folded or saved): memory id -> _prepare(item, policy), times in epoch
# microseconds; an entry is used while the state holds that very (immutable) item and the policy is the same.
_PREPARED: dict[int, tuple[weakref.ref, dict[str, tuple]]] = {}


def epoch_micros(at: datetime) -> int:
    return (at - _EPOCH) // _MICROSECOND  # exact: (now - then).total_seconds() is this difference over 10**6


def _prepared(state: RetentionState) -> dict[str, tuple]:
    cached = _PREPARED.get(key := id(state))
    if cached is None or cached[0]() is not state:
        cached = _PREPARED[key] = (weakref.ref(state, lambda _: _PREPARED.pop(key, None)), {})
    return cached[1]


def _prepare(item: MemoryItem, policy: RetentionPolicy) -> tuple:
    """(item, policy, created, exempt?, rule, reference, last access, bonus, first access, S and bonus before it)"""
    created, last = epoch_micros(item.created_at), None if item.last_access is None else epoch_micros(item.last_access)
    return (item, policy, created, _exempt_reason(item, policy) is not None, policy.rule_for(item.category),
            created if last is None else max(last, created), last,
            1.0 + policy.access_bonus_weight * math.log1p(item.access_count),
            epoch_micros(item.accesses[0]) if item.accesses else None, policy.reinforced_stability(item.memory_type, 0),
            1.0 + policy.access_bonus_weight * math.log1p(0))


def retention_scores(
    state: RetentionState, now: datetime, policy: RetentionPolicy, memory_ids=None, pinned: Collection[str] = ()
) -> dict[str, float]:
    """memory id → R at ``now`` (of ``memory_ids`` only, when given), for the ranking's retention term
    (``pinned``: as :func:`retention`)."""
    _check_policy(state, policy)
    if memory_ids is None:
        return {item.memory_id: retention(item, now, policy, pinned) for item in _items_at(state, now, policy)}
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware (e.g. datetime.now(UTC)); naive times are ambiguous")
    now = now.astimezone(UTC)  # the items' times are UTC: same tzinfo, no utcoffset call per comparison
    now_us, out, items, table = epoch_micros(now), {}, state.items, _prepared(state)
    base, bonus_weight = policy.base_retention, policy.access_bonus_weight
    for mid in memory_ids:
        if (item := items.get(mid)) is None:
            continue
        entry = table.get(mid)
        if entry is None or entry[0] is not item or entry[1] is not policy:
            entry = table[mid] = _prepare(item, policy)
        _, _, created, exempt, rule, reference, last, bonus, first, stability_before, bonus_before = entry
        if created > now_us:
            continue
        if exempt or mid in pinned:
            out[mid] = base
            continue
        # retention(as_of(item, now), now) with no past item built: :func:`_terms`'s operations, so the same float
        stability = item.stability
        if last is not None and last > now_us:  # time travel: accesses after ``now`` not yet counted
            if first is None or now_us < first:  # none of them yet
                reference, stability, bonus = created, stability_before, bonus_before
            else:
                n = bisect.bisect_right(item.accesses, now)
                stability, bonus = policy.reinforced_stability(item.memory_type, n), 1.0 + bonus_weight * math.log1p(n)
                reference = max(epoch_micros(item.accesses[n - 1]), created)
        delta = (now_us - reference) / 1_000_000 / SECONDS_PER_DAY
        delta = delta if delta > 0.0 else 0.0
        factor = rule.step_multiplier(delta) if rule is not None else 1.0
        out[mid] = base * math.exp(-delta / stability) * bonus * factor
    return out


def archival_candidates(state: RetentionState, now: datetime, policy: RetentionPolicy,
                        pinned: Collection[str] = ()) -> list[RetentionRow]:
    """Items to archive at ``now`` (below their floor, or past their category's age limit; never a ``pinned`` one).

    Weakest first: sorted by (R, creation time, memory id), so ties are deterministic.
    """
    rows = [row for row in retention_table(state, now, policy, pinned) if row.archive]
    created = {i.memory_id: i.created_at for i in state.items.values()}
    return sorted(rows, key=lambda r: (r.retention, created[r.memory_id], r.memory_id))
