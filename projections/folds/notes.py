"""Notes projection: the user's semantic notes, their versions and their importance.

A pure fold over ``note_operation``, ``note_reviewed`` and ``memory_touched``
events (no clock, no I/O, no randomness); "now" is a parameter of the
queries. How each event changes the notes:

- ``add`` creates a note, version 1, whose id is the operation's event id.
- ``update`` creates the next version (id = the operation's event id,
  ``supersedes`` = the target) and closes the target: ``valid_to`` = the
  operation's ``valid_from``, ``superseded_by`` = the new id, status
  ``superseded``. Nothing is removed, so :meth:`NoteState.history` and
  :meth:`NoteState.active` at an earlier time still see the old version.
- ``boost`` reinforces the target (``boosts`` + 1, ``last_reinforced``) and
  adds its source messages to the note's sources.
- ``delete`` retracts the target (``valid_to`` set, status ``retracted``).
- ``skip`` changes nothing; it only records a considered candidate.
- A review: ``promote`` makes the note ``core``; ``delete`` retracts it at
  the review's time; ``keep`` on a promotion review marks the crossing as
  reviewed, ``keep`` on a retraction review restarts importance at 0.5
  (seed 002 MemoryReviewer).
- A touch with reason ``used`` naming a note counts one use (once per touch
  event) and reinforces the note at the touch's time.
- ``message_superseded`` records that earlier turns were left behind by a new
  one (:attr:`NoteState.turns`: turn id → the first such record; a later one
  for the same turn changes nothing).

Operations whose target is unknown, or already closed, change nothing: the
fold never crashes on a log written by another decider.

Importance (seed 002 KnowledgeMonitor / MemoryManager), computed by
:func:`importance` from the note and a :class:`NotePolicy`: a note starts at
1.0; every boost or use adds 0.3 to its value at that moment; a ``fact`` note
left idle (no reinforcement) is multiplied by 0.95 for each full 7 days idle
(none in the first 7 days); ``core`` and ``system`` notes, and constraints, never decay. The
reinforcement times are kept in the note, so re-reading the same state under
another policy needs no new fold.
"""

from __future__ import annotations

import bisect
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from operator import attrgetter, is_
from typing import Literal

from events.envelope import Envelope
from events.model import MemoryTouched, MessageSuperseded, NoteContent, NoteOperation, NoteReviewed
from events.touch_block import TouchBlock
from projections.folds.lexical import BM25Params, LexicalIndex
from projections.rules.note_words import about_words

SECONDS_PER_DAY = 86_400.0
DEFAULT_BM25 = BM25Params()
NoteStatus = Literal["active", "superseded", "retracted"]


@dataclass(frozen=True, slots=True)
class Note:
    """One version of a note; a new version is a new note linked by ``supersedes`` / ``superseded_by``."""

    note_id: str  # the event id of the add/update operation that created this version
    category: str
    text: str
    subject: str
    key_terms: tuple[str, ...]
    polarity: str
    slot: str | None
    value: str | None
    confidence: float
    language: str
    lifecycle: str  # "fact" until a promotion review makes it "core"
    source_message_ids: tuple[str, ...]
    valid_from: datetime
    valid_to: datetime | None  # None while active
    version: int
    supersedes: str | None
    superseded_by: str | None
    status: NoteStatus
    boosts: int
    uses: int
    last_reinforced: datetime | None
    seq: int
    decider: str
    reason: str
    reinforced_at: tuple[datetime, ...] = ()  # every boost and use, in log order (importance reads them)
    importance_reset_at: datetime | None = None  # the last "keep" of a retraction review
    reset_mark: int = 0  # how many of ``reinforced_at`` came before that reset (they no longer count)
    promotion_mark: int | None = None  # reinforcements counted at the last promotion review

    @property
    def reinforcements(self) -> int:
        return self.boosts + self.uses

    def valid_at(self, at: datetime) -> bool:
        return self.valid_from <= at and (self.valid_to is None or self.valid_to > at)


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


@dataclass(frozen=True, slots=True)
class TurnChange:
    """A turn a later turn left behind (``message_superseded``)."""

    memory_id: str
    by: str  # the turn that left it behind
    at: datetime
    reason: str
    seq: int


_SEQ = attrgetter("seq")
DERIVED_KEPT = 64  # values a note state keeps of what is derived from it (NoteState.kept)
# Derived (never folded or saved): id(NoteState) -> [its weak reference, the notes it held, them in log order,
# message id -> the notes stated or reinforced by it (built when first asked for), the turn changes it held, a dict
# for what other modules derive from them]; made again when any note or turn change is not the very same object.
_ORDERED: dict[int, list] = {}


