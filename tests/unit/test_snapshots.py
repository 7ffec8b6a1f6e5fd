"""Snapshots and bounded residency: a shard starts from per-user snapshots plus the log's tail, ignores a
snapshot that does not match (code, config, damage, a log it is ahead of), and with a residency cap keeps at
most that many users in memory, loading a cold one on first use, with the same answers and digests."""

from __future__ import annotations

import dataclasses

import pytest

from actors import commands as c
from actors.core import ShardCore
from actors.spec import ShardSpec
from projections.adapters.embedding import HashEmbedder
from projections.folds.policy import DEFAULT_POLICY
from tests.builders import command
from tests.shard_helpers import record, search

USERS = ["ann", "bob", "cy", "dee", "eve"]


def spec_for(tmp_path, **kw) -> ShardSpec:
    return ShardSpec(index=0, log_path=tmp_path / "log.duckdb", lance_dir=tmp_path / "vectors",
                     model_id=HashEmbedder.model_id, dim=384, snapshot_dir=tmp_path / "snapshots", **kw)


def fill(core: ShardCore, start: int = 0, per_user: int = 3) -> None:
    for u, user in enumerate(USERS):
        record(core, [command(f"{user} note {i}: I walked {u * 100 + i} steps by the river", start + i, user_id=user,
                              client_message_id=f"{user}-{start + i}") for i in range(per_user)])
        record(core, [command(f"{user} 我喜欢在周末去爬山 {start}", start + per_user, user_id=user)])


def fresh_digest(tmp_path, **kw) -> dict:
    """The digest of a fold from event 0 (no snapshots) of the same log."""
    core = ShardCore(dataclasses.replace(spec_for(tmp_path, **kw), snapshot_dir=None))
    try:
        return core.query(c.Digest())
    finally:
        core.close()


def test_a_clean_close_snapshots_every_user_and_the_next_start_folds_nothing(tmp_path):
    core = ShardCore(spec_for(tmp_path))
    fill(core)
    before = core.query(c.Digest())
    core.close()

    reopened = ShardCore(spec_for(tmp_path))
    stats = reopened.query(c.Stats())
    assert reopened.users.snapshots.streams() == len(USERS)
    assert reopened.query(c.Digest()) == before == fresh_digest(tmp_path)
    assert stats["users"] == len(USERS) and stats["cold_loads"] == 0
    assert search(reopened, "walked 201 steps", user_id="cy")[0].text.startswith("cy note 1")
    assert reopened.admin(c.Replay()).equal
    reopened.close()


def test_a_start_after_a_crash_folds_only_the_tail_after_each_snapshot(tmp_path):
    core = ShardCore(spec_for(tmp_path, snapshot_every=4))  # each user's 4th event writes a snapshot
    fill(core)
    written = {s: core.users.snapshot_heads[s] for s in core.users.snapshot_heads}
    fill(core, start=10, per_user=1)  # more events after the snapshots, then a crash: no close
    expected = core.query(c.Digest())

    restarted = ShardCore(spec_for(tmp_path, snapshot_every=4))
    assert written and all(head >= 4 for head in written.values())
    assert restarted.query(c.Digest()) == expected == fresh_digest(tmp_path)
    assert restarted.admin(c.Replay()).equal
    restarted.close()


def test_a_log_edited_under_a_snapshot_is_noticed_and_the_user_folded_from_the_log(tmp_path):
    import duckdb

    core = ShardCore(spec_for(tmp_path))
    fill(core)
    core.close()
    con = duckdb.connect(str(tmp_path / "log.duckdb"))
    con.execute("UPDATE events SET payload = replace(payload, 'walked 201 steps', 'walked 777 steps') "
                "WHERE user_id = 'cy' AND kind = 'message_recorded'")
    con.close()

    reopened = ShardCore(spec_for(tmp_path))
    assert search(reopened, "walked 777 steps", user_id="cy", touch_reason=None)[0].text.startswith("cy note 1: I walked 777")
    assert reopened.query(c.Digest()) == fresh_digest(tmp_path)
    reopened.close()


