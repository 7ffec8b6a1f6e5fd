"""The fusion's candidate helpers answer as the plain expressions they replace, and their caches follow the
projections (projections.queries.candidates, the notes' log order)."""

from __future__ import annotations

import random
from datetime import timedelta, timezone

import numpy as np
import pytest

from events.model import MemoryArchived
from projections.folds.archive import in_scope
from projections.folds.state import ShardState, evolve, fold
from projections.queries import candidates, rerank
from tests.builders import T0, embedding, message, stream

EAST = timezone(timedelta(hours=9))


def test_order_is_the_fusions_sort_with_ties_by_log_order():
    rng = random.Random(7)
    for size in (0, 1, 2, 5, 40, 300):
        rows = [[rng.choice((0.0, 0.1, 0.25, 1 / 3, rng.random())), -seq, f"m{seq}", {}]
                for seq in rng.sample(range(1, 10 * size + 2), size)]
        expected = sorted(rows, key=lambda s: (-s[0], s[1]))
        candidates.order(rows)
        assert rows == expected
        assert [r[2] for r in rows] == [r[2] for r in expected]


def _memory_events():
    return [
        ("m1", message("first", "c1", occurred_at=T0)),
        ("m2", message("second", "c2", occurred_at=(T0 + timedelta(hours=1)).astimezone(EAST))),
        ("m3", message("third", "c3", occurred_at=T0 + timedelta(hours=2, microseconds=5))),
        ("m4", message("fourth", "c4", occurred_at=T0 + timedelta(days=1))),
        ("a1", MemoryArchived(memory_ids=("m3",), reason="manual", at=T0 + timedelta(days=2), policy="default",
                              retentions=(0.01,))),
    ]


def test_scope_filter_answers_as_the_plain_expression():
    memory = fold(ShardState(), stream(*_memory_events())).user("acme", "alice")
    tables = rerank.TABLES.get(memory)
    times = tables.times
    assert tables.newest == candidates.epoch_micros(T0 + timedelta(days=1))
    nows = [None, T0 - timedelta(seconds=1), T0, (T0 + timedelta(hours=1)).astimezone(EAST),
            T0 + timedelta(hours=2, microseconds=4), T0 + timedelta(hours=2, microseconds=5), T0 + timedelta(days=1, microseconds=-1),
            T0 + timedelta(days=1), T0 + timedelta(days=9)]
    hidden_ids = {"m2"}
    checked = 0
    for scope in ("active", "archive", "all"):
        for now in nows:
            for hide in (None, hidden_ids.__contains__):
                for newest in (None, tables.newest):
                    allowed = candidates.scope_filter(memory, scope, now, times, hide, newest)
                    for mid in ("m1", "m2", "m3", "m4", "unknown"):
                        by_id = memory.messages.by_id
                        plain = (mid in by_id and in_scope(memory.archive, mid, scope)
                                 and (now is None or by_id[mid].occurred_at <= now)
                                 and not (hide is not None and hide(mid)))
                        assert allowed(mid) == plain, (scope, now, hide, newest, mid)
                        checked += 1
    assert checked == 3 * len(nows) * 2 * 2 * 5 and set(times) == {"m1", "m2", "m3", "m4"}
    unarchived = fold(ShardState(), stream(*_memory_events()[:4])).user("acme", "alice")
    fast = candidates.scope_filter(unarchived, "active", T0 + timedelta(days=9), {}, None,
                                   rerank.TABLES.get(unarchived).newest)
    assert [fast(m) for m in ("m1", "m4", "unknown")] == [True, True, False]
    naive = candidates.scope_filter(memory, "active", T0.replace(tzinfo=None), times, None)
    with pytest.raises(TypeError):  # an aware and a naive time do not compare, as before
        naive("m1")


def _plain_ranked(memory, query_vector, limit):
    episodes = [e for e in memory.episodes.episodes() if e.centroid is not None]
    if not episodes or limit < 1:
        return []
    sims = np.stack([e.centroid for e in episodes]) @ np.asarray(query_vector, dtype=np.float64)
    return [(episodes[i], float(sims[i])) for i in np.argsort(-sims, kind="stable")[:limit]]


def _summary(ranked):
    return [(e.episode_id, e.member_ids, sim) for e, sim in ranked]


def test_ranked_episodes_follow_the_episode_projection_as_turns_arrive():
    texts = [("m1", "c1", "hello there", [1.0, 0.0, 0.0]), ("m2", "c2", "hi", [0.9, 0.1, 0.0]),
             ("m3", "c3", "switching topics", [0.0, 0.0, 1.0]), ("m4", "c4", "more of it", [0.0, 0.2, 0.9])]
    state = ShardState()
    query = np.asarray([0.3, 0.1, 0.8])
    events = []
    for i, (mid, client, text, vec) in enumerate(texts):
        events += [(mid, message(text, client, occurred_at=T0 + timedelta(minutes=i))), (f"v{mid}", embedding(mid, vec))]
    envelopes = stream(*events)
    seen = set()
    for env in envelopes:
        state = evolve(state, env)
        memory = state.user("acme", "alice")
        for limit in (0, 1, 5):
            got = candidates.ranked_episodes(memory, query, limit)
            assert _summary(got) == _summary(_plain_ranked(memory, query, limit))
        seen.add(tuple(e.member_ids for e, _ in candidates.ranked_episodes(memory, query, 5)))
    assert len(seen) > 2  # the episodes moved as turns arrived, and the cache followed


def test_notes_in_log_order_follow_new_versions():
    from projections.folds.notes import NoteState, fold as fold_notes
    from tests.unit.test_notes import add, day, log, op

    events = [("n1", add("uses PostgreSQL")), ("n2", add("likes tea", at=day(0.5), source="m3")),
              ("n3", op("update", "n1", day(1), "switch to MySQL"))]
    state = NoteState()
    for n in range(1, len(events) + 1):
        state = fold_notes(state, log(*events[:n])[n - 1:])
        for at in (None, T0, day(0.75), day(2)):
            plain = sorted(state.notes.values(), key=lambda note: note.seq)
            plain = [x for x in plain if x.status == "active"] if at is None else [x for x in plain if x.valid_at(at)]
            assert state.active(at) == plain
    assert [x.note_id for x in state.active()] == ["n2", "n3"] and [x.note_id for x in state.active(T0)] == ["n1"]
