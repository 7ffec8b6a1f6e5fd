"""Touches folded from the log's clear ``touch`` column (runs of them as columns) build the same state as
touches decoded one envelope at a time.

Generated histories mix messages, embeddings, graph memories, notes and
touches of all three reasons; a touch names earlier ids (some more than once,
some unknown) at any time, earlier or later than the one before. The fold of
``log.fold_scan()`` (blocks) must have the digest of the fold of ``log.scan()``
(envelopes) and of the live fold of what each append returned: every
projection, byte for byte.
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from events.crypto import PayloadCipher
from events.duckdb_log import DuckDBEventLog
from events.envelope import PendingEvent, seal, to_arrow
from events.erasure_events import PayloadErased, UserForgotten
from events.keystore import KeyStore
from events.graph_events import GraphMemoryStaged
from events.model import MemoryTouched, MessageRecorded, NoteContent, NoteOperation
from events.touch_block import TouchBlock, fold_items, touch_column
from projections.folds.state import ShardState, digest, fold
from tests.builders import RECORDED_AT, T0, embedding, message, stream, touch
from tests.unit.test_properties import (
    IDS, TEXT, WHEN, graph_memory_staged, message_embedded, message_recorded, note_operation,
)

STREAMS = [("acme", "alice"), ("acme", "bob"), ("globex", "alice")]
WHEN_0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)


@st.composite
def touches(draw, known: list[str]):
    ids = draw(st.lists(st.sampled_from(known) | IDS if known else IDS, min_size=1, max_size=6))
    return MemoryTouched(reason=draw(st.sampled_from(["search_hit", "context", "used"])), query_id=draw(IDS),
                         query=draw(TEXT), memory_ids=tuple(ids), ranks=tuple(range(1, len(ids) + 1)),
                         scores=tuple(1.0 / r for r in range(1, len(ids) + 1)))


@st.composite
def histories(draw):
    """Batches over a few streams, touch-heavy (as a served log is); touches name earlier event ids."""
    batches, known, n = [], [], 0
    for _ in range(draw(st.integers(1, 6))):
        batch = []
        for _ in range(draw(st.integers(1, 8))):
            tenant, user = draw(st.sampled_from(STREAMS))
            pool = st.sampled_from(known) if known else IDS
            kind = draw(st.sampled_from(["touch"] * 5 + ["message", "embedding", "graph", "note"]))
            event = (draw(touches(known)) if kind == "touch" else draw(message_recorded) if kind == "message"
                     else draw(message_embedded(pool)) if kind == "embedding" else draw(graph_memory_staged())
                     if kind == "graph" else draw(note_operation))
            event_id = f"ev-{n}"
            n += 1
            if kind != "touch":
                known.append(event_id)
            batch.append(PendingEvent(tenant, user, event_id, event))
        batches.append(batch)
    return batches


@pytest.mark.parametrize("encrypted", [False, True])
@given(batches=histories(), data=st.data())
@settings(max_examples=25, deadline=None)
def test_touch_blocks_at_any_times_fold_to_the_digest_of_envelopes_one_by_one(encrypted, batches, data):
    # Stored rows as a scan returns them (by stream, then seq), each at a time drawn apart from the others: touches
    # of one block earlier and later than the one before, equal ones too (retention keeps every access time).
    pending = sorted((p for batch in batches for p in batch), key=lambda p: (p.tenant, p.user_id))
    times = data.draw(st.lists(st.sampled_from([WHEN_0, WHEN_0.replace(hour=8)]) | WHEN.map(
        lambda t: t.astimezone(UTC)), min_size=len(pending), max_size=len(pending)), label="recorded_at")
    heads: dict = {}
    envelopes = []
    for p, at in zip(pending, times, strict=True):
        heads[p.tenant, p.user_id] = heads.get((p.tenant, p.user_id), 0) + 1
        envelopes.append(seal(p, heads[p.tenant, p.user_id], at))
    with tempfile.TemporaryDirectory() as tmp:
        cipher = _cipher(Path(tmp)) if encrypted else None
        table = to_arrow(envelopes, cipher)
        table = table.append_column("touch", touch_column(envelopes, table.column("sealed") if cipher else None))

        items = fold_items(table, cipher)

        assert digest(fold(ShardState(), items)) == digest(fold(ShardState(), envelopes))
        assert sum(i.events for i in items if type(i) is TouchBlock) == sum(e.kind == "memory_touched"
                                                                            for e in envelopes)


def _cipher(tmp: Path) -> PayloadCipher:
    return PayloadCipher(KeyStore(tmp / "shard.keys", bytes(32)))


@pytest.mark.parametrize("encrypted", [False, True])
@given(batches=histories())
@settings(max_examples=25, deadline=None)
def test_touch_blocks_fold_to_the_digest_of_envelopes_one_by_one(encrypted, batches):
    with tempfile.TemporaryDirectory() as tmp:
        log = DuckDBEventLog(Path(tmp) / "shard.duckdb", _cipher(Path(tmp)) if encrypted else None)
        try:
            live = ShardState()
            for batch in batches:
                fold(live, log.append(batch))
            items = list(log.fold_scan())
            from_blocks = fold(ShardState(), items)
            from_envelopes = fold(ShardState(), log.scan())

            assert digest(from_blocks) == digest(from_envelopes) == digest(live)
            touched = sum(isinstance(e.event, MemoryTouched) for batch in batches for e in batch)
            assert sum(i.events for i in items if type(i) is TouchBlock) == touched  # every touch came as a block
            assert from_blocks.events_applied == log.count()
        finally:
            log.close()


def _log_with_touches(tmp: Path, cipher=None) -> tuple[DuckDBEventLog, list]:
    log = DuckDBEventLog(tmp / "shard.duckdb", cipher)
    msg = MessageRecorded(conversation_id="c", role="user", speaker="ann", text="I adopted a puppy", occurred_at=WHEN_0,
                          client_message_id="c1")
    stored = log.append([PendingEvent("acme", "ann", "m1", msg), PendingEvent("acme", "bob", "m2", msg)])
    for i in range(3):
        stored += log.append([PendingEvent(t, u, f"t{u}{i}", MemoryTouched(
            reason="context", query_id=f"q{i}", query="puppy?", memory_ids=(m, m), ranks=(1, 2), scores=(1.0, 0.5)))
            for t, u, m in (("acme", "ann", "m1"), ("acme", "bob", "m2"))])
    return log, stored


def test_a_log_written_before_the_column_folds_the_same_before_and_after_its_backfill(tmp_path):
    log, _ = _log_with_touches(tmp_path)
    log.close()
    with duckdb.connect(str(tmp_path / "shard.duckdb")) as con:  # as an older palimpsest wrote it: no column
        con.execute("ALTER TABLE events DROP COLUMN touch")
    log = DuckDBEventLog(tmp_path / "shard.duckdb")  # adds the column back, NULL in every old row
    try:
        before = list(log.fold_scan())
        assert not any(type(i) is TouchBlock for i in before)
        assert log.backfill_touches() == 6
        after = list(log.fold_scan())
        assert [i.events for i in after if type(i) is TouchBlock] == [3, 3]
        assert digest(fold(ShardState(), before)) == digest(fold(ShardState(), after)) \
            == digest(fold(ShardState(), log.scan()))
        assert log.backfill_touches() == 0  # nothing left to set
    finally:
        log.close()


def test_a_forgotten_users_touches_fold_as_erased_payloads_not_as_touches(tmp_path):
    cipher = _cipher(tmp_path)
    log, _ = _log_with_touches(tmp_path, cipher)
    try:
        gen = cipher.keys.current(("acme", "ann"))
        log.append([PendingEvent("acme", "ann", "forget-ann", UserForgotten(key_generation=gen, through_seq=4,
                                                                            at=WHEN_0))])
        cipher.keys.destroy(("acme", "ann"), gen)

        items = list(log.fold_scan())
        erased = [i for i in items if type(i) is not TouchBlock and type(i.event) is PayloadErased]
        assert [e.kind for e in erased] == ["message_recorded"] + ["memory_touched"] * 3
        assert [(b.user_id, b.events) for b in items if type(b) is TouchBlock] == [("bob", 3)]
        assert digest(fold(ShardState(), items)) == digest(fold(ShardState(), log.scan()))
    finally:
        log.close()


def test_blocks_after_a_later_touch_and_within_one_session_fold_as_envelopes_do():
    # Sixteen pages (six past short-term: in one mid-term session), a graph memory and a note; then a touch run at
    # a later time than the run after it, touches naming two pages of one session (one visit), ids twice (one
    # access, one rehearsal), and a message between the runs. Every fold the blocks reach is checked.
    events = []
    for i in range(16):
        events += [(f"m{i}", message(f"I walk my puppy every morning {i}", f"c{i}", occurred_at=T0)),
                   (f"e{i}", embedding(f"m{i}", [1.0, 0.1 * (i % 3), 0.0]))]
    events += [("g1", GraphMemoryStaged(subject="ann", memory_type="fact", topic="puppy", source_message_ids=("m0",),
                                        occurred_at=T0, extractor="graph-rules-v1")),
               ("n1", NoteOperation(op="add", note=NoteContent(category="fact", text="Ann has a puppy"),
                                    source_message_ids=("m0",), valid_from=T0, reason="r", decider="rules-v1"))]
    late = [("t0", touch("m0", "m1", "m0", "g1", "n1", "g1", reason="context")),
            ("t1", touch("m1", "m2", "m15", "m15", reason="used"))]
    early = [("t2", touch("m0", "m1", "m2", "n1", reason="used")), ("t3", touch("m3", "g1", reason="search_hit"))]
    envelopes = stream(*events) + stream(*late, first_seq=len(events) + 1, recorded_at=RECORDED_AT.replace(day=20))
    envelopes += stream(("m99", message("and a cat", "c99")), first_seq=len(envelopes) + 1)
    envelopes += stream(*early, first_seq=len(envelopes) + 1, recorded_at=RECORDED_AT.replace(day=2))
    table = to_arrow(envelopes)
    items = fold_items(table.append_column("touch", touch_column(envelopes, None)))
    assert [(b.first_seq, b.seq) for b in items if type(b) is TouchBlock] == [(35, 36), (38, 39)]

    from_blocks, from_envelopes = fold(ShardState(), items), fold(ShardState(), envelopes)

    assert digest(from_blocks) == digest(from_envelopes)
    memory = from_blocks.user("acme", "alice")
    m0 = memory.retention.items["m0"]
    assert [a.day for a in m0.accesses] == [2, 20]  # the early run's access sorted before the late one's
    assert memory.touches.stats["m0"].count == 3 and memory.graph.memories["g1"].access_count == 2
    assert [i.rehearsals for i in memory.working.conversations["conv-1"] if i.memory_id == "m15"] == [1]
    sessions = [s for s in memory.tiers.active.values() if s.visits]
    assert sessions and sum(s.visits for s in sessions) == 4  # each touch visits the one session once


@given(events=st.lists(st.lists(st.integers(0, 5), max_size=6), max_size=12))
@settings(max_examples=200, deadline=None)
def test_a_pair_repeats_exactly_when_an_earlier_pair_of_its_event_has_its_key(events):
    import numpy as np

    from projections.folds.touch_pairs import _repeats

    rows = np.asarray([r for r, keys in enumerate(events) for _ in keys], dtype=np.int64)
    keys = np.asarray([k for ks in events for k in ks], dtype=np.int64)
    want = [k in ks[:i] for ks in events for i, k in enumerate(ks)]

    got = _repeats(rows, keys, 6)

    assert (got is None and not any(want)) or (got is not None and got.tolist() == want)


@given(events=st.lists(st.lists(st.integers(0, 5), max_size=6), min_size=1, max_size=12), data=st.data())
@settings(max_examples=200, deadline=None)
def test_the_first_pair_of_each_group_per_event_is_kept_by_the_cell_count_and_by_the_sort_alike(events, data):
    import numpy as np

    from projections.folds import touch_pairs

    rows = np.asarray([r for r, keys in enumerate(events) for _ in keys], dtype=np.int64)
    keys = np.asarray([k for ks in events for k in ks], dtype=np.int64)
    sel = np.asarray(data.draw(st.lists(st.booleans(), min_size=keys.size, max_size=keys.size)), dtype=bool)
    seen, want = set(), []
    for r, k, s in zip(rows.tolist(), keys.tolist(), sel.tolist()):
        want.append(s and (r, k) not in seen)
        if s:
            seen.add((r, k))

    counted = touch_pairs._first_per_event(rows, keys, sel, 6)
    cells, touch_pairs._FLAT_CELLS = touch_pairs._FLAT_CELLS, 0  # too many cells: the sort instead
    try:
        sorted_ = touch_pairs._first_per_event(rows, keys, sel, 6)
    finally:
        touch_pairs._FLAT_CELLS = cells

    assert counted.tolist() == want == sorted_.tolist()
