"""The decider's view of a user's active notes, kept between decisions and brought up to date, not rebuilt.

Each ingest decides its messages' notes against the user's active notes
(:func:`projections.decisions.note_ops.decide_note_operations`), through a
:class:`~projections.rules.note_pool.NotePool` indexed over all of them.
Built anew for every call, that pool costs time in proportion to the notes the
user holds, about 10 µs a note here: a user of some months with thousands of
notes would pay tens of milliseconds for each message. Kept per user instead
(:func:`pool_for`), it is brought up to date with the notes that changed since
the last call (new notes come last in log order; closed ones leave), and what
a call adds or removes while it decides is undone after it (the log and its
fold are the truth: a batch's notes enter the pool once they are folded).

A kept pool is the pool a new build would give: the same notes in the same
order with the same postings. When the active notes changed otherwise than by
notes leaving and new ones coming last, the changed part is rebuilt (and the
whole pool when nothing before it stayed).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from operator import is_

from projections.folds.notes import Note
from projections.rules.contradiction import ActiveNote
from projections.rules.extraction import CandidateNote
from projections.rules.note_pool import NotePool

MAX_KEPT = 32  # users whose pools a process keeps, the most recently used (a pool of 300 notes holds about 1.3 MB)


@dataclass(frozen=True, slots=True)
class Held:
    """An active note as the decider sees it while a batch goes on."""

    note: ActiveNote
    sources: tuple[str, ...]


def held_of(note: Note) -> Held:
    return Held(
        ActiveNote(note.note_id, note.text, note.category, note.key_terms, note.polarity, note.slot, note.value,
                   note.subject),
        note.source_message_ids,
    )


@dataclass
class _Kept:
    notes: list[Note]  # the notes the pool holds, in its order
    held: dict[str, Held]
    pool: NotePool
    comparable: Callable[[CandidateNote, ActiveNote], bool]
    lock: threading.Lock = field(default_factory=threading.Lock)


# id(owner) -> (a weak reference to the owner, its kept pool); least recently used first
_KEPT: dict[int, tuple[weakref.ref, _Kept]] = {}
_KEPT_LOCK = threading.Lock()
# The keys of owners gone, dropped from _KEPT at the next call. A weak reference's callback runs wherever the
# collector happens to run, even inside _KEPT_LOCK: it only appends here, it takes no lock.
_GONE: list[int] = []


@contextmanager
def pool_for(active: Sequence[Note], comparable: Callable[[CandidateNote, ActiveNote], bool],
             owner: object | None = None) -> Iterator[tuple[dict[str, Held], NotePool]]:
    """``(held, pool)`` over the ``active`` notes (those with status active, in order) for one decision: ``held``
    (note id → :class:`Held`) and ``pool`` are the decider's to change; neither outlives the block.

    With ``owner`` (the user's :class:`~projections.folds.notes.NoteState`) the pool is kept for the next call
    while the owner lives; the block then runs alone on it (a second call at once builds a pool of its own)."""
    active = [n for n in active if n.status == "active"]
    kept = _kept(owner, active, comparable) if owner is not None else None
    if kept is None or not kept.lock.acquire(blocking=False):
        held = {n.note_id: held_of(n) for n in active}
        yield held, NotePool((h.note for h in held.values()), comparable)
        return
    try:
        _bring_up_to_date(kept, active)
        kept.pool.mark()
        try:
            yield dict(kept.held), kept.pool
        finally:
            kept.pool.rollback()
    finally:
        kept.lock.release()


def forget_all() -> None:
    """Drop every kept pool (they hold note texts: a forgotten user's must not stay in memory)."""
    with _KEPT_LOCK:
        _KEPT.clear()


def _kept(owner: object, active: list[Note], comparable) -> _Kept:
    key = id(owner)
    with _KEPT_LOCK:
        while _GONE:
            _KEPT.pop(_GONE.pop(), None)
        entry = _KEPT.pop(key, None)
        if entry is None or entry[0]() is not owner or entry[1].comparable is not comparable:
            held = {n.note_id: held_of(n) for n in active}
            pool = NotePool((h.note for h in held.values()), comparable)
            entry = (weakref.ref(owner, lambda _: _GONE.append(key)), _Kept(list(active), held, pool, comparable))
        _KEPT[key] = entry  # last: the most recently used
        while len(_KEPT) > MAX_KEPT:
            del _KEPT[next(iter(_KEPT))]
        return entry[1]


def _bring_up_to_date(kept: _Kept, active: list[Note]) -> None:
    """Make ``kept`` hold ``active``: the notes that keep their place and their content stay (their sources are
    refreshed), the others leave, and the rest of ``active`` comes after them, in order."""
    old = kept.notes
    if len(old) <= len(active) and all(map(is_, old, active)):  # the same notes, and maybe new ones after them
        stay = len(old)
    else:
        position = {n.note_id: i for i, n in enumerate(old)}
        stay, last = 0, -1
        for note in active:  # the longest start of ``active`` that is ``old`` less some notes, each note unchanged
            p = position.get(note.note_id)
            if p is None or p < last or (old[p] is not note and held_of(note).note != kept.held[note.note_id].note):
                break
            last, stay = p, stay + 1
        staying = {n.note_id for n in active[:stay]}
        for note in old:
            if note.note_id not in staying:
                kept.pool.remove(note.note_id)
                del kept.held[note.note_id]
        for note in active[:stay]:
            if old[position[note.note_id]] is not note:
                kept.held[note.note_id] = held_of(note)
    for note in active[stay:]:
        held = kept.held[note.note_id] = held_of(note)
        kept.pool.add(held.note)
    kept.notes = list(active)
