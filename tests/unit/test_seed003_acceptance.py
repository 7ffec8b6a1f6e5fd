"""Seed 003 §11, the acceptance table, row by row, on one shard (no Ray, hash embedder):

| check | expected |
|---|---|
| episodic importance decays | falls over time by itself |
| frequently reviewed memories are reinforced | their weight rises |
| abstraction nodes are generated | when related M3 fragments are dense |
| conflicting versions are kept | different sources, same topic |
| Molt policy adjustment | the recall-effectiveness metric improves |

and the explainability lines (why a memory is kept, its source events, when it expires and was reinforced),
plus: a replay reproduces every adjustment and policy change without a language model (digests equal).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from actors import commands as c
from actors.consolidation import run_consolidation
from actors.core import ShardCore
from actors.spec import ShardSpec
from projections.adapters.embedding import HashEmbedder
from projections.queries.retrieval import DEFAULT_FUSION
from tests.builders import command
from tests.shard_helpers import context, record
from tests.unit.test_command_retries import staged
from tests.unit.test_molt import AGENT_SEARCH, QUERIES, REPLY, TURNS, TURNS_ONLY, molt_command

T = datetime(2024, 5, 1, tzinfo=UTC)


def spec(path) -> ShardSpec:
    return ShardSpec(index=0, log_path=path / "s.duckdb", lance_dir=path / "v", model_id=HashEmbedder.model_id,
                     dim=384)


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    return tmp_path_factory.mktemp("seed003")


@pytest.fixture(scope="module")
def core(path):
    core = ShardCore(spec(path))
    yield core
    core.close()


def retention_of(core, user_id: str, memory_id: str, now: datetime) -> dict:
    return next(r for r in core.query(c.Retention(tenant="acme", user_id=user_id, now=now))
                if r["memory_id"] == memory_id)


def test_row_1_episodic_importance_decays_over_time_by_itself(core):
    [m] = record(core, [command("We talked about the weather at the bus stop", 0, user_id="row1")])
    week, month = (retention_of(core, "row1", m["memory_id"], T + timedelta(days=d))["retention"] for d in (7, 30))
    assert 0 < month < week < 1


def test_row_2_frequently_reviewed_memories_are_reinforced(core):
    a, b = record(core, [command("My locker code at the gym is 4512", 0, user_id="row2"),
                         command("My locker code at the pool is 7781", 1, user_id="row2")])
    for _ in range(3):  # reviewed: each reply that draws on it reinforces it
        core.handle([c.RecordReply(tenant="acme", user_id="row2", reply="Your gym locker code is 4512",
                                   memory_ids=(a["memory_id"],), query="locker code")])
    later = datetime.now(UTC) + timedelta(days=20)
    reviewed, idle = (retention_of(core, "row2", x["memory_id"], later) for x in (a, b))
    assert reviewed["access_count"] >= 3 and idle["access_count"] == 0
    assert reviewed["memory_type"] == idle["memory_type"]  # twins: only the reviews differ
    assert reviewed["stability"] > idle["stability"] and reviewed["retention"] > idle["retention"]


def test_row_3_dense_related_fragments_trigger_an_abstraction_node(core):
    record(core, [command("I lift weights at the gym", 0, user_id="row3")])
    memories = tuple(staged(topic="workout", object="weights", attributes={"place": "gym"},
                            occurred_at=(T + timedelta(days=i)).isoformat()) for i in range(1, 5))
    core.handle([c.StageGraphMemories(tenant="acme", user_id="row3", memories=memories)])
    [job] = core.query(c.GraphJobs(tenant="acme", user_id="row3", decay=False))
    events = run_consolidation([job], parallel=False)[("acme", "row3")]
    core.handle([c.ApplyConsolidation(tenant="acme", user_id="row3", events=tuple(events))])
    [conclusion] = core.state.user("acme", "row3").graph.current_conclusions().values()
    assert len(conclusion.source_memory_ids) >= 3 and 0 < conclusion.confidence <= 1


def test_row_4_conflicting_versions_from_different_sources_are_both_kept(core):
    first, second = record(core, [command("I prefer green tea in the morning", 0, user_id="row4"),
                                  command("I switched to coffee in the morning", 60 * 24 * 30, user_id="row4")])
    notes = core.query(c.Notes(tenant="acme", user_id="row4", now=T + timedelta(days=60), include_inactive=True))
    chain = core.query(c.NoteHistory(note_id=notes[-1]["note_id"], now=T + timedelta(days=60)))["chain"]
    assert [v["status"] for v in chain] == ["superseded", "active"]  # the old version is kept, closed
    assert [[s["memory_id"] for s in v["sources"]] for v in chain] == [[first["memory_id"]], [second["memory_id"]]]


def test_row_5_a_molt_adjustment_improves_the_recall_effectiveness_metric(core):
    record(core, [command(text, i, user_id="kai") for i, text in enumerate(TURNS)])
    for query in QUERIES:
        ctx = context(core, AGENT_SEARCH, 72, user_id="kai", fusion=TURNS_ONLY)  # six turns under their day's date
        core.handle([c.RecordReply(tenant="acme", user_id="kai", reply=REPLY, query=query,
                                   memory_ids=tuple(i.memory_id for i in ctx.items))])
    [out] = core.handle([molt_command(core, "kai")])
    assert out["triggers"] and out["after"] > out["before"]  # measured by counterfactual replay
    [change] = core.query(c.PolicyHistory(tenant="acme", user_id="kai"))["history"]
    assert change["status"] == "applied" and change["change_id"] == out["event_id"]


def test_explainability_why_kept_source_events_expiry_and_reinforcement(core):
    [m] = record(core, [command("We decided to deploy on Fridays only", 0, user_id="row6")])
    # a turn a note stands in for is not shown, so not touched: no notes in this small budget (its decision note,
    # about ten tokens, would fit in a quarter of it)
    context(core, "deploy on Fridays", 60, user_id="row6", fusion=replace(DEFAULT_FUSION, note_share=0.0))
    core.flush_touches()
    x = core.query(c.Explain(tenant="acme", user_id="row6", memory_id=m["memory_id"],
                             at=datetime.now(UTC) + timedelta(minutes=1)))
    assert [e["kind"] for e in x["source_events"]][:3] == ["message_recorded", "message_classified",
                                                           "message_embedded"]
    r = x["retention"][m["memory_id"]]
    assert r["reinforced_at"] and r["expected_archival"] and r["why"].startswith("type ")
    assert any(m["memory_id"][:12] in line for line in x["status"])  # kept or archived, and why


def test_replay_reproduces_every_adjustment_and_policy_change_without_a_model(core):
    # runs last: the store then holds row 5's policy change, and these two corrections add adjustments
    ids = [i.memory_id for i in context(core, "pool locker code", 200, user_id="row2").items]
    for text in ("No, that's wrong.", "That's wrong, not what I asked"):
        core.handle([c.JudgeFeedback(tenant="acme", user_id="row2", user_input=text, memory_ids=tuple(ids),
                                     agent_response="Your pool locker code is 7781 and the gym locker code is 4512")])
    learned = [e.kind for e in core.log.scan() if e.kind in ("memory_adjusted", "policy_changed")]
    assert "memory_adjusted" in learned and "policy_changed" in learned
    live = core.query(c.Digest())
    report = core.admin(c.Replay())  # every projection rebuilt from event 0, snapshots ignored, no model configured
    assert core.deps.llm is None and report.equal
    assert report.rebuilt["adjustments"] == live["adjustments"] and report.rebuilt["molt"] == live["molt"]