@dataclass
class NoteState:
    """Every note version of one user by id, and a BM25 index over all of them."""

    notes: dict[str, Note] = field(default_factory=dict)
    index: LexicalIndex = field(default_factory=LexicalIndex)
    turns: dict[str, TurnChange] = field(default_factory=dict)  # turn id → the turn that left it behind

    def _derived(self) -> list:
        """This state's entry of :data:`_ORDERED`, made again when any note or turn change changed since."""
        notes, turns = list(self.notes.values()), list(self.turns.values())
        cached = _ORDERED.get(id(self))
        if (cached is None or cached[0]() is not self or len(cached[1]) != len(notes) or len(cached[4]) != len(turns)
                or not all(map(is_, cached[1], notes)) or not all(map(is_, cached[4], turns))):
            key = id(self)
            cached = _ORDERED[key] = [weakref.ref(self, lambda _: _ORDERED.pop(key, None)), notes,
                                      sorted(notes, key=_SEQ), None, turns, {}]
        return cached

    def moment(self, at: datetime | None) -> int | None:
        """Which stretch of time ``at`` falls in (None for now): between two consecutive times at which a note or a
        turn change starts or ends to hold, every note's and turn change's standing is the same, so whatever is
        derived from them at ``at`` holds for the whole stretch (a key for :meth:`derived`)."""
        if at is None:
            return None
        times = self.kept("moments", lambda: sorted({t for n in self.notes.values() for t in (n.valid_from, n.valid_to)
                                                      if t is not None} | {c.at for c in self.turns.values()}))
        return bisect.bisect_right(times, at)

    def kept(self, key, make: Callable[[], object]):
        """``make()``, kept in :meth:`derived` under ``key`` while these notes and turn changes stand (at most
        :data:`DERIVED_KEPT` values: past that the dict starts again, as a time-travel run asks for many moments)."""
        cache = self.derived()
        if key not in cache:
            if len(cache) >= DERIVED_KEPT:  # the stretches of time stay: every other key is read through them
                moments = cache.get("moments")
                cache.clear()
                if moments is not None:
                    cache["moments"] = moments
            cache[key] = make()
        return cache[key]

    def derived(self) -> dict:
        """A dict for what a reader derives from these notes and turn changes (never folded or saved): emptied when
        any of them changes, so a value kept in it holds for the state as it stands."""
        return self._derived()[5]

    def _ordered(self) -> list[Note]:
        """Every note in log order (a fresh list; the order is kept between calls while the very same notes stand)."""
        return list(self._derived()[2])

    def active(self, at: datetime | None = None) -> list[Note]:
        """Notes active now (``at`` None), or valid at time ``at``; in log order."""
        if at is None:
            return [n for n in self._ordered() if n.status == "active"]
        return [n for n in self._ordered() if n.valid_from <= at and (n.valid_to is None or n.valid_to > at)]

    def history(self, note_id: str) -> list[Note]:
        """The version chain containing ``note_id``, oldest first; empty for an unknown id."""
        note = self.notes.get(note_id)
        if note is None:
            return []
        seen = {note.note_id}
        while note.supersedes in self.notes and note.supersedes not in seen:
            note = self.notes[note.supersedes]
            seen.add(note.note_id)
        chain = [note]
        while chain[-1].superseded_by in self.notes and chain[-1].superseded_by not in {n.note_id for n in chain}:
            chain.append(self.notes[chain[-1].superseded_by])
        return chain

    def constraint_sources(self, at: datetime | None = None) -> frozenset[str]:
        """The messages that state a constraint in force (active now, or valid at ``at``): retention keeps them at
        full strength and never archives them while the constraint holds. Kept for the stretch of time ``at`` is in
        (:meth:`moment`): every search asks for them."""
        return self.kept(("constraint_sources", self.moment(at)), lambda: frozenset(
            m for n in self.active(at) if n.category == "constraint" for m in n.source_message_ids))

    def sources(self) -> Mapping[str, list[Note]]:
        """Message id → the notes (any status) stated or reinforced by it, in log order (read only)."""
        derived = self._derived()
        if derived[3] is None:  # indexed once while the same notes stand: a search asks for many turns' notes
            by_message: dict[str, list[Note]] = {}
            for note in derived[2]:
                for source in dict.fromkeys(note.source_message_ids):
                    by_message.setdefault(source, []).append(note)
            derived[3] = by_message
        return derived[3]

    def by_source(self, message_id: str) -> list[Note]:
        """Notes (any status) stated or reinforced by message ``message_id``, in log order."""
        return list(self.sources().get(message_id, ()))

    def search(
        self, query: str, k: int = 10, params: BM25Params = DEFAULT_BM25, *, include_inactive: bool = False
    ) -> list[tuple[str, float]]:
        """Top-``k`` (note id, BM25 score) over note text and key terms, best first.

        Statistics cover every version ever indexed; closed versions are left
        out of the result unless ``include_inactive``.
        """
        ranked = self.index.search(query, len(self.index.doc_ids), params)
        if not include_inactive:
            ranked = [(nid, s) for nid, s in ranked if self.notes[nid].status == "active"]
        return ranked[:k]

    def canonical(self) -> list:
        return [
            [
                (n.note_id, n.seq, n.category, n.text, n.subject, n.key_terms, n.polarity, n.slot, n.value,
                 repr(n.confidence), n.language, n.lifecycle, n.source_message_ids, _iso(n.valid_from),
                 _iso(n.valid_to), n.version, n.supersedes, n.superseded_by, n.status, n.boosts, n.uses,
                 _iso(n.last_reinforced), n.decider, n.reason, tuple(map(_iso, n.reinforced_at)),
                 _iso(n.importance_reset_at), n.reset_mark, n.promotion_mark)
                for n in self._ordered()
            ],
            self.index.canonical(),
            [(t.memory_id, t.by, _iso(t.at), t.reason, t.seq) for t in sorted(self.turns.values(), key=lambda t: t.seq)],
        ]


