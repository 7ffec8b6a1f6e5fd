"""ShardCore without Ray: an in-memory log, a real LanceDB directory, the hash embedder."""

from __future__ import annotations

import numpy as np
import pytest

from actors import commands as c
from actors.core import ShardCore
from actors.deciders import decide_record
from actors.spec import ShardSpec
from events.commands import validate_messages
from events.errors import InvalidInputError
from events.log import InMemoryEventLog, ScanFilter
from projections.adapters.embedding import HashEmbedder
from projections.adapters.tokens import default_counter
from projections.folds.vectors import VectorRow
from tests.builders import command
from tests.shard_helpers import EMBED, context, kinds, record, search

CONVERSATION = [
    command("I adopted a puppy named Biscuit last week", 0, speaker="Alice", turn_id="D1:1", client_message_id="c1"),
    command("My sister works as a nurse in Boston", 1, speaker="Alice", turn_id="D1:2", client_message_id="c2"),
    command("我喜欢在周末去爬山", 2, speaker="Alice", turn_id="D1:3", client_message_id="c3"),
    command("We repainted the kitchen yellow", 3, speaker="Alice", turn_id="D1:4", client_message_id="c4"),
]


@pytest.fixture
def spec(tmp_path) -> ShardSpec:
    return ShardSpec(
        index=0, log_path=tmp_path / "shard-000.duckdb", lance_dir=tmp_path / "vectors",
        model_id=HashEmbedder.model_id, dim=384,
    )


@pytest.fixture
def service(spec):
    svc = ShardCore(spec, log=InMemoryEventLog())
    yield svc
    svc.close()


def test_record_appends_a_message_and_its_embedding_and_indexes_it(service):
    outcomes = record(service, CONVERSATION)

    assert [o["created"] for o in outcomes] == [True] * 4
    # ... and, in the same batch, the note each turn states: three first-person facts and a preference.
    assert kinds(service) == ["message_recorded", "message_classified", "message_embedded"] * 4 + ["note_operation"] * 4
    notes = service.state.user("acme", "alice").notes.active()
    assert [(n.category, n.source_message_ids) for n in notes] == [
        ("fact", (outcomes[0]["memory_id"],)), ("fact", (outcomes[1]["memory_id"],)),
        ("preference", (outcomes[2]["memory_id"],)), ("fact", (outcomes[3]["memory_id"],))]
    stats = service.stats()
    assert (stats["users"], stats["events"], stats["messages"], stats["vectors_indexed"]) == (1, 16, 4, 4)
    assert stats["streams"] == [["acme", "alice"]]
    assert [o["memory_id"] for o in outcomes] == service.state.user("acme", "alice").messages.order


def test_record_is_idempotent(service):
    first = record(service, CONVERSATION)
    again = record(service, CONVERSATION[:2])

    assert [o["created"] for o in again] == [False, False]
    assert [o["memory_id"] for o in again] == [o["memory_id"] for o in first[:2]]
    assert service.log.count() == 16 and service.vectors.count() == 4


def test_record_rejects_vectors_of_another_model(service):
    commands = validate_messages(CONVERSATION)
    vectors = EMBED.encode([c.index_text() for c in commands])
    with pytest.raises(InvalidInputError, match="model_id"):
        service.handle([c.RecordMessages(messages=tuple(commands), vectors=vectors,
                                         model_id="sentence-transformers/all-MiniLM-L6-v2")])
    assert service.log.count() == 0 and service.vectors.count() == 0


def test_search_finds_english_and_chinese_turns(service):
    record(service, CONVERSATION)

    assert search(service, "puppy")[0].turn_id == "D1:1"
    assert search(service, "爬山")[0].text == "我喜欢在周末去爬山"
    assert search(service, "Boston nurse")[0].turn_id == "D1:2"


def test_search_is_scoped_to_the_stream(service):
    record(service, CONVERSATION)
    record(service, [command("My secret is the blue door", tenant="globex", client_message_id="g1")])

    # Dense search always returns neighbours: globex gets its only memory, never acme's puppy.
    assert [h.text for h in search(service, "puppy", tenant="globex", k=10)] == ["My secret is the blue door"]
    assert "My secret is the blue door" not in [h.text for h in search(service, "blue door", k=10)]
    assert search(service, "puppy", user_id="nobody") == []


