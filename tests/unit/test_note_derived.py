"""What a search derives from a user's notes is kept with the note state for a stretch of time, and is what a new
computation gives: the turns a later statement superseded, the constraints in force, the notes of each turn."""

from __future__ import annotations

import itertools
from datetime import timedelta

import pytest

import actors.deciders as deciders
from actors.deciders import decide_record
from events.commands import validate_messages
from events.log import InMemoryEventLog
from projections.adapters.embedding import HASH_ID, HashEmbedder
from projections.folds.state import ShardState, fold
from projections.queries import supersession
from tests.unit.test_kept_pools import _dialogue

EMBED = HashEmbedder()


def _fold(state, log, batches) -> None:
    for batch in batches:
        commands = validate_messages(batch)
        pending, _ = decide_record(state, commands, EMBED.encode([c.index_text() for c in commands]), HASH_ID,
                                   EMBED.dim)
        fold(state, log.append(pending))


def _moments(notes) -> list:
    """Every time a note or a turn change starts or ends to hold, a moment before and after each, and now (None)."""
    times = {t for n in notes.notes.values() for t in (n.valid_from, n.valid_to) if t is not None}
    times |= {c.at for c in notes.turns.values()}
    return [None, *sorted({t + d for t in times for d in (-timedelta(seconds=1), timedelta(0), timedelta(seconds=1))})]


def _check(memory) -> int:
    notes, texts = memory.notes, memory.messages.by_id
    superseded = 0
    for at in _moments(notes):
        fresh = supersession._superseded_turns(notes, at, texts)
        kept = supersession.superseded_turns(notes, at, texts)
        assert kept == fresh
        assert supersession.superseded_turns(notes, at, texts) is kept  # kept, not computed again
        assert notes.constraint_sources(at) == frozenset(
            m for n in notes.active(at) if n.category == "constraint" for m in n.source_message_ids)
        superseded += len(fresh)
    for message_id in memory.messages.order:
        assert notes.by_source(message_id) == [n for n in notes._ordered() if message_id in n.source_message_ids]
    return superseded


@pytest.mark.parametrize("seed", [4, 5])
def test_kept_answers_equal_new_ones_at_every_moment_and_follow_new_notes(seed, monkeypatch):
    ids = itertools.count()
    monkeypatch.setattr(deciders, "new_event_id", lambda: f"e{next(ids):05d}")
    batches = _dialogue(120, seed)
    log, state = InMemoryEventLog(), ShardState()
    _fold(state, log, batches[: len(batches) // 2])
    memory = state.user("acme", "alice")
    first = _check(memory)
    _fold(state, log, batches[len(batches) // 2:])  # the same note state, changed: nothing kept may answer for it
    assert state.user("acme", "alice") is memory
    assert _check(memory) > first > 0
