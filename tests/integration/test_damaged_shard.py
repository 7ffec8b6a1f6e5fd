"""A damaged shard log takes down its shard only, with an error that names the file and the fix."""

from __future__ import annotations

import pytest

from events.errors import ShardUnavailableError, StoreError
from palimpsest import Memory
from palimpsest import config as store_config

pytestmark = pytest.mark.integration

MSGS = [{"text": f"alice likes tea {i}", "occurred_at": f"2024-05-01T09:0{i}:00+00:00"} for i in range(3)]


def _damage(path, how: str) -> None:
    data = bytearray(path.read_bytes())
    if how == "truncated":
        path.write_bytes(bytes(data[: len(data) // 3]))
    else:  # every 7th byte changed: checksums fail
        for i in range(0, len(data), 7):
            data[i] = (data[i] * 31 + 7) % 256
        path.write_bytes(bytes(data))


def test_a_damaged_log_is_one_shards_clear_error(ray_cluster, tmp_path):
    path = tmp_path / "store"
    with Memory.open(path, num_shards=2, embedder="hash") as mem:
        mem.add_messages(MSGS, tenant="acme", user_id="alice")
        mem.add_messages(MSGS, tenant="acme", user_id="bob")
        bad = mem.cluster.lookup([("acme", "bob")])[0]
    damaged = store_config.log_path(path, bad)
    _damage(damaged, "scrambled")
    before = damaged.read_bytes()
    with Memory.open(path) as mem:
        assert mem.cluster.lookup([("acme", "alice")])[0] != bad
        assert len(mem.search("acme", "alice", "tea")) == 3  # the healthy shard serves
        mem.add_messages(MSGS[:1], tenant="acme", user_id="alice")
        for call in (lambda: mem.search("acme", "bob", "tea"), mem.stats, mem.replay,
                     lambda: mem.add_messages(MSGS, tenant="acme", user_id="bob")):
            with pytest.raises(ShardUnavailableError) as err:
                call()
            message = str(err.value)
            assert str(damaged) in message and "damaged" in message and "restore" in message
            assert "another process" not in message
    assert damaged.read_bytes() == before  # nothing wrote to it

    # Without directory.jsonl the routes of the damaged shard's users cannot be rebuilt: refused, not guessed.
    store_config.routing_table(path).unlink()
    with pytest.raises(StoreError, match="directory.jsonl is missing.*duckdb is damaged"):
        Memory.open(path)
