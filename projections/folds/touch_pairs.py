"""What a fold needs of a :class:`~events.touch_block.TouchBlock`, computed over its (event, memory id) pairs at once.

A replay's touches are a million (event, id) pairs for sixty thousand events; the
folds that read them each want a count per memory (or per session), the latest
time, and retention the times themselves. :func:`tally` gives those with numpy
over the block's columns, so a fold's Python loop runs once per distinct
memory of the block instead of once per pair. Each result is what the fold's
per-event loop leaves: the same counts, the same latest times, the same order
of equal times (a pair's position in its event's list is kept within an event,
and events in seq order within a time).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from itertools import compress

import numpy as np

from events.touch_block import TouchBlock


@dataclass(slots=True)
class Pairs:
    """The block's (event, id) pairs: ``codes[j]`` indexes ``names`` (first-seen order), ``rows[j]`` its event."""

    names: list[str]
    codes: np.ndarray
    rows: np.ndarray
    reasons: list[str]  # the block's distinct reasons
    reason_of: np.ndarray  # per event: its reason's index in ``reasons``
    rank: np.ndarray  # per event: its place in time order (ties in seq order)
    by_rank: np.ndarray  # the event at each place of that order
    repeats: np.ndarray | None  # per pair: the id came earlier in the same event (None: no event repeats an id)
    timeline: np.ndarray  # the events' times (objects) in that order: ``times[by_rank]``


def pairs(block: TouchBlock) -> Pairs:
    """The pairs of ``block``, built once and kept on it (every fold of a replay reads the same block)."""
    if block._pairs is None:
        encoded = block.ids.dictionary_encode()
        codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        rows = np.repeat(np.arange(block.events, dtype=np.int64), np.diff(block.offsets))
        names = encoded.dictionary.to_pylist()
        by_rank = np.argsort(block.micros, kind="stable")  # stable: ties keep seq order
        rank = np.empty_like(by_rank)
        rank[by_rank] = np.arange(block.events, dtype=np.int64)
        distinct = dict.fromkeys(block.reasons)
        index = {reason: i for i, reason in enumerate(distinct)}
        reason_of = np.fromiter(map(index.__getitem__, block.reasons), dtype=np.int64, count=block.events)
        timeline = np.empty(block.events, dtype=object)
        timeline[:] = block.times
        block._pairs = Pairs(names, codes, rows, list(distinct), reason_of, rank, by_rank,
                             _repeats(rows, codes, len(names)), timeline[by_rank])
    return block._pairs


def _repeats(rows: np.ndarray, keys: np.ndarray, distinct: int) -> np.ndarray | None:
    """Per pair: whether an earlier pair of the same event has its key (None when no event repeats a key).

    ``rows`` never decrease (pairs come in event order), so a stable sort by key alone leaves each key's pairs in
    event order: a pair repeats when the pair before it in that order has its key and its event. The keys fit in
    16 bits unless a block names more than 65,536 ids (numpy sorts those by radix: a fifth of a 64-bit sort's time).
    """
    if keys.size == 0:
        return None
    order = np.argsort(keys.astype(np.uint16) if distinct <= 1 << 16 else keys, kind="stable")
    ordered, their_rows = keys[order], rows[order]
    again = (ordered[1:] == ordered[:-1]) & (their_rows[1:] == their_rows[:-1])
    if not again.any():
        return None
    repeats = np.zeros(keys.size, dtype=bool)
    repeats[order[1:][again]] = True
    return repeats


@dataclass(slots=True)
class Tally:
    """Per group (a memory, or what ``group_of`` maps it to), in first-touched order: how many selected
    pairs name it, and the event of the latest of their times (or, with ``latest="seq"``, the last event).
    A group no selected pair names has count 0; with no pair selected at all, there are no groups."""

    groups: list
    counts: list[int]
    latest: list[int]
    selected: np.ndarray  # the selected pairs' indices (for :func:`times_of`)
    group_index: np.ndarray  # per pair: its group's index (-1 for none)


