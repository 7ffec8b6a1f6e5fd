"""The routing table (plain Python): least-loaded assignment, durable and stable across reloads."""

from __future__ import annotations

import json

import pytest

from actors.routing import RoutingTable

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
