"""Which turns a later statement superseded, read from the notes (a pure function of the note state and a time).

Two records say so. A turn a later turn left behind (``message_superseded``, :attr:`NoteState.turns`) is
superseded from that turn's time on, by it (or by the turn that in turn left that one behind, by ``at``). And a
note closed by an ``update`` (status ``superseded``, :mod:`projections.folds.notes`) was replaced by a later
version. The turns it was read from are **superseded** at a time ``at`` when the note was closed by then and no
note read from them is still in force at ``at`` (a turn that also states something still true is not). Each gets
the version in force at ``at`` (following the chain of versions), the turns that version was read from, and a
label for people: ``superseded by "…" on YYYY-MM-DD``. With ``at`` before the change, nothing is superseded yet:
time travel sees the history as it stood.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from projections.folds.notes import Note, NoteState


@dataclass(frozen=True, slots=True)
class Supersession:
    """Why a turn is no longer current: the note read from it, the version in force, and when it changed."""

    memory_id: str
    note_id: str  # the closed version read from the turn
    current_note_id: str  # the version in force at the time asked (the last one, when the chain ended)
    current_text: str
    current_sources: tuple[str, ...]  # the turns the version in force was read from (without this one)
    at: datetime  # when the turn's note was superseded

    @property
    def label(self) -> str:
        return f'superseded by "{self.current_text}" on {self.at.date().isoformat()}'


def _in_force(notes: NoteState, note: Note, at: datetime | None, known: dict[str, Note] | None = None) -> Note:
    """The version of ``note``'s chain in force at ``at`` (now, when None), after ``note``; the last version when
    none is. ``known`` (note id → its answer) remembers the answers of the versions walked through: a chain of
    many versions is walked once, not once per version."""
    start, walked, seen = note, [], {note.note_id}
    while note.superseded_by in notes.notes and note.superseded_by not in seen:
        if known is not None and note.note_id in known and note is not start:
            note = known[note.note_id]
            break
        walked.append(note)
        note = notes.notes[note.superseded_by]
        seen.add(note.note_id)
        if note.valid_at(at) if at is not None else note.status == "active":
            break
    if known is not None:  # every version walked before the answer has the same answer
        known.update((w.note_id, note) for w in walked)
        known[start.note_id] = note
    return note


def _turn_label(text: str) -> str:
    return text if len(text) <= 80 else text[:77].rstrip() + "…"


def superseded_turns(notes: NoteState, at: datetime | None = None, texts: dict | None = None) -> dict[str, Supersession]:
    """memory id → its supersession at ``at`` (now, when None), for every superseded turn; the latest change wins,
    a note's over a turn's. ``texts``: memory id → a stored message (its text labels a turn-level supersession).

    Read only: the answer is kept with the note state (:meth:`NoteState.derived`) for every ``at`` of the same
    stretch of time (:meth:`NoteState.moment`), so a search reads it without walking the user's history."""
    return notes.kept(("superseded_turns", notes.moment(at), id(texts)), lambda: _superseded_turns(notes, at, texts))


def _superseded_turns(notes: NoteState, at: datetime | None, texts: dict | None) -> dict[str, Supersession]:
    out: dict[str, Supersession] = {}
    for change in sorted(notes.turns.values(), key=lambda t: t.seq):
        if at is None or change.at <= at:
            by, seen = change.by, {change.memory_id}
            while by in notes.turns and by not in seen and (at is None or notes.turns[by].at <= at):
                seen.add(by)
                by = notes.turns[by].by
            text = texts[by].text if texts and by in texts else by
            out[change.memory_id] = Supersession(change.memory_id, "", "", _turn_label(text), (by,), change.at)
    closed = [n for n in notes.notes.values() if n.status == "superseded" and n.valid_to is not None
              and (at is None or n.valid_to <= at)]
    if not closed:
        return out
    current = {m for n in notes.active(at) for m in n.source_message_ids}
    known: dict[str, Note] = {}
    for note in sorted(closed, key=lambda n: (n.valid_to, n.seq)):
        sources = [m for m in note.source_message_ids if m not in current]
        if not sources:
            continue
        latest = _in_force(notes, note, at, known)
        for memory_id in sources:
            out[memory_id] = Supersession(memory_id, note.note_id, latest.note_id, latest.text,
                                          tuple(m for m in latest.source_message_ids if m != memory_id), note.valid_to)
    return out