def tally(block: TouchBlock, *, reasons: Callable[[str], bool] | None = None,
          member: Collection | None = None, group_of: Callable[[str], object] | None = None,
          once_per_event: bool = True, latest: str = "time") -> Tally:
    """Count the block's pairs by group.

    ``reasons`` keeps the events whose reason it accepts; ``member`` the ids it holds; ``group_of`` maps an id
    to its group (None: not counted), else the group is the id. ``once_per_event`` counts a group once per
    event however many of its ids name it (``dict.fromkeys`` over the event's list, as the folds do).
    """
    p = pairs(block)
    accepted = None
    if reasons is not None:
        accepted = np.asarray([bool(reasons(r)) for r in p.reasons], dtype=bool)  # once per distinct reason
        if not accepted.any():  # nothing selected: no group to count (the callers read counted groups only)
            return Tally([], [], [], np.empty(0, dtype=np.int64), np.full(p.codes.size, -1, dtype=np.int64))
    if group_of is None and member is None:
        groups, index_of = list(p.names), np.arange(len(p.names), dtype=np.int64)
    elif group_of is None:
        keep = np.fromiter(map(member.__contains__, p.names), dtype=bool, count=len(p.names))  # a C loop
        groups = list(compress(p.names, keep.tolist()))
        index_of = np.cumsum(keep, dtype=np.int64) - 1
        index_of[~keep] = -1
    else:
        seen: dict = {}
        mapped = map(group_of, p.names) if member is None else (
            group_of(name) if name in member else None for name in p.names)
        index_of = np.fromiter((-1 if group is None else seen.setdefault(group, len(seen)) for group in mapped),
                               dtype=np.int64, count=len(p.names))
        groups = list(seen)
    g = index_of[p.codes] if p.codes.size else p.codes
    sel = g >= 0
    if accepted is not None and not accepted.all():
        sel &= accepted[p.reason_of][p.rows]
    if once_per_event:
        if group_of is not None:
            sel = _first_per_event(p.rows, g, sel, len(groups))
        elif p.repeats is not None:
            sel &= ~p.repeats
    selected = np.flatnonzero(sel)
    gs = g[selected]
    counts = np.bincount(gs, minlength=len(groups))
    last = np.full(len(groups), -1, dtype=np.int64)
    if latest == "time":
        np.maximum.at(last, gs, p.rank[p.rows[selected]])
        last = np.where(last >= 0, p.by_rank[np.maximum(last, 0)], -1)
    else:
        np.maximum.at(last, gs, p.rows[selected])
    return Tally(groups, counts.tolist(), last.tolist(), selected, g)


def reason_counts(block: TouchBlock, t: Tally) -> list[tuple[str, int, int]]:
    """``(reason, group index, count)`` of the selected pairs of ``t``, for each reason (first-seen order) and each
    group of ``t`` with a pair of that reason (groups in order): one count over (reason, group) for what a tally
    per reason would give."""
    p = pairs(block)
    groups, kinds = len(t.groups), len(p.reasons)
    if not groups or not t.selected.size:
        return []
    key = p.reason_of[p.rows[t.selected]] * groups + t.group_index[t.selected]
    counts = np.bincount(key, minlength=kinds * groups)
    where = np.flatnonzero(counts)
    reasons = p.reasons
    return [(reasons[k // groups], k % groups, c) for k, c in zip(where.tolist(), counts[where].tolist())]


_FLAT_CELLS = 1 << 22  # (event, group) cells of a block counted in one array (32 MB at most) rather than sorted


def _first_per_event(rows: np.ndarray, g: np.ndarray, sel: np.ndarray, groups: int) -> np.ndarray:
    """``sel`` keeping, in each event, only the first selected pair of each group."""
    idx = np.flatnonzero(sel)
    if idx.size and groups * (int(rows[-1]) + 1) <= _FLAT_CELLS:  # few (event, group) cells: no sort needed
        cell = rows[idx] * groups + g[idx]
        first = np.full(groups * (int(rows[-1]) + 1), idx.size, dtype=np.int64)
        np.minimum.at(first, cell, np.arange(idx.size, dtype=np.int64))  # each cell's first selected pair
        again = first[cell] != np.arange(idx.size, dtype=np.int64)
        if again.any():
            sel = sel.copy()
            sel[idx[again]] = False
        return sel
    again = _repeats(rows[idx], g[idx], groups)
    if again is not None:
        sel = sel.copy()
        sel[idx[again]] = False
    return sel


def times_of(block: TouchBlock, t: Tally) -> list[list]:
    """Per group of ``t``, the times of its selected pairs in time order (equal times in seq order)."""
    p = pairs(block)
    gs = t.group_index[t.selected]
    ranks = p.rank[p.rows[t.selected]]
    order = _by_group_then_rank(gs, ranks, len(t.groups), block.events)
    ordered = p.timeline[ranks[order]].tolist()
    out, start = [], 0
    for end in np.cumsum(t.counts, dtype=np.int64).tolist():
        out.append(ordered[start:end])
        start = end
    return out


def add_bursts(pending: dict, block: TouchBlock, counted: Tally) -> None:
    """:func:`~projections.folds.touches.count_burst` of each touch of ``block`` at once: each counted group gains
    its count of visits, its latest time the max (``pending`` maps a group to ``[visits, latest time]``)."""
    times = block.times
    for key, count, last in zip(counted.groups, counted.counts, counted.latest, strict=True):
        if count:
            at = times[last]
            entry = pending.get(key)
            if entry is None:
                pending[key] = [count, at]
            else:
                entry[0] += count
                if at > entry[1]:
                    entry[1] = at


def _by_group_then_rank(gs: np.ndarray, ranks: np.ndarray, groups: int, events: int) -> np.ndarray:
    """The stable order of pairs by group, then by rank. Pairs usually come in rank order already (touches are
    recorded in time order): then a stable sort by group alone gives it, on 16-bit keys when the groups fit
    (numpy's radix sort: a fifth of a 64-bit sort's time on a replay's million pairs)."""
    if ranks.size < 2 or bool((ranks[1:] >= ranks[:-1]).all()):
        return np.argsort(gs.astype(np.uint16) if groups <= 1 << 16 else gs, kind="stable")
    return np.argsort(gs * max(events, 1) + ranks, kind="stable")

