"""The offline note reviewer (``rules-v1``): seed 002's MemoryReviewer without a language model.

For every active note, at a given ``now`` and :class:`~projections.folds.notes.NotePolicy`:

- Promotion review, when a ``fact`` note's importance reaches 2.5. Stable
  things become ``core`` (never decay): preferences, constraints, decisions
  and one-line facts with a slot (name, birthday, residence, ...). Transient
  states and moods ("tired", "紧张", anything dated "today") and open facts
  without a slot are kept as they are.
- Retraction review, when a decaying note's importance falls below 0.5.
  A note nothing ever reinforced is deleted (retracted: valid-to set, nothing
  removed from the log), unless it is a constraint or says who the user is
  (name, birthday), which forgetting would hurt; otherwise it is kept and
  its importance restarts at 0.5.

Idempotent: a promotion review is due again only after further
reinforcement (a new crossing), a kept retraction review puts importance
back at the threshold, and promoted or deleted notes leave the candidates; so
reviewing right after applying the decisions yields nothing.
"""

from __future__ import annotations

from datetime import datetime

from events.model import NoteReviewed
from projections.folds.notes import DEFAULT_NOTE_POLICY, Note, NotePolicy, NoteState, importance
from projections.rules.contradiction import state_words
from projections.rules.note_rules import TIME
from projections.rules.text import has_cjk, tokenize

REVIEWER_ID = "rules-v1"
STABLE_SLOTS = ("name", "birthday", "residence", "employer", "occupation", "origin", "age", "identity")
STABLE_SLOT_PREFIXES = ("favourite:",)
KEEP_UNREINFORCED_SLOTS = ("name", "birthday")  # who the user is: never forgotten for lack of use
DECAYING = ("fact", "episode")


def transient(note: Note) -> str | None:
    """The state or time word that makes ``note`` transient ("tired", "紧张", "today"), else None."""
    for token in (*tokenize(note.text), *note.key_terms):
        for state in state_words():
            if token == state or (has_cjk(state) and len(state) > 1 and state in token):
                return state
    match = TIME.search(note.text)
    return match.group(0) if match else None


def _stable(note: Note) -> str | None:
    """Why ``note`` is a long-lived fact worth promoting, else None."""
    if note.category in ("preference", "constraint", "decision"):
        return f"a {note.category}"
    if note.slot and (note.slot in STABLE_SLOTS or note.slot.startswith(STABLE_SLOT_PREFIXES)):
        return f"a one-valued fact ({note.slot})"
    return None


def _promotion(note: Note, value: float, now: datetime) -> NoteReviewed:
    if word := transient(note):
        decision, reason = "keep", f"a transient state ({word!r}): true for a while, not a core fact"
    elif why := _stable(note):
        decision, reason = "promote", f"{why}, reinforced {note.reinforcements} time(s): stable, becomes core"
    else:
        decision, reason = "keep", "an open statement, not known to be stable"
    return NoteReviewed(note_id=note.note_id, trigger="promotion", importance=value, decision=decision,
                        reason=f"importance {value:.3f} ≥ promotion threshold: {reason}", reviewer=REVIEWER_ID, at=now)


def _retraction(note: Note, value: float, now: datetime) -> NoteReviewed:
    if note.reinforcements:
        decision, reason = "keep", f"reinforced {note.reinforcements} time(s): still of use, importance reset"
    elif note.category == "constraint" or note.slot in KEEP_UNREINFORCED_SLOTS:
        decision, reason = "keep", f"a {note.slot or note.category} the agent must not forget, importance reset"
    else:
        idle = (now - note.valid_from).days
        decision, reason = "delete", f"never reinforced in {idle} day(s): weak and old"
    return NoteReviewed(note_id=note.note_id, trigger="retraction", importance=value, decision=decision,
                        reason=f"importance {value:.3f} < retraction threshold: {reason}", reviewer=REVIEWER_ID, at=now)


def review_notes(state: NoteState, now: datetime, policy: NotePolicy = DEFAULT_NOTE_POLICY) -> list[NoteReviewed]:
    """The reviews due at ``now``, one per note at most, in log order; empty when none is due."""
    reviews = []
    for note in state.active():
        if note.valid_from > now:
            continue  # stated after "now": not yet known
        value = importance(note, now, policy)
        if (note.lifecycle == "fact" and value >= policy.promotion_threshold
                and note.promotion_mark != note.reinforcements):
            reviews.append(_promotion(note, value, now))
        elif note.lifecycle in DECAYING and value < policy.retraction_threshold:
            reviews.append(_retraction(note, value, now))
    return reviews
