"""Every command kind is idempotent under retries: the same command (same id) sent twice has one effect and
gives the same outcome, also when the shard restarted in between (a crash after the commit, before the reply).

The shard runs on a real DuckDB log file of an encrypted store (payloads and outcomes sealed per user);
"restart" is a new :class:`ShardCore` on the same files, as Ray does when it restarts a dead actor and
retries the call in flight with the same arguments.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from actors import commands as c
from actors.consolidation import run_consolidation
from actors.core import DECIDERS, ShardCore
from actors.spec import ShardSpec
from events.envelope import PendingEvent
from events.errors import InvalidInputError
from events.learning_events import PolicyChanged
from projections.adapters.embedding import HashEmbedder
from projections.decisions.graph_staging import staged_event
from projections.rules.tool_calls import validate_tool_call
from tests.builders import command
from tests.shard_helpers import EMBED, record, record_command

NOW = datetime(2024, 6, 1, tzinfo=UTC)
MASTER_KEY = bytes(range(32))
USER = {"tenant": "acme", "user_id": "mel"}
TURNS = [
    command("I adopted a puppy named Biscuit last week", 0, user_id="mel", client_message_id="t1"),
    command("My sister works as a nurse in Boston", 1, user_id="mel", client_message_id="t2"),
    command("I prefer green tea in the morning", 2, user_id="mel", client_message_id="t3"),
]


def spec_for(tmp_path) -> ShardSpec:
    return ShardSpec(index=0, log_path=tmp_path / "shard-000.duckdb", lance_dir=tmp_path / "vectors",
                     model_id=HashEmbedder.model_id, dim=384, key_store=tmp_path / "shard-000.keys",
                     master_key=MASTER_KEY)


def staged(embedded: bool = True, **arguments):
    call = validate_tool_call("create_memory", {"subject": "Mel", "memory_type": "event", **arguments}, reference=NOW)
    labels = [x for x in (call.topic, call.object) if x] if embedded else []
    return staged_event(call.model_dump(), dict(zip(labels, EMBED.encode(labels))), extractor="tool:create_memory",
                        occurred_at=NOW)


def consolidation(core: ShardCore) -> c.ApplyConsolidation:
    [job] = core.query(c.GraphJobs(decay=False))
    events = run_consolidation([job], parallel=False)[("acme", "mel")]
    return c.ApplyConsolidation(**USER, events=tuple(events))


def prepared(core: ShardCore) -> dict[str, c.Command]:
    """A store in which every command kind has something to do, and one command of each kind."""
    outcomes = record(core, TURNS)
    ids = tuple(o["memory_id"] for o in outcomes)
    core.handle([c.StageGraphMemories(**USER, memories=(staged(topic="go", object="camping trip"),
                                                        staged(topic="plan", object="camping trips"),
                                                        staged(topic="visit", object="science museum")))])
    core.handle([consolidation(core)])
    [merge] = core.query(c.GraphMerges(**USER))
    core.handle([c.ArchiveMemories(**USER, memory_ids=ids[1:2], now=NOW, reason="setup")])
    core.handle([c.StageGraphMemories(**USER, memories=(staged(topic="book", object="camping trips"),
                                                        staged(False, topic="swim", object="mountain lake")))])
    change = PolicyChanged(parameters={"retention_weight": 0.3}, previous={"retention_weight": 0.1}, metric="m",
                           before=0.1, after=0.2, queries=3, at=NOW, reason="setup", controller="molt-v1")
    core.commit([PendingEvent("acme", "mel", "change-1", change)])
    core.handle([c.PutItem(**USER, collection="prefs", key="food", value_json='{"food": "noodles"}', text="noodles",
                           message=None, vector=None, model_id=EMBED.model_id, now=NOW)])
    [missing] = core.query(c.MissingEmbeddings(model_id="model-c", tenant="acme", user_id="mel"))
    mids, texts = map(tuple, zip(*missing["messages"]))
    core.handle([c.RecordEmbeddings(**USER, model_id="model-c", message_ids=mids, input_texts=texts,
                                    vectors=EMBED.encode(list(texts)))])  # the switch below has all it needs
    vector = EMBED.encode(["sister"])[0]
    [judged] = core.handle([c.JudgeFeedback(**USER, user_input="That's wrong", agent_response="Your sister is a nurse",
                                            memory_ids=ids[1:2], now=NOW)])
    return {
        "RecordMessages": record_command([command("We repainted the kitchen yellow", 5, user_id="mel"),
                                          command("我喜欢在周末去爬山", 6, user_id="mel")]),
        "StageGraphMemories": c.StageGraphMemories(**USER, memories=(staged(topic="visit", object="Boston"),)),
        "RecordLabelVectors": c.RecordLabelVectors(**USER, labels=("swim", "mountain lake"),
                                                   vectors=EMBED.encode(["swim", "mountain lake"]),
                                                   model_id=HashEmbedder.model_id),
        "LinkMemories": c.LinkMemories(**USER, source_vector=EMBED.encode(["camping trip"])[0],
                                       target_vector=EMBED.encode(["science museum"])[0], relation_type="reference",
                                       relation="before", importance=0.5, now=NOW, reason="test"),
        "ApplyConsolidation": consolidation(core),
        "Unmerge": c.Unmerge(**USER, merge_id=merge["merge_id"], reason="two different things"),
        "SweepArchive": c.SweepArchive(now=datetime(2030, 1, 1, tzinfo=UTC)),
        "ArchiveMemories": c.ArchiveMemories(**USER, memory_ids=ids[:1], now=NOW, reason="by hand"),
        "RestoreMemories": c.RestoreMemories(**USER, memory_ids=ids[1:2], now=NOW, reason="by hand"),
        "RecordReply": c.RecordReply(**USER, reply="Your sister is a nurse in Boston", memory_ids=ids[1:2]),
        "RecordReplies": c.RecordReplies(replies=(
            c.RecordReply(**USER, reply="Your sister is a nurse in Boston", memory_ids=ids[1:2]),
            c.RecordReply(**USER, reply="You repainted the kitchen", memory_ids=ids[:1]))),
        "RecordTurns": c.RecordTurns(
            messages=record_command([command("Where should we go hiking?", 7, user_id="mel"),
                                     command("周末去黄山吧", 8, user_id="mel", role="assistant")]),
            replies=(c.RecordReply(**USER, reply="Your sister is a nurse in Boston", memory_ids=ids[1:2]),)),
        "ReviewNotes": c.ReviewNotes(now=datetime(2026, 1, 1, tzinfo=UTC)),
        "JudgeFeedback": c.JudgeFeedback(**USER, user_input="不对，我说过她在芝加哥", agent_response="Boston",
                                         memory_ids=ids[1:2]),
        "ForgetUser": c.ForgetUser(**USER, now=NOW),
        "RevertAdjustment": c.RevertAdjustment(**USER, adjustment_id=judged["adjustments"][0]["adjustment_id"],
                                               reason="by hand", now=NOW),
        "Molt": c.Molt(**USER, now=NOW, force=True, queries=tuple(("sister", vector, NOW, ids[1:2]) for _ in range(3))),
        "RevertPolicy": c.RevertPolicy(**USER, change_id="change-1", reason="by hand", now=NOW),
        "RecordEmbeddings": c.RecordEmbeddings(**USER, model_id="model-b", message_ids=mids, input_texts=texts,
                                               vectors=EMBED.encode(list(texts)), labels=("swim", "mountain lake"),
                                               label_vectors=EMBED.encode(["swim", "mountain lake"])),
        "PutItem": c.PutItem(**USER, collection="prefs", key="drink", value_json='{"drink": "green tea"}',
                             text="green tea", message=None, vector=None, model_id=EMBED.model_id, now=NOW),
        "DeleteItem": c.DeleteItem(**USER, collection="prefs", key="food", now=NOW),
        "SwitchEmbedder": c.SwitchEmbedder(embedder="openai:model-c", model_id="model-c", dim=384, tenant="acme",
                                           user_id="mel"),
    }


KINDS = ["RecordMessages", "StageGraphMemories", "RecordLabelVectors", "LinkMemories", "ApplyConsolidation", "Unmerge",
         "SweepArchive",
         "ArchiveMemories", "RestoreMemories", "RecordReply", "RecordReplies", "RecordTurns", "ReviewNotes", "JudgeFeedback",
         "RevertAdjustment", "Molt", "RevertPolicy", "ForgetUser", "RecordEmbeddings", "SwitchEmbedder", "PutItem",
         "DeleteItem"]


def test_every_command_kind_is_covered():
    assert sorted(k.__name__ for k in DECIDERS) == sorted(KINDS)


@pytest.mark.parametrize("restart", [False, True], ids=["same-process", "after-restart"])
@pytest.mark.parametrize("kind", KINDS)
def test_a_retried_command_has_one_effect_and_the_same_outcome(tmp_path, kind, restart):
    core = ShardCore(spec_for(tmp_path))
    cmd = prepared(core)[kind]
    before = core.log.count()

    [first] = core.handle([cmd])
    after_first = (core.log.count(), core.query(c.Digest()))
    assert after_first[0] > before or kind in ("SweepArchive", "ReviewNotes")  # the first one did something
    if restart:
        core.close()
        core = ShardCore(spec_for(tmp_path))
    [again] = core.handle([cmd])

    assert again == first
    assert (core.log.count(), core.query(c.Digest())) == after_first
    assert core.admin(c.Replay()).equal
    core.close()


def test_record_messages_retried_reports_its_messages_as_created_not_as_duplicates(tmp_path):
    core = ShardCore(spec_for(tmp_path))
    cmd = record_command(TURNS)
    [first] = core.handle([cmd])
    [again] = core.handle([cmd])
    [resent] = core.handle([record_command(TURNS)])  # a new command with the same messages: duplicates

    assert [o["created"] for o in first] == [o["created"] for o in again] == [True] * 3
    assert [o["created"] for o in resent] == [False] * 3
    assert [o["memory_id"] for o in resent] == [o["memory_id"] for o in first]
    core.close()


def test_a_command_id_reused_for_another_kind_is_refused(tmp_path):
    core = ShardCore(spec_for(tmp_path))
    [outcome] = record(core, TURNS[:1])
    core.handle([c.ArchiveMemories(**USER, command_id="same", memory_ids=(outcome["memory_id"],), now=NOW,
                                   reason="x")])
    with pytest.raises(InvalidInputError, match="command_id"):
        core.handle([c.RestoreMemories(**USER, command_id="same", memory_ids=(outcome["memory_id"],), now=NOW,
                                       reason="x")])
    core.close()


def test_a_rejected_command_records_nothing_and_can_be_sent_again_once_valid(tmp_path):
    core = ShardCore(spec_for(tmp_path))
    [outcome] = record(core, TURNS[:1])
    restore = c.RestoreMemories(**USER, memory_ids=(outcome["memory_id"],), now=NOW, reason="x")
    before = core.log.count()
    with pytest.raises(InvalidInputError, match="not archived"):
        core.handle([restore])
    assert core.log.count() == before and core.log.command(restore.command_id) is None
    core.handle([c.ArchiveMemories(**USER, memory_ids=(outcome["memory_id"],), now=NOW, reason="x")])
    assert core.handle([restore]) == [[outcome["memory_id"]]]
    core.close()


def test_a_fold_that_fails_after_the_append_leaves_no_user_behind_the_log(tmp_path, monkeypatch):
    # The log holds the events once appended; a fold that then raised (a float overflow did, in a benchmark) used
    # to leave the user's projections behind the log, and every later write to that user failed its expected-head
    # check. Now the user is loaded again from the log on next use.
    from projections.folds import state as shard_state

    core = ShardCore(spec_for(tmp_path))
    record(core, TURNS[:1])
    lexical = shard_state.PROJECTIONS["lexical"]

    def broken(value, env):
        raise MemoryError("injected")

    monkeypatch.setitem(shard_state.PROJECTIONS, "lexical", broken)
    cmd = record_command(TURNS[1:2])
    with pytest.raises(MemoryError):
        core.handle([cmd])
    monkeypatch.setitem(shard_state.PROJECTIONS, "lexical", lexical)

    [again] = core.handle([cmd])  # the caller's retry: the recorded outcome, nothing written twice
    [third] = record(core, TURNS[2:3])  # later writes succeed
    assert [o["created"] for o in again] == [True] and third["created"]
    assert [m.text for m in core.state.users[("acme", "mel")].messages.by_id.values()] == [t["text"] for t in TURNS]
    hits = core.query(c.Search(**USER, query="nurse sister", query_vector=EMBED.encode(["nurse sister"])[0], k=3))
    assert hits[0].memory_id == again[0]["memory_id"]  # its vector reached LanceDB
    assert core.admin(c.Replay()).equal
    core.close()