def _create(env: Envelope, op: NoteOperation, content: NoteContent, previous: Note | None) -> Note:
    return Note(
        note_id=env.event_id, category=content.category, text=content.text, subject=content.subject,
        key_terms=content.key_terms, polarity=content.polarity, slot=content.slot, value=content.value,
        confidence=content.confidence, language=content.language, lifecycle=content.lifecycle,
        source_message_ids=op.source_message_ids, valid_from=op.valid_from, valid_to=None,
        version=previous.version + 1 if previous else 1, supersedes=previous.note_id if previous else None,
        superseded_by=None, status="active", boosts=0, uses=0, last_reinforced=None, seq=env.seq,
        decider=op.decider, reason=op.reason,
    )


def _close(note: Note, at: datetime, status: NoteStatus, superseded_by: str | None = None) -> Note:
    # A statement dated before the note it closes (out-of-order message times) closes it at its start.
    return replace(note, valid_to=max(at, note.valid_from), status=status, superseded_by=superseded_by)


def _reinforce(note: Note, at: datetime, *, boost: bool, sources: tuple[str, ...] = ()) -> Note:
    last = at if note.last_reinforced is None else max(note.last_reinforced, at)
    return replace(
        note, boosts=note.boosts + boost, uses=note.uses + (not boost), last_reinforced=last,
        reinforced_at=(*note.reinforced_at, at),
        source_message_ids=tuple(dict.fromkeys(note.source_message_ids + sources)),
    )


def _index_parts(note: Note) -> tuple[str, ...]:
    """What the notes' BM25 index reads of a note: its text, its key terms and what it is about (``about_words``)."""
    about = about_words(note.language, note.slot, note.category, note.polarity, note.key_terms)
    return (note.text, *note.key_terms, " ".join(w for w in about.split() if w not in note.key_terms))


def _apply_operation(state: NoteState, env: Envelope, op: NoteOperation) -> None:
    target = state.notes.get(op.target_note_id) if op.target_note_id else None
    if op.op == "add" and op.note is not None:
        note = state.notes[env.event_id] = _create(env, op, op.note, None)
        state.index.add_parts(note.note_id, _index_parts(note))
        return
    if target is None or target.status != "active":
        return  # unknown or already closed target: nothing to act on
    if op.op == "update" and op.note is not None:
        note = state.notes[env.event_id] = _create(env, op, op.note, target)
        state.notes[target.note_id] = _close(target, op.valid_from, "superseded", note.note_id)
        state.index.add_parts(note.note_id, _index_parts(note))
    elif op.op == "boost":
        state.notes[target.note_id] = _reinforce(target, op.valid_from, boost=True, sources=op.source_message_ids)
    elif op.op == "delete":
        state.notes[target.note_id] = _close(target, op.valid_from, "retracted")


def _apply_review(state: NoteState, review: NoteReviewed) -> None:
    note = state.notes.get(review.note_id)
    if note is None or note.status != "active":
        return
    if review.decision == "delete":
        state.notes[note.note_id] = _close(note, review.at, "retracted")
    elif review.decision == "promote":
        state.notes[note.note_id] = replace(note, lifecycle="core", promotion_mark=note.reinforcements)
    elif review.trigger == "promotion":
        state.notes[note.note_id] = replace(note, promotion_mark=note.reinforcements)
    else:
        state.notes[note.note_id] = replace(note, importance_reset_at=review.at, reset_mark=len(note.reinforced_at))


