"""What the memory inspector reads: score terms that add up to the fused score, a retention curve that agrees
with the retention fold at every sample, time-travel searches and contexts, and the one-memory read of a shard."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path

import pytest

from actors import commands as c
from actors.core import ShardCore
from actors.spec import ShardSpec
from events.errors import InvalidInputError
from palimpsest.formats import read_jsonl
from projections.adapters.embedding import HashEmbedder
from projections.folds.policy import DEFAULT_POLICY
from projections.folds.retention import RetentionState, as_of, assess, fold, retention, retention_table
from projections.queries.retention_curve import curve, projected_archival
from projections.queries.retrieval import DEFAULT_FUSION
from projections.queries.score_terms import TERMS, score_terms
from tests.retention_builders import classified, day, remembered, timeline, touch
from tests.shard_helpers import context, record, search

QUERIES = ["What does Maya drink in the morning?", "周末去哪里爬山？", "When is the Atlas launch?",
           "Which database did Maya choose and which editor does she use?", "What did Maya decide about Atlas?"]
JUNE = datetime(2024, 6, 1, tzinfo=UTC)
MARCH_5 = datetime(2024, 3, 5, tzinfo=UTC)


@pytest.fixture(scope="module")
def core(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("inspector-core")
    core = ShardCore(ShardSpec(index=0, log_path=tmp / "shard-000.duckdb", lance_dir=tmp / "vectors",
                               model_id=HashEmbedder.model_id, dim=384))
    with resources.as_file(resources.files("palimpsest") / "data" / "sample_dialogue.jsonl") as path:
        record(core, read_jsonl(Path(path)))
    # notes at most a quarter of the budget, as this fixture was written for: the turns are shown, not stated by notes
    context(core, "What does Maya drink in the morning?", 200, tenant="demo", user_id="maya", now=JUNE,
            fusion=replace(DEFAULT_FUSION, note_share=0.25))
    core.flush_touches()  # the context's touches are accesses: the curve below has reinforcement points
    yield core
    core.close()


def test_score_terms_add_up_to_the_fused_score_of_every_hit(core):
    seen = set()
    for query in QUERIES:
        hits = search(core, query, tenant="demo", user_id="maya", k=10, now=JUNE)
        assert hits, query
        for hit in hits:
            terms = score_terms(hit.breakdown, query, DEFAULT_FUSION)
            assert list(terms) == [t for t in TERMS if t in terms]
            assert sum(terms.values()) == pytest.approx(hit.breakdown["rrf"], abs=1e-6), (query, hit.breakdown)
            seen.update(terms)
    # English queries rank the turns by their fact key (the plain BM25 list is not searched by default)
    assert {"dense", "facts", "context", "episode", "note", "retention", "neighbour"} <= seen, seen


def test_a_past_now_leaves_out_what_was_recorded_after_it(core):
    for query in QUERIES:
        hits = search(core, query, tenant="demo", user_id="maya", k=20, now=MARCH_5)
        assert all(h.occurred_at <= MARCH_5 for h in hits), query
    later = search(core, "coffee database MySQL Neovim", tenant="demo", user_id="maya", k=20, now=JUNE)
    assert any(h.occurred_at > MARCH_5 for h in later)
    ctx = context(core, "Which database does Atlas use?", 400, tenant="demo", user_id="maya", now=MARCH_5)
    assert "MySQL" not in ctx.text and "PostgreSQL" in ctx.text  # the switch (and its note) came in April
    assert "MySQL" in context(core, "Which database does Atlas use?", 400, tenant="demo", user_id="maya", now=JUNE).text


def test_the_curve_is_the_retention_fold_at_every_sample():
    envs = timeline((0, "m1", remembered("I prefer green tea", "c1")), (0, "k1", classified("m1", "preference")),
                    (10, "t1", touch("m1", reason="context")), (12, "t2", touch("m1", reason="search_hit")),
                    (30, "t3", touch("m1", reason="used")))
    state = fold(RetentionState(), envs, DEFAULT_POLICY)
    item = state.items["m1"]
    drawn = curve(item, DEFAULT_POLICY, day(40), points=50)
    for iso, value in drawn["points"]:
        at = datetime.fromisoformat(iso)
        [row] = retention_table(state, at, DEFAULT_POLICY)
        assert value == pytest.approx(row.retention, abs=1e-6), iso
    assert [a["at"] for a in drawn["accesses"]] == [day(10).isoformat(), day(30).isoformat()]  # a search hit is no access
    for access in drawn["accesses"]:
        at = datetime.fromisoformat(access["at"])
        before = retention(as_of(item, at - timedelta(seconds=1), DEFAULT_POLICY), at - timedelta(seconds=1), DEFAULT_POLICY)
        assert access["retention"] > before  # the curve jumps up at each counted access
    when = datetime.fromisoformat(drawn["archive_projected"])
    assert assess(item, when, DEFAULT_POLICY).archive and not assess(item, when - timedelta(seconds=2), DEFAULT_POLICY).archive
    assert datetime.fromisoformat(drawn["end"]) > when and drawn["floor"] == DEFAULT_POLICY.archive_floor


def test_an_exempt_memory_is_never_archived():
    envs = timeline((0, "m1", remembered("System: answer in English", "c1", exempt=True)))
    item = fold(RetentionState(), envs, DEFAULT_POLICY).items["m1"]
    assert projected_archival(item, DEFAULT_POLICY) is None
    assert {r for _, r in curve(item, DEFAULT_POLICY, day(5))["points"]} == {DEFAULT_POLICY.base_retention}


def test_the_shard_reads_one_memory_with_its_curve_and_touches(core):
    [hit] = search(core, "green tea in the morning", tenant="demo", user_id="maya", k=1, now=JUNE)
    card = core.query(c.MemoryRetention(tenant="demo", user_id="maya", memory_id=hit.memory_id, now=JUNE))
    assert card["memory"]["text"] == hit.text and card["memory"]["turn_id"] == hit.turn_id
    rows = {r["memory_id"]: r for r in core.query(c.Retention(tenant="demo", user_id="maya", now=JUNE))}
    assert card["retention"]["retention"] == pytest.approx(rows[hit.memory_id]["retention"])
    assert card["touches"]["count"] >= 1 and card["curve"]["now"] == JUNE.isoformat()
    before = core.query(c.MemoryRetention(tenant="demo", user_id="maya", memory_id=hit.memory_id,
                                          now=datetime(2024, 3, 1, tzinfo=UTC)))
    assert before["retention"] is None  # time travel: the memory did not exist yet
    for tenant, user, memory_id in (("demo", "maya", "no-such-id"), ("beta", "maya", hit.memory_id)):
        with pytest.raises(InvalidInputError, match="matches no memory of this user"):
            core.query(c.MemoryRetention(tenant=tenant, user_id=user, memory_id=memory_id, now=JUNE))


def test_after_a_policy_change_the_terms_the_shard_sends_still_add_up_to_the_score(tmp_path):
    """The shard ranks with the user's learned fusion; the terms come from that fusion, not the store's default."""
    from events.envelope import PendingEvent
    from events.learning_events import PolicyChanged

    core = ShardCore(ShardSpec(index=0, log_path=tmp_path / "shard-000.duckdb", lance_dir=tmp_path / "vectors",
                               model_id=HashEmbedder.model_id, dim=384))
    with resources.as_file(resources.files("palimpsest") / "data" / "sample_dialogue.jsonl") as path:
        record(core, read_jsonl(Path(path)))
    change = PolicyChanged(parameters={"lexical_weight": 3.0, "dense_weight": 0.4}, previous={"lexical_weight": 1.3,
                           "dense_weight": 1.0}, metric="m", before=0.1, after=0.2, queries=3, at=MARCH_5,
                           reason="test", controller="molt-v1")
    core.commit([PendingEvent("demo", "maya", "change-1", change)])
    moved = 0
    for query in QUERIES:
        for hit in search(core, query, tenant="demo", user_id="maya", k=10, now=JUNE):
            assert sum(hit.terms.values()) == pytest.approx(hit.breakdown["rrf"], abs=1e-6), (query, hit.breakdown)
            moved += hit.terms != score_terms(hit.breakdown, query, DEFAULT_FUSION)
    assert moved  # the default fusion's terms would not have added up
    core.close()
