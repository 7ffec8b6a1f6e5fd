"""The routing table (plain Python): least-loaded assignment, durable and stable across reloads."""

from __future__ import annotations

import json

import pytest

from actors.routing import RoutingTable, slack

A, B, C, D = ("acme", "alice"), ("acme", "bob"), ("globex", "alice"), ("initech", "carol")


@pytest.fixture
def path(tmp_path):
    return tmp_path / "store" / "directory.jsonl"


def test_new_streams_go_to_the_least_loaded_shard_lowest_index_first(path):
    table = RoutingTable(path, 3)

    assert table.route([A, B]) == [0, 1]
    assert table.route([C, A, D]) == [2, 0, 0]
    assert table.assignments() == {A: 0, B: 1, C: 2, D: 0}


def test_a_stream_repeated_in_one_call_is_assigned_once(path):
    table = RoutingTable(path, 2)
    assert table.route([A, A, B, A]) == [0, 0, 1, 0]
    assert len(path.read_text().splitlines()) == 2


def test_assignments_are_persisted_and_survive_a_reload(path):
    RoutingTable(path, 2).route([A, B, C])

    reloaded = RoutingTable(path, 2)

    assert reloaded.assignments() == {A: 0, B: 1, C: 0}
    assert reloaded.route([D, A]) == [1, 0]  # the load counted from the file: shard 1 has fewer streams
    assert [json.loads(line) for line in path.read_text().splitlines()] == [
        {"tenant": "acme", "user_id": "alice", "shard": 0},
        {"tenant": "acme", "user_id": "bob", "shard": 1},
        {"tenant": "globex", "user_id": "alice", "shard": 0},
        {"tenant": "initech", "user_id": "carol", "shard": 1},
    ]


def test_known_streams_write_nothing(path):
    table = RoutingTable(path, 2)
    table.route([A, B])
    before = path.read_bytes()
    assert table.route([B, A]) == [1, 0]
    assert path.read_bytes() == before


def test_non_ascii_ids_round_trip(path):
    RoutingTable(path, 2).route([("租户", "用户"), ("café", "zoë")])
    assert RoutingTable(path, 2).assignments() == {("租户", "用户"): 0, ("café", "zoë"): 1}


def test_a_torn_last_line_is_ignored(path):
    RoutingTable(path, 2).route([A, B])
    with path.open("a") as fh:
        fh.write('{"tenant": "globex", "us')  # the process died mid-write: never acknowledged

    assert RoutingTable(path, 2).assignments() == {A: 0, B: 1}


def test_assignments_made_after_a_torn_line_survive_the_next_reload(path):
    RoutingTable(path, 2).route([A, B])
    with path.open("a") as fh:
        fh.write('{"tenant": "globex", "us')
    after_crash = RoutingTable(path, 2)
    assert after_crash.route([C, D]) == [0, 1]  # acknowledged: the shards now hold C's and D's memories

    assert RoutingTable(path, 2).assignments() == {A: 0, B: 1, C: 0, D: 1}


def test_at_least_one_shard(path):
    with pytest.raises(ValueError, match="at least 1"):
        RoutingTable(path, 0)


def test_one_tenants_users_spread_over_the_shards_one_by_one(path):
    table = RoutingTable(path, 3)
    assert table.route([("acme", f"u{i}") for i in range(7)]) == [0, 1, 2, 0, 1, 2, 0]


def test_tenants_keep_to_shards_of_their_own_while_the_balance_allows(path):
    # three tenants on two shards, their users arriving interleaved (as a benchmark deals its samples)
    streams = [("t0", "a"), ("t1", "b"), ("t2", "c"), ("t0", "d"), ("t1", "e")]
    shards = RoutingTable(path, 2).route(streams)
    by_tenant = {}
    for (tenant, _), shard in zip(streams, shards):
        by_tenant.setdefault(tenant, set()).add(shard)
    assert by_tenant["t0"] == {0} and by_tenant["t1"] == {1}  # the first two tenants never share a shard
    assert sorted(shards.count(i) for i in range(2)) == [2, 3]  # as even as one by one


def test_a_new_tenant_goes_where_the_fewest_other_tenants_are(path):
    table = RoutingTable(path, 3)
    table.route([("acme", "a"), ("acme", "b"), ("acme", "c"), ("globex", "g")])  # acme on 0, 1, 2; globex joins 0
    assert table.route([("initech", "i")]) == [1]  # shards 1 and 2 hold one other tenant, 0 holds two


@pytest.mark.parametrize("tenants", [2, 5, 40])
def test_the_shards_stay_within_the_slack_of_each_other(path, tenants):
    table = RoutingTable(path, 4)
    streams = [(f"t{i % tenants}", f"u{i}") for i in range(400)]
    for start in range(0, len(streams), 7):
        table.route(streams[start:start + 7])
    load = [list(table.assignments().values()).count(i) for i in range(4)]
    assert sum(load) == 400
    assert max(load) - min(load) <= slack(min(load)) + 1
