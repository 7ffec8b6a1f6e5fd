"""Kept note pools: an ingest decides exactly what it decides with a pool built anew, and indexes only what changed."""

from __future__ import annotations

import itertools
import random

import pytest

import actors.deciders as deciders
import projections.decisions.kept_pools as kept_pools
import projections.rules.note_pool as note_pool
from actors.deciders import decide_record
from events.commands import validate_messages
from events.log import InMemoryEventLog
from projections.adapters.embedding import HASH_ID, HashEmbedder
from projections.decisions.note_ops import _comparable
from projections.folds.state import ShardState, fold
from projections.rules.contradiction import ActiveNote
from tests.builders import command
from tests.unit.test_note_pool import EN, FILL, ZH

EMBED = HashEmbedder()


def _dialogue(n: int, seed: int) -> list[list[dict]]:
    """``n`` messages in batches of one to three, English and Chinese: statements that add, restate, change and
    supersede notes (moves, switches, dislikes), some by another speaker."""
    rng = random.Random(seed)
    texts = [rng.choice(EN + ZH).format(**{k: rng.choice(v) for k, v in FILL.items()}) for _ in range(n)]
    items = [command(t, i, speaker=rng.choice([None, None, "Ana"]), client_message_id=f"c{i}")
             for i, t in enumerate(texts)]
    batches, i = [], 0
    while i < len(items):
        size = rng.choice([1, 1, 1, 2, 3])
        batches.append(items[i:i + size])
        i += size
    return batches


def _ingest(batches: list[list[dict]], monkeypatch) -> tuple[list, int]:
    """Every batch decided against the folded state, then appended and folded: (the events, pools built)."""
    ids = itertools.count()
    monkeypatch.setattr(deciders, "new_event_id", lambda: f"e{next(ids):05d}")
    built = itertools.count()
    init = note_pool.NotePool.__init__

    def counted(self, *args, **kw):
        next(built)
        init(self, *args, **kw)

    monkeypatch.setattr(note_pool.NotePool, "__init__", counted)
    log, state, events = InMemoryEventLog(), ShardState(), []
    for batch in batches:
        commands = validate_messages(batch)
        pending, _ = decide_record(state, commands, EMBED.encode([c.index_text() for c in commands]), HASH_ID,
                                   EMBED.dim)
        events += [(p.event_id, type(p.event).__name__, p.event.model_dump(mode="json")) for p in pending]
        fold(state, log.append(pending))
    return events, next(built)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_kept_pool_decides_what_a_new_pool_decides_and_is_built_once(seed, monkeypatch):
    batches = _dialogue(160, seed)
    kept_pools.forget_all()
    kept, kept_builds = _ingest(batches, monkeypatch)
    monkeypatch.undo()
    monkeypatch.setattr(kept_pools, "_kept", lambda owner, active, comparable: None)  # a new pool every call
    new, new_builds = _ingest(batches, monkeypatch)
    assert kept == new
    ops = [e[2]["op"] for e in kept if e[1] == "NoteOperation"]
    assert {"add", "update", "boost"} <= set(ops), ops  # the dialogue changes notes, not only adds them
    # kept: one for the first batch (the user holds nothing yet), then the one kept
    assert (kept_builds, new_builds) == (2, len(batches))


def test_a_rollback_leaves_the_pool_as_a_new_build_of_its_notes():
    notes = [ActiveNote(f"n{i}", text, subject=subject) for i, (text, subject) in enumerate([
        ("Ana lives in Berlin", "Ana"), ("I love coffee", "user"), ("我住在杭州", "user"), ("I work as a nurse now", "user"),
    ])]
    pool = note_pool.NotePool(notes, _comparable)
    pool.mark()
    pool.remove("n1")
    pool.add(ActiveNote("x1", "I moved to Lyon last month"))
    pool.remove("n0")
    pool.remove("x1")
    pool.add(ActiveNote("x2", "我不喜欢咖啡"))
    pool.rollback()
    fresh = note_pool.NotePool(notes, _comparable)
    assert list(pool.notes) == list(fresh.notes) == ["n0", "n1", "n2", "n3"]
    assert sorted(pool._order, key=pool._order.get) == sorted(fresh._order, key=fresh._order.get)
    assert pool._next == fresh._next

    def postings(p) -> dict:
        return {name: {k: v for k, v in getattr(p, name).items() if v}
                for name in ("_by_term", "_by_slot", "_by_gram", "_by_text")}

    assert postings(pool) == postings(fresh) and pool._with_states == fresh._with_states
    pool.add(ActiveNote("x3", "I love tea"))  # after a rollback it takes the next place, as a new build's would
    fresh.add(ActiveNote("x3", "I love tea"))
    assert pool._order["x3"] == fresh._order["x3"]


def test_forgetting_a_user_drops_the_kept_pools_that_hold_note_texts(tmp_path):
    from actors import commands as c
    from actors.core import ShardCore
    from tests.shard_helpers import record
    from tests.unit.test_command_retries import NOW, spec_for

    kept_pools.forget_all()
    core = ShardCore(spec_for(tmp_path))
    try:
        for i, text in enumerate(["I live in Berlin.", "我喜欢喝绿茶。", "I moved to Lyon last month."]):
            record(core, [command(text, i, tenant="acme", user_id="mel")])
        assert kept_pools._KEPT  # the user's pool, kept between the ingests
        core.handle([c.ForgetUser(tenant="acme", user_id="mel", now=NOW)])
        assert not kept_pools._KEPT
    finally:
        core.close()


def test_only_the_most_recently_used_users_pools_are_kept(monkeypatch):
    from projections.folds.notes import NoteState

    monkeypatch.setattr(kept_pools, "MAX_KEPT", 2)
    kept_pools.forget_all()
    owners = [NoteState() for _ in range(3)]
    for owner in owners:
        with kept_pools.pool_for([], _comparable, owner):
            pass
    assert set(kept_pools._KEPT) == {id(owners[1]), id(owners[2])}
    with kept_pools.pool_for([], _comparable, owners[1]):  # used again: the last to go
        pass
    with kept_pools.pool_for([], _comparable, owners[0]):
        pass
    assert set(kept_pools._KEPT) == {id(owners[1]), id(owners[0])}
    del owners[1]  # a user's note state dropped (evicted, forgotten): its pool goes with it, at the next call
    with kept_pools.pool_for([], _comparable, owners[0]):
        pass
    assert list(kept_pools._KEPT) == [id(owners[0])]


def test_an_owner_collected_while_the_pools_are_locked_does_not_wait_for_the_lock():
    import threading

    from projections.folds.notes import NoteState

    owner = NoteState()
    with kept_pools.pool_for([], _comparable, owner):
        pass
    done = threading.Event()

    def collect_inside_the_lock() -> None:  # as a collection during a pool's lookup would
        nonlocal owner
        with kept_pools._KEPT_LOCK:
            owner = None  # the weak reference's callback runs here
        done.set()

    threading.Thread(target=collect_inside_the_lock, daemon=True).start()
    assert done.wait(5), "the weak reference's callback waited for the lock its own thread holds"
