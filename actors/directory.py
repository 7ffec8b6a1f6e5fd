"""The directory: which shard owns (tenant, user).

Routing is a keyed hash of the stream modulo the shard count, and the count
is fixed in the store's ``store.json`` when the store is created, so a user
lands on the same shard after any restart. The actor holds the shard
handles; it has no other state, so a restart recovers it from its arguments.
All methods are idempotent.
"""

from __future__ import annotations

import hashlib

import ray


def shard_for(tenant: str, user_id: str, num_shards: int) -> int:
    """Stable shard index of a stream (independent of Python's hash seed)."""
    digest = hashlib.blake2b(f"{tenant}\x00{user_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % num_shards


@ray.remote(max_restarts=-1, max_task_retries=-1, num_cpus=0)
class DirectoryActor:
    def __init__(self, shard_names: list[str], namespace: str) -> None:
        self._names = list(shard_names)
        self._namespace = namespace

    def route(self, streams: list[tuple[str, str]]) -> list[int]:
        """Shard index for each (tenant, user), in order: one call per batch."""
        n = len(self._names)
        return [shard_for(t, u, n) for t, u in streams]

    def shards(self) -> list:
        return [ray.get_actor(name, namespace=self._namespace) for name in self._names]

    def num_shards(self) -> int:
        return len(self._names)
