"""The idle warm-up (:mod:`actors.warm`) builds a user's read indexes without writing anything, once per change,
and never loads a user the residency cap keeps on disk."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import numpy as np

from actors import commands as c
from actors.core import ShardCore
from actors.spec import ShardSpec
from actors.reads import search
from actors.warm import IDLE_S, QUERIES, Warmer, has_chinese
from projections.adapters.embedding import HashEmbedder
from projections.queries import key_index, rerank, session_docs
from projections.queries.retrieval import DEFAULT_FUSION
from tests.builders import command
from tests.shard_helpers import EMBED, record

NOW = datetime(2024, 6, 1, tzinfo=UTC)


def core_for(tmp_path, **spec) -> ShardCore:
    return ShardCore(ShardSpec(index=0, log_path=tmp_path / "shard-000.duckdb", lance_dir=tmp_path / "vectors",
                               model_id=HashEmbedder.model_id, dim=384, **spec))


def turns(user: str, n: int) -> list:
    return [command(f"Turn {i} of {user}: we talked about hiking and 西湖 number {i}", i, user_id=user,
                    client_message_id=f"{user}-{i}") for i in range(n)]


def test_warming_builds_the_read_indexes_and_writes_nothing(tmp_path):
    core = core_for(tmp_path)
    record(core, turns("mel", 6) + turns("ann", 4))
    events, digest = core.log.count(), core.digest()
    warmer = Warmer(384)
    assert sorted(warmer.due(core)) == [("acme", "ann"), ("acme", "mel")]
    memory = core.state.user("acme", "mel")
    assert (id(memory), "facts") not in key_index.INDEXES._cache

    for stream in warmer.due(core):
        warmer.warm(core, stream)

    assert warmer.warmed == 2 and warmer.due(core) == []  # nothing changed since: nothing is due
    assert key_index.INDEXES._cache[(id(memory), "facts")][0]() is memory
    assert rerank.TABLES._cache[id(memory)][0]() is memory
    assert session_docs.CONVERSATIONS._cache[id(memory)][0]() is memory
    assert core.log.count() == events and core.digest() == digest and not core._touches  # no touch, no event
    record(core, turns("mel", 7)[6:])  # a new turn of one user: that user is due again
    assert warmer.due(core) == [("acme", "mel")]
    vec = EMBED.encode(["hiking"])[0]
    hits = core.query(c.Search(tenant="acme", user_id="mel", query="hiking", query_vector=vec, k=3, now=NOW))
    assert len(hits) == 3


def test_the_fusion_of_the_last_query_is_the_one_warmed_and_idleness_follows_calls(monkeypatch):
    warmer = Warmer(8)
    assert warmer.fusion == DEFAULT_FUSION and np.isclose(np.linalg.norm(warmer.vector), 1.0)
    fusion = dataclasses.replace(DEFAULT_FUSION, candidates=50)
    query = c.Search(tenant="acme", user_id="mel", query="q", query_vector=np.ones(8, dtype=np.float32) / np.sqrt(8),
                     fusion=fusion)
    clock = [100.0]
    monkeypatch.setattr("actors.warm.time.monotonic", lambda: clock[0])
    warmer.saw([query])
    assert warmer.fusion == fusion != DEFAULT_FUSION and not warmer.idle()
    clock[0] += IDLE_S + 0.1
    assert warmer.idle()
    warmer.saw()  # a command batch
    assert not warmer.idle()


def test_users_outside_the_residency_cap_are_not_loaded_to_be_warmed(tmp_path):
    core = core_for(tmp_path, snapshot_dir=tmp_path / "snapshots", max_resident_users=1)
    record(core, turns("mel", 3))
    record(core, turns("ann", 3))
    loads = core.state.users.loads
    warmer = Warmer(384)
    due = warmer.due(core)
    assert len(due) == len(core.state.users.resident) == 1
    for stream in due:
        warmer.warm(core, stream)
    assert core.state.users.loads == loads and warmer.warmed == 1


def test_the_chinese_query_warms_only_users_with_chinese_terms(tmp_path, monkeypatch):
    core = core_for(tmp_path)
    record(core, turns("mel", 3))  # "... 西湖 ...": Chinese terms
    record(core, [command(f"Turn {i} of ann: we talked about hiking", i, user_id="ann", client_message_id=f"a-{i}")
                  for i in range(3)])
    asked = []
    real = search

    def spy(core_, q):
        asked.append((q.user_id, q.query))
        return real(core_, q)

    monkeypatch.setattr("actors.warm.search", spy)
    warmer = Warmer(384)
    for stream in warmer.due(core):
        warmer.warm(core, stream)
    assert sorted(asked) == sorted([("mel", QUERIES[0]), ("mel", QUERIES[1]), ("ann", QUERIES[0])])
    assert has_chinese(core.state.user("acme", "mel")) and not has_chinese(core.state.user("acme", "ann"))


def test_an_ingest_lease_keeps_the_shard_quiet_until_it_ends_or_runs_out(monkeypatch):
    warmer = Warmer(8)
    clock = [100.0]
    monkeypatch.setattr("actors.warm.time.monotonic", lambda: clock[0])
    warmer.quiet(60.0)  # an ingest of the store started (elsewhere): a call too
    clock[0] += IDLE_S + 1
    assert not warmer.idle()  # idle by the calls, but the lease holds
    warmer.quiet(60.0)  # renewed at the next chunk
    clock[0] += 59
    assert not warmer.idle()
    clock[0] += 2  # the driver stopped renewing: the lease runs out
    assert warmer.idle()
    warmer.quiet(60.0)
    warmer.quiet(0.0)  # the ingest ended: idle time counts from that call
    clock[0] += IDLE_S - 0.1
    assert not warmer.idle()
    clock[0] += 0.2
    assert warmer.idle()
