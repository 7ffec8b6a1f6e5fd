"""A shard that dies after committing a command but before replying: Ray restarts it and retries the call with
the same arguments, and the caller gets the outcome of the one application, not a second effect or an error.

The crash is injected (``ShardSpec.crash_marker``): the actor exits right after the commit, once.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import ray

from actors import commands as c
from actors.runtime import ShardCluster
from actors.spec import ShardSpec
from projections.adapters.embedding import HashEmbedder
from tests.builders import command
from tests.shard_helpers import record_command

pytestmark = pytest.mark.integration
NOW = datetime(2024, 6, 1, tzinfo=UTC)


@pytest.fixture
def shard(ray_cluster, tmp_path):
    marker = tmp_path / "crash-after-next-commit"
    spec = ShardSpec(index=0, log_path=tmp_path / "log" / "shard-000.duckdb", lance_dir=tmp_path / "vectors",
                     model_id=HashEmbedder.model_id, dim=384, crash_marker=marker)
    cluster = ShardCluster(f"retry-{tmp_path.name}", [spec], tmp_path / "directory.jsonl")
    yield cluster.shards[0], marker
    cluster.close()


def crash_once(shard, marker, cmd):
    """Send ``cmd`` with a crash armed after its commit; returns its outcome and the pids before and after."""
    before = ray.get(shard.pid.remote())
    marker.touch()
    [outcome] = ray.get(shard.handle.remote([cmd]))
    assert not marker.exists(), "the injected crash did not fire"
    assert ray.get(shard.pid.remote()) != before, "the shard was not restarted"
    return outcome


def events(shard, kind: str) -> list:
    return ray.get(shard.query.remote([c.ScanEvents(filter=_filter(kind))]))[0]


def _filter(kind):
    from events.log import ScanFilter

    return ScanFilter(kinds=(kind,))


def test_messages_committed_before_a_crash_are_acknowledged_as_created_once(shard):
    actor, marker = shard
    cmd = record_command([command("I adopted a puppy named Biscuit", 0, client_message_id="m1"),
                          command("My sister is a nurse in Boston", 1, client_message_id="m2")])

    outcome = crash_once(actor, marker, cmd)

    assert [o["created"] for o in outcome] == [True, True]  # not reported as its own duplicates
    recorded = events(actor, "message_recorded")
    assert [e.event_id for e in recorded] == [o["memory_id"] for o in outcome]  # stored once


def test_a_restore_committed_before_a_crash_is_acknowledged_not_refused(shard):
    actor, marker = shard
    [outcome] = ray.get(actor.handle.remote([record_command([command("We picked PostgreSQL", 0)])]))
    memory_id = outcome[0]["memory_id"]
    ray.get(actor.handle.remote([c.ArchiveMemories(tenant="acme", user_id="alice", memory_ids=(memory_id,), now=NOW,
                                                   reason="old")]))

    restored = crash_once(actor, marker, c.RestoreMemories(tenant="acme", user_id="alice", memory_ids=(memory_id,),
                                                           now=NOW, reason="needed again"))

    assert restored == [memory_id]
    assert len(events(actor, "memory_restored")) == 1
    [report] = ray.get(actor.admin.remote([c.Replay()]))
    assert report.equal