@pytest.mark.parametrize("damage", ["flip-a-byte", "truncate", "head-beyond-log", "other-policy", "garbage"])
def test_a_snapshot_that_does_not_match_is_ignored_and_the_user_rebuilt_from_the_log(tmp_path, damage):
    core = ShardCore(spec_for(tmp_path))
    fill(core)
    core.close()
    path = core.users.snapshots.path(("acme", "cy"))
    data = path.read_bytes()
    header, _, body = data.partition(b"\n")
    kw = {}
    if damage == "flip-a-byte":
        path.write_bytes(header + b"\n" + body[:-10] + bytes([body[-10] ^ 0xFF]) + body[-9:])
    elif damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "head-beyond-log":
        path.write_bytes(header.replace(b'"head": ', b'"head": 9') + b"\n" + body)
    elif damage == "garbage":
        path.write_bytes(b"not a snapshot at all")
    else:
        kw["retention_policy"] = DEFAULT_POLICY.replace(name="slower", reinforcement_factor=2.0)

    reopened = ShardCore(spec_for(tmp_path, **kw))
    assert reopened.query(c.Digest()) == fresh_digest(tmp_path, **kw)
    assert search(reopened, "walked 202 steps", user_id="cy")[0].text.startswith("cy note 2")
    reopened.close()


def test_with_a_residency_cap_at_most_that_many_users_stay_in_memory_with_the_same_answers(tmp_path):
    uncapped = ShardCore(spec_for(tmp_path / "a"))
    capped = ShardCore(spec_for(tmp_path / "b", max_resident_users=2))
    for core in (uncapped, capped):
        fill(core)
    assert len(capped.state.users.resident) <= 2 and len(capped.state.users) == len(USERS)

    for user in USERS:
        hits = {id(core): [h.text for h in search(core, "walked steps river", user_id=user, k=3)]
                for core in (uncapped, capped)}
        assert hits[id(uncapped)] == hits[id(capped)]
        assert len(capped.state.users.resident) <= 2
    assert capped.state.users.evictions > 0 and capped.state.users.loads > 0
    assert capped.admin(c.Replay()).equal  # users loaded from snapshots + tails == a fold from event 0
    assert len(capped.state.users.resident) <= 2
    for core in (uncapped, capped):
        core.close()


def test_a_capped_shard_starts_with_no_user_loaded_and_loads_a_cold_one_on_first_use(tmp_path):
    core = ShardCore(spec_for(tmp_path))
    fill(core)
    expected = core.query(c.Digest())
    core.close()

    capped = ShardCore(spec_for(tmp_path, max_resident_users=1))
    assert capped.state.users.resident == {} and len(capped.state.users) == len(USERS)
    assert search(capped, "walked 401 steps", user_id="eve", touch_reason=None)[0].text.startswith("eve note 1")
    assert list(capped.state.users.resident) == [("acme", "eve")]
    assert capped.query(c.Digest()) == expected
    capped.close()


def test_a_capped_sweep_of_every_user_archives_what_the_uncapped_one_does(tmp_path):
    from datetime import UTC, datetime

    results = []
    for name, cap in (("a", None), ("b", 1)):
        core = ShardCore(spec_for(tmp_path / name, max_resident_users=cap))
        fill(core)
        report = core.handle([c.SweepArchive(now=datetime(2031, 1, 1, tzinfo=UTC))])[0]
        results.append([(r["user_id"], r["reason"], len(r["memory_ids"])) for r in report])
        assert core.admin(c.Replay()).equal
        core.close()
    assert results[0] and results[0] == results[1]


def flush(core: ShardCore, searches: int, user: str = "ann") -> None:
    """``searches`` searches of ``user``, then their touches flushed in the shard actor's three steps."""
    for i in range(searches):
        search(core, f"steps {i}", user_id=user)
    taken = core.take_touches()
    core.fold_touches(taken, core.append_touches(taken))


def test_a_touch_flush_leaves_a_near_snapshot_to_idle_time_and_writes_a_far_one(tmp_path):
    from actors.user_store import FAR_BEHIND

    core = ShardCore(spec_for(tmp_path, snapshot_every=2))
    try:
        fill(core)  # commands write their users' snapshots as they go
        stream = ("acme", "ann")
        users = core.state.users
        written = core.users.snapshot_heads[stream]
        assert written == users[stream].head and core.users.due(users, [stream]) == []

        flush(core, 3)  # 3 touch events: due, but not far behind
        assert core.users.snapshot_heads[stream] == written
        assert core.users.due(users, list(users.resident)) == [stream]
        assert core.users.checkpoint(users, [stream]) == 1  # what the actor's flusher does once idle
        assert core.users.snapshot_heads[stream] == users[stream].head == written + 3

        flush(core, FAR_BEHIND * 2)  # far behind: the flush writes it itself
        assert core.users.snapshot_heads[stream] == users[stream].head == written + 3 + FAR_BEHIND * 2
    finally:
        core.close()
    restarted = ShardCore(spec_for(tmp_path, snapshot_every=2))
    try:
        assert restarted.query(c.Digest()) == fresh_digest(tmp_path, snapshot_every=2)
    finally:
        restarted.close()
