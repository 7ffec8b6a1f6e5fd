"""Store settings at ``Memory.open``: recorded in ``store.json``, read back on the next open, validated with
clear errors; snapshots written on close make the next open fold nothing, and opening writes no event."""

from __future__ import annotations

import json

import pytest

from events.errors import InvalidInputError, StoreError
from palimpsest import Memory
from projections.folds.policy import DEFAULT_POLICY
from tests.builders import command

pytestmark = pytest.mark.integration


def turns(n: int, user: str = "alice") -> list[dict]:
    return [command(f"{user} turn {i}: we talked about the river walk number {i}", i, user_id=user,
                    client_message_id=f"{user}-{i}") for i in range(n)]


def test_settings_are_recorded_reread_and_changed_only_when_given(ray_cluster, tmp_path):
    path = tmp_path / "store"
    slower = DEFAULT_POLICY.replace(name="slower", reinforcement_factor=2.0)
    with Memory.open(path, num_shards=1, embedder="hash", retention_policy=slower, max_resident_users=2) as mem:
        mem.add_messages(turns(3) + turns(3, "bob") + turns(3, "cy"))
        assert mem.settings.retention_policy.name == "slower"
    recorded = json.loads((path / "store.json").read_text())["settings"]
    assert recorded["retention_policy"]["name"] == "slower" and recorded["max_resident_users"] == 2

    with Memory.open(path) as mem:  # nothing given: what store.json says
        assert mem.settings.retention_policy.digest() == slower.digest()
        stats = mem.stats()["shards"][0]
        assert stats["users"] == 3 and stats["resident_users"] <= 2
        assert [h.text for h in mem.search("acme", "cy", "river walk number 2", k=1)] == [
            "cy turn 2: we talked about the river walk number 2"]
        assert all(r.equal for r in mem.replay())

    with Memory.open(path, max_resident_users=None) as mem:
        assert mem.settings.max_resident_users is None
    assert json.loads((path / "store.json").read_text())["settings"]["max_resident_users"] is None


def test_opening_a_store_writes_no_event_and_starts_from_snapshots(ray_cluster, tmp_path):
    path = tmp_path / "store"
    with Memory.open(path, num_shards=1, embedder="hash") as mem:
        mem.add_messages(turns(30))
        mem.search("acme", "alice", "river walk", k=3)
        events = mem.stats()["events"]
    with Memory.open(path) as mem:
        stats = mem.stats()
        assert stats["events"] == events  # opening wrote nothing (no follow-up decided at start)
        assert stats["shards"][0]["cold_loads"] == 0
    assert len(list((path / "snapshots" / "shard-000").glob("*.snap"))) == 1


@pytest.mark.parametrize("settings, field", [
    ({"max_resident_users": 0}, "settings"),
    ({"snapshot_every": "often"}, "settings"),
    ({"retention_polcy": DEFAULT_POLICY}, "retention_polcy"),
])
def test_bad_settings_are_refused_naming_the_field(ray_cluster, tmp_path, settings, field):
    with pytest.raises(InvalidInputError) as info:
        Memory.open(tmp_path / "store", num_shards=1, embedder="hash", **settings)
    assert info.value.problems[0][0] == field


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"num_shards": 1, "format_version": 1, "colour": "red"}',
                                  '{"num_shards": 1, "format_version": 1, "settings": {"tiers": {"nope": 1}}}'])
def test_a_hand_edited_store_json_is_a_clear_store_error(ray_cluster, tmp_path, text):
    path = tmp_path / "store"
    path.mkdir()
    (path / "store.json").write_text(text)
    with pytest.raises(StoreError, match="store.json"):
        Memory.open(path)
