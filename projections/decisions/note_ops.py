"""The offline memory-operation decider (``rules-v1``): messages in, note operations out.

Seed 002's KnowledgeMonitor (ADD / UPDATE / BOOST / DELETE / SKIP) without a
language model: each user message is read by the note extractor
(:func:`projections.rules.extraction.extract_notes`), and each candidate note is
judged against the active notes by the rule contradiction detector
(:func:`projections.rules.contradiction.detect`). The verdicts decide:

- SUPERSEDES → ``update`` of the superseded note (a new version, the old one
  closed). When several notes are superseded, the first is updated and the
  others are closed by ``delete`` with a reason naming the new note.
- REINFORCES, or a note with the very same text and subject → ``boost`` of
  the restated note, never a duplicate ``add``. A
  restatement from a message the note already came from is merged instead:
  ``skip`` with a reason (seed 003 §7: same source → merge).
- CHANGE_OVER_TIME, CONSISTENT → ``add``: a state that changed over time
  ("tense" then "relaxed") keeps both notes, each true at its own time. The
  operation's ``relation`` is None when there was no note to compare with.

Only ``user`` messages state facts; the message's speaker (else ``"user"``)
is the subject. Notes about different subjects are not compared, except
decisions and constraints, which are about the shared project. The message
before each one (of any role) resolves "let's go with that". Operations
decided earlier in the batch count as applied for the later messages, so a
batch decides what message-by-message calls would.

Pure and deterministic apart from ``new_id``, which names each operation.
The caller passes messages not decided yet (a message's notes are found with
:meth:`projections.folds.notes.NoteState.by_source`); a message decided again is
merged into the active notes it stated (``skip``), but one whose notes were
superseded since would be stated anew.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from events.model import MessageRecorded, NoteContent, NoteOperation
from projections.decisions.kept_pools import Held, pool_for
from projections.folds.notes import Note
from projections.rules.contradiction import ActiveNote, Relation, Verdict
from projections.rules.event_notes import event_notes
from projections.rules.extraction import CandidateNote, extract_notes
from projections.rules.graph_extract import CandidateGraphMemory
from projections.rules.note_pool import NotePool

DECIDER_ID = "rules-v1"
SHARED_CATEGORIES = ("decision", "constraint")  # about the project, whoever said them


def _comparable(candidate: CandidateNote, note: ActiveNote) -> bool:
    return (candidate.subject == note.subject or candidate.category in SHARED_CATEGORIES
            or note.category in SHARED_CATEGORIES)


def _content(candidate: CandidateNote) -> NoteContent:
    return NoteContent(
        category=candidate.category, text=candidate.text, subject=candidate.subject, key_terms=candidate.key_terms,
        polarity=candidate.polarity, slot=candidate.slot, value=candidate.value, confidence=candidate.confidence,
        language=candidate.language,
    )


def _identical(candidate: CandidateNote, pool: NotePool) -> list[Verdict]:
    """Notes with the candidate's very text and subject, as reinforcements.

    "My mood is relaxed now", twice: the detector reads a change over time
    (a time word), but it is the same note again.
    """
    return [replace(v, relation=Relation.REINFORCES, rule="identical", reason="the same statement again")
            for v in pool.identical(candidate)]


def _decide_one(
    candidate: CandidateNote,
    message_id: str,
    message: MessageRecorded,
    held: dict[str, Held],
    pool: NotePool,
    new_id: Callable[[], str],
) -> list[tuple[str, NoteOperation]]:
    """The operations for one candidate; ``held`` (note id → active note) and ``pool`` are updated to match them."""
    verdicts = pool.actionable(candidate)  # detect() over the comparable notes, less the CONSISTENT verdicts
    common = {"source_message_ids": (message_id,), "valid_from": message.occurred_at, "decider": DECIDER_ID}
    superseded = [v for v in verdicts if v.relation is Relation.SUPERSEDES]
    reinforced = [v for v in verdicts if v.relation is Relation.REINFORCES] or _identical(candidate, pool)
    new = repr(candidate.text)

    def old(v: Verdict) -> str:
        return repr(held[v.note_id].note.text)

    if superseded:
        first, *others = superseded
        op_id = new_id()
        ops = [(op_id, NoteOperation(
            op="update", target_note_id=first.note_id, note=_content(candidate), relation=first.relation.value,
            reason=f"{first.rule}: {new} supersedes note {old(first)} ({first.reason})", **common))]
        ops += [(new_id(), NoteOperation(
            op="delete", target_note_id=v.note_id, relation=v.relation.value,
            reason=f"{v.rule}: note {old(v)} is superseded by new note {op_id} {new} ({v.reason})", **common))
            for v in others]
        for v in superseded:
            del held[v.note_id]
            pool.remove(v.note_id)
        held[op_id] = Held(ActiveNote.from_candidate(op_id, candidate), (message_id,))
        pool.add(held[op_id].note)
        return ops
    if reinforced:
        best = max(reinforced, key=lambda v: v.confidence)  # max keeps the first of equals: the oldest note
        target = held[best.note_id]
        if message_id in target.sources:
            return [(new_id(), NoteOperation(
                op="skip", target_note_id=best.note_id, relation=best.relation.value,
                reason=f"merge: {new} restates note {old(best)} from the same source message {message_id}",
                **common))]
        held[best.note_id] = Held(target.note, (*target.sources, message_id))
        return [(new_id(), NoteOperation(
            op="boost", target_note_id=best.note_id, relation=best.relation.value,
            reason=f"{best.rule}: {new} restates note {old(best)} ({best.reason})", **common))]
    changed = [v for v in verdicts if v.relation is Relation.CHANGE_OVER_TIME]
    if changed:
        relation, reason = Relation.CHANGE_OVER_TIME.value, (
            f"{changed[0].rule}: {new} kept alongside note {old(changed[0])} ({changed[0].reason})")
    else:
        relation, reason = (Relation.CONSISTENT.value if pool.has_pool(candidate) else None), f"new note: {new}"
    op_id = new_id()
    held[op_id] = Held(ActiveNote.from_candidate(op_id, candidate), (message_id,))
    pool.add(held[op_id].note)
    return [(op_id, NoteOperation(op="add", note=_content(candidate), relation=relation, reason=reason, **common))]


def decide_note_operations(
    active: Sequence[Note],
    messages: Sequence[tuple[str, MessageRecorded]],
    new_id: Callable[[], str],
    *,
    previous_text: str | None = None,
    readings: Mapping[str, Sequence[CandidateGraphMemory]] | None = None,
    kept_for: object | None = None,
) -> list[tuple[str, NoteOperation]]:
    """(event id, operation) pairs for ``messages`` (event id, message) in order, given the active notes.

    ``previous_text`` is the message before the first one (for "let's go
    with that"). ``readings`` (message event id → the offline graph rules'
    reading of it, when the caller made one) saves reading a message again for
    its event notes. ``kept_for`` (the user's note state, which ``active``
    comes from) keeps the indexed pool of the active notes between calls
    (:mod:`projections.decisions.kept_pools`): the same decisions, without
    indexing every note again. Every operation names its source message, is
    dated at the message's time and says why it was decided.
    """
    ops: list[tuple[str, NoteOperation]] = []
    previous = previous_text
    with pool_for(active, _comparable, kept_for) as (held, pool):
        for message_id, message in messages:
            if message.role == "user":
                candidates = extract_notes(message.text, speaker=message.speaker, previous=previous) or event_notes(
                    message.text, speaker=message.speaker, occurred_at=message.occurred_at,
                    reading=readings.get(message_id) if readings else None)
                for candidate in candidates:
                    ops += _decide_one(candidate, message_id, message, held, pool, new_id)
            previous = message.text
    return ops
