"""The active notes a decider compares a new note with, indexed so a candidate meets only the notes it can relate to.

:func:`projections.rules.contradiction.detect` judges a candidate against
every note of its pool, and almost every pair ends as "no rule relates them":
the rules need a shared term (or Chinese containment), a common slot, states
on both sides, or a switch. Comparing each new note with all of a user's
notes makes ingest slow down as the notes pile up (on the LoCoMo dev file a
candidate met 75 notes on average, and 1 or 2 of them mattered).

:class:`NotePool` keeps postings (term → notes; slot → notes; the notes with
states; character bigram of a Chinese term → notes, since one Chinese term
inside another shares its bigrams) and judges only the notes a candidate
can reach (every note when the candidate is a switch). :meth:`NotePool.actionable`
returns exactly the verdicts of ``detect`` over the comparable pool whose
relation is not CONSISTENT, in pool order: ``tests/unit/test_note_pool.py``
checks that against the full scan on the dev dialogues, English and Chinese.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from projections.rules.contradiction import (
    ActiveNote,
    Reach,
    Verdict,
    actionable,
    detect,
    reach_of_candidate,
    reach_of_note,
)
from projections.rules.extraction import CandidateNote


class NotePool:
    """Active notes in insertion order (the order ``detect`` sees them), with postings over what relates them."""

    def __init__(self, notes: Iterable[ActiveNote], comparable: Callable[[CandidateNote, ActiveNote], bool]) -> None:
        self._comparable = comparable
        self.notes: dict[str, ActiveNote] = {}
        self._order: dict[str, int] = {}
        self._reach: dict[str, Reach] = {}
        self._by_term: dict[str, set[str]] = {}
        self._by_slot: dict[str, set[str]] = {}
        self._with_states: set[str] = set()
        self._by_gram: dict[str, set[str]] = {}  # bigram of a Chinese term (containment) → notes
        self._by_text: dict[tuple[str, str], set[str]] = {}
        self._next = 0
        self._journal: list[tuple] | None = None  # what changed since :meth:`mark` (None: not recorded)
        self._marked_next = 0
        for note in notes:
            self.add(note)

    def mark(self) -> None:
        """Record what changes from here on, so that :meth:`rollback` can undo it."""
        self._journal, self._marked_next = [], self._next

    def rollback(self) -> None:
        """Undo every :meth:`add` and :meth:`remove` since :meth:`mark`: the pool is again what it was, in the same
        order, and stops recording."""
        journal, self._journal = self._journal or [], None
        put_back = False
        for change in reversed(journal):
            if change[0] == "add":
                self.remove(change[1])
            else:
                self.add(change[1], order=change[2])
                put_back = True
        self._next = self._marked_next
        if put_back:  # a note put back went last in the dict: back to the order the notes were added in
            self.notes = dict(sorted(self.notes.items(), key=lambda item: self._order[item[0]]))

    def add(self, note: ActiveNote, order: int | None = None) -> None:
        """Add ``note`` (a new note id) last (``order``: at that place in the order, for :meth:`rollback`)."""
        if self._journal is not None:
            self._journal.append(("add", note.note_id))
        if order is None:
            order, self._next = self._next, self._next + 1
        self._order[note.note_id] = order
        self.notes[note.note_id] = note
        self._by_text.setdefault((note.text, note.subject), set()).add(note.note_id)
        reach = self._reach[note.note_id] = reach_of_note(note)
        for term in reach.terms:
            self._by_term.setdefault(term, set()).add(note.note_id)
        if reach.slot:
            self._by_slot.setdefault(reach.slot, set()).add(note.note_id)
        if reach.states:
            self._with_states.add(note.note_id)
        for gram in reach.grams:
            self._by_gram.setdefault(gram, set()).add(note.note_id)

    def remove(self, note_id: str) -> None:
        note = self.notes[note_id]
        if self._journal is not None:
            self._journal.append(("remove", note, self._order[note_id]))
        reach = self._reach.pop(note_id)
        self._by_text[note.text, note.subject].discard(note_id)
        for term in reach.terms:
            self._by_term[term].discard(note_id)
        if reach.slot:
            self._by_slot[reach.slot].discard(note_id)
        self._with_states.discard(note_id)
        for gram in reach.grams:
            self._by_gram[gram].discard(note_id)
        del self.notes[note_id]
        del self._order[note_id]

    def pool(self, candidate: CandidateNote) -> list[ActiveNote]:
        """Every comparable note, in order: what ``detect`` would be given."""
        return [n for n in self.notes.values() if self._comparable(candidate, n)]

    def _reachable(self, candidate: CandidateNote) -> Iterable[str]:
        reach = reach_of_candidate(candidate)
        if reach.switch:
            return self.notes
        ids: set[str] = set()
        for term in reach.terms:
            ids |= self._by_term.get(term, set())
        if reach.slot:
            ids |= self._by_slot.get(reach.slot, set())
        if reach.states:
            ids |= self._with_states
        for gram in reach.grams:  # a Chinese term inside another shares its bigrams with it (term_match.index)
            ids |= self._by_gram.get(gram, set())
        return sorted(ids, key=self._order.__getitem__)

    def actionable(self, candidate: CandidateNote) -> list[Verdict]:
        """``[v for v in detect(candidate, self.pool(candidate)) if v.relation is not CONSISTENT]``, judged only
        where a rule can fire."""
        notes = [self.notes[i] for i in self._reachable(candidate)]
        return actionable(candidate, [n for n in notes if self._comparable(candidate, n)])

    def identical(self, candidate: CandidateNote) -> list[Verdict]:
        """The verdicts of the comparable notes with the candidate's very text and subject, in order."""
        ids = sorted(self._by_text.get((candidate.text, candidate.subject), ()), key=self._order.__getitem__)
        return list(detect(candidate, [n for n in map(self.notes.__getitem__, ids) if self._comparable(candidate, n)]))

    def has_pool(self, candidate: CandidateNote) -> bool:
        """Whether ``detect`` would be given any note at all."""
        return any(self._comparable(candidate, n) for n in self.notes.values())