def test_search_records_one_touch_event_for_its_hits(service):
    record(service, CONVERSATION)

    hits = search(service, "puppy", k=2)
    assert "memory_touched" not in kinds(service)  # a read does not write in line ...
    assert service.flush_touches() == 1  # ... its touches are group-committed after

    [touch] = list(service.log.scan(ScanFilter(kinds=("memory_touched",))))
    assert (touch.event.reason, touch.event.query) == ("search_hit", "puppy")
    assert list(zip(touch.event.memory_ids, touch.event.ranks)) == [(h.memory_id, h.rank) for h in hits]
    touches = service.state.user("acme", "alice").touches
    assert {m: s.count for m, s in touches.stats.items()} == {h.memory_id: 1 for h in hits}
    assert service.stats()["touches"] == 2


def test_a_flush_in_three_steps_answers_queries_during_its_append_and_folds_once(spec):
    core = ShardCore(spec)  # the DuckDB log: the append runs on the writer's own connection
    try:
        record(core, CONVERSATION)
        first = search(core, "puppy", k=2)
        taken = core.take_touches()
        assert core.take_touches() is None  # taken once
        written = core.append_touches(taken)
        assert [e.kind for e in written] == ["memory_touched"]
        # Between the append and the fold, queries read the projections (which do not count the touch yet) ...
        assert [h.memory_id for h in search(core, "puppy", k=2)] == [h.memory_id for h in first]
        assert core.state.user("acme", "alice").touches.stats == {}
        core.fold_touches(taken, written)
        # ... and after the fold the projections are the log's: one touch per hit, digests equal on replay.
        stats = core.state.user("acme", "alice").touches.stats
        assert {m: s.count for m, s in stats.items()} == {h.memory_id: 1 for h in first}
        assert core.replay().equal
        failed = core.take_touches()  # the second search's touch; its append fails: nothing folded
        core.fold_touches(failed, None)
        assert core.take_touches() is None
        assert [e.kind for e in core.log.scan()].count("memory_touched") == 1
    finally:
        core.close()


def test_search_without_touch_reason_writes_nothing(service):
    record(service, CONVERSATION)
    search(service, "puppy", touch_reason=None)
    assert "memory_touched" not in kinds(service)


def test_context_stays_within_budget_and_touches_only_what_it_used(service):
    record(service, CONVERSATION)
    counter = default_counter()

    # notes as by default: the kitchen's note (about ten tokens) would fit this budget's share, but not beside the
    # puppy's turn, which the question matched better
    ctx = context(service, "puppy", token_budget=20)
    service.flush_touches()

    assert ctx.items and ctx.items[0].turn_id == "D1:1"
    assert ctx.tokens == sum(counter.count(i.line) for i in ctx.items) <= 20
    assert len(ctx.items) < len(CONVERSATION)  # the budget really cut something
    for item in ctx.items:
        assert item.provenance["event_ids"][0] == item.memory_id
        assert item.provenance["turn_id"] == item.turn_id
    [touch] = list(service.log.scan(ScanFilter(kinds=("memory_touched",))))
    assert touch.event.reason == "context"
    assert list(touch.event.memory_ids) == [i.memory_id for i in ctx.items]


def test_replay_rebuilds_equal_projections(service):
    record(service, CONVERSATION)
    search(service, "puppy")
    context(service, "kitchen", token_budget=50)
    before = service.query(c.Digest())  # flushes the touches first

    report = service.admin(c.Replay())

    assert report.equal
    assert report.live == before == report.rebuilt
    assert set(report.live) == {"messages", "lexical", "vectors", "touches", "archive", "notes", "profile", "retention", "episodes", "tiers", "working", "graph", "titles", "feedback", "adjustments", "molt", "erasure", "combined", "lancedb"}
    assert report.events == service.log.count() == 18
    assert search(service, "puppy")[0].turn_id == "D1:1"  # still serves queries after the rebuild


def test_replay_and_backup_are_admin_commands_never_queries(service, tmp_path):
    record(service, CONVERSATION)
    search(service, "puppy")  # a touch waiting to be written
    for admin in (c.Replay(), c.Backup(target=str(tmp_path / "copy"))):
        assert not isinstance(admin, c.Query)
        with pytest.raises(InvalidInputError, match="is no shard query but an admin command"):
            service.query(admin)
    with pytest.raises(InvalidInputError, match="Digest is no admin command"):
        service.admin(c.Digest())
    events = service.log.count()

    report = service.admin(c.Replay())

    assert report.equal and report.events == events + 1  # the pending touch written first, then replayed