# The events evolve reads; the shard fold (projections.folds.state) does not call it for any other.
HANDLES = (NoteOperation, NoteReviewed, MemoryTouched, MessageSuperseded)


def evolve(state: NoteState, env: Envelope | TouchBlock) -> NoteState:
    """Apply one envelope (or a block of touches); events of other kinds are ignored."""
    if type(env) is TouchBlock:
        for i, reason in enumerate(env.reasons):
            if reason == "used":
                _used(state, env.row_ids(i), env.times[i])
        return state
    event = env.event
    if isinstance(event, NoteOperation):
        _apply_operation(state, env, event)
    elif isinstance(event, NoteReviewed):
        _apply_review(state, event)
    elif isinstance(event, MessageSuperseded):
        for memory_id in event.message_event_ids:
            state.turns.setdefault(memory_id, TurnChange(memory_id, event.by_message_event_id, event.valid_from,
                                                         event.reason, env.seq))
    elif isinstance(event, MemoryTouched) and event.reason == "used":
        _used(state, event.memory_ids, env.occurred_at)
    return state


def _used(state: NoteState, memory_ids, at) -> None:
    for note_id in dict.fromkeys(memory_ids):  # one use per note per touch event
        note = state.notes.get(note_id)
        if note is not None:
            state.notes[note_id] = _reinforce(note, at, boost=False)


def fold(state: NoteState, envelopes: Iterable[Envelope]) -> NoteState:
    for env in envelopes:
        state = evolve(state, env)
    return state


# -- importance: a pure function of (note, now, policy) ----------------------


@dataclass(frozen=True, slots=True)
class NotePolicy:
    """The parameters of note importance and review, with seed 002's values as defaults."""

    initial_importance: float = 1.0  # a new note
    reinforcement: float = 0.3  # BOOST +0.3; a "used" touch counts the same
    fact_decay: float = 0.95  # fact: ×0.95 ...
    episode_decay: float = 0.8  # episode: ×0.8 ...
    decay_after_days: float = 7.0  # ... once 7 days pass without reinforcement (the grace) ...
    decay_every_days: float = 7.0  # ... and again for every further full 7 days idle
    promotion_threshold: float = 2.5  # importance that triggers a promotion review
    retraction_threshold: float = 0.5  # importance below which a retraction review is due
    retraction_reset: float = 0.5  # importance after a retraction review keeps the note
    context_tokens: int = 500  # the notes' share of a context window (seed 000: < 500 tokens)

    def multiplier(self, lifecycle: str) -> float:
        """Decay factor per step; 1.0 (never decays) for core and system notes."""
        return {"fact": self.fact_decay, "episode": self.episode_decay}.get(lifecycle, 1.0)

    def decay(self, lifecycle: str, idle_days: float) -> float:
        """The factor after ``idle_days`` without reinforcement: 1.0 during the grace, then one step per period."""
        factor = self.multiplier(lifecycle)
        if factor == 1.0 or idle_days < self.decay_after_days:
            return 1.0
        return factor ** (1 + int((idle_days - self.decay_after_days) // self.decay_every_days))


DEFAULT_NOTE_POLICY = NotePolicy()


def _days(later: datetime, earlier: datetime) -> float:
    return max(0.0, (later - earlier).total_seconds() / SECONDS_PER_DAY)


def importance(note: Note, now: datetime, policy: NotePolicy = DEFAULT_NOTE_POLICY) -> float:
    """The note's importance at ``now`` (rounded to 1e-9, so 1.0 + 5 × 0.3 is exactly 2.5).

    Piecewise: start at 1.0 at ``valid_from`` (or at 0.5 at the last
    retraction review that kept it), decay over each idle stretch, add 0.3 at
    every reinforcement after the start, decay over the last idle stretch up
    to ``now``. Reinforcements after ``now`` are not counted.
    """
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware (e.g. datetime.now(UTC)); naive times are ambiguous")
    lifecycle = "core" if note.category == "constraint" else note.lifecycle  # a constraint does not fade
    if note.importance_reset_at is not None:
        value, since = policy.retraction_reset, note.importance_reset_at
    else:
        value, since = policy.initial_importance, note.valid_from
    # Log order decides what counts after a reset; a reinforcement dated before the start counts at the start.
    for at in sorted(max(t, since) for t in note.reinforced_at[note.reset_mark:] if t <= now):
        value = value * policy.decay(lifecycle, _days(at, since)) + policy.reinforcement
        since = at
    return round(value * policy.decay(lifecycle, _days(now, since)), 9)