def test_replay_detects_a_diverged_projection(service):
    record(service, CONVERSATION)
    service.state.user("acme", "alice").messages.order.reverse()  # corrupt the live view, not the log

    report = service.replay()

    assert not report.equal
    assert report.live["messages"] != report.rebuilt["messages"]
    assert report.live["lexical"] == report.rebuilt["lexical"]


def test_restart_recovers_from_the_log_and_reconciles_lancedb(spec, service):
    record(service, CONVERSATION[:2])
    # An append acknowledged by the log whose LanceDB write never happened (crash in between) ...
    commands = validate_messages(CONVERSATION[2:])
    pending, _ = decide_record(
        service.state, commands, EMBED.encode([c.index_text() for c in commands]), EMBED.model_id, EMBED.dim
    )
    service.log.append(pending)
    # ... and an index row the log does not know.
    service.vectors.add([("acme", "alice", VectorRow("ghost", "ghost-e", 99, EMBED.model_id, np.ones(384, np.float32)))])
    assert service.vectors.count() == 3

    restarted = ShardCore(spec, log=service.log)

    assert restarted.vectors.count() == 4
    assert {m for _, _, m in restarted.vectors.keys()} == set(restarted.state.user("acme", "alice").messages.order)
    assert restarted.replay().equal
    assert search(restarted, "爬山")[0].text == "我喜欢在周末去爬山"


@pytest.mark.parametrize("tenant", ["o'brien", "x' OR tenant <> 'x"])
def test_quotes_in_tenant_ids_do_not_widen_the_vector_filter(service, tenant):
    record(service, [command("victim secret", client_message_id="v1")])
    [own] = record(service, [command("my own note", tenant=tenant, client_message_id="o1")])

    neighbours = service.vectors.search(tenant, "alice", EMBED.encode(["victim secret"])[0], 10)

    assert [memory_id for memory_id, _ in neighbours] == [own["memory_id"]]
    assert [h.text for h in search(service, "victim secret", tenant=tenant, k=10)] == ["my own note"]


def test_a_reply_reinforces_only_the_retrieved_notes_and_turns_it_drew_on(service):
    outcomes = record(service, CONVERSATION)
    memory = service.state.user("acme", "alice")
    [nurse_note] = [n for n in memory.notes.active() if "nurse" in n.text]
    offered = [nurse_note.note_id, outcomes[3]["memory_id"]]  # the nurse note and the kitchen turn
    [used] = service.handle([c.RecordReply(tenant="acme", user_id="alice", reply="Your sister is a nurse in Boston, right?",
                                           memory_ids=tuple(offered), query="sister's job?")])

    assert [u["memory_id"] for u in used] == [nurse_note.note_id]
    assert memory.notes.notes[nurse_note.note_id].uses == 1  # a note used by a reply is reinforced
    touched = [e.event for e in service.log.scan() if e.kind == "memory_touched"][-1]
    assert (touched.reason, touched.memory_ids) == ("used", (nurse_note.note_id,))
    with pytest.raises(InvalidInputError, match="memory_ids"):
        service.handle([c.RecordReply(tenant="acme", user_id="alice", reply="anything", memory_ids=("no-such-id",))])


def test_replies_recorded_together_are_one_transaction_with_each_replys_outcome(service):
    outcomes = record(service, CONVERSATION)
    memory = service.state.user("acme", "alice")
    [nurse_note] = [n for n in memory.notes.active() if "nurse" in n.text]
    kitchen = outcomes[3]["memory_id"]
    reply = lambda text, *ids: c.RecordReply(tenant="acme", user_id="alice", reply=text, memory_ids=ids)  # noqa: E731
    together = c.RecordReplies(replies=(reply("Your sister is a nurse in Boston.", nurse_note.note_id),
                                        reply("The kitchen is yellow now, 厨房是黄色的.", kitchen)))
    [both] = service.handle([together])

    assert [[u["memory_id"] for u in used] for used in both] == [[nurse_note.note_id], [kitchen]]
    touched = [e for e in service.log.scan() if e.kind == "memory_touched"][-2:]
    assert [t.event.memory_ids for t in touched] == [(nurse_note.note_id,), (kitchen,)]
    assert set(service.log.command(together.command_id).event_ids) == {t.event_id for t in touched}  # one record
    written = service.log.count()
    with pytest.raises(InvalidInputError, match="no-such-id"):  # one refused: none written
        service.handle([c.RecordReplies(replies=(reply("Boston.", nurse_note.note_id), reply("x", "no-such-id")))])
    assert service.log.count() == written
