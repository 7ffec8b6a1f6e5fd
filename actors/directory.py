"""DirectoryActor: the one named owner of a store's routing table.

Owns ``directory.jsonl`` (see :class:`actors.routing.RoutingTable`): which
shard actor holds (tenant, user). Recovery: Ray restarts it and it re-reads
the file, so routing is stable under restarts. ``route`` is idempotent: a
stream already assigned keeps its shard.
"""

from __future__ import annotations

import os
from pathlib import Path

import ray

from actors.routing import RoutingTable


@ray.remote(max_restarts=-1, max_task_retries=-1, num_cpus=0)
class DirectoryActor:
    def __init__(self, table_path: Path, shard_names: list[str], namespace: str) -> None:
        self._table = RoutingTable(Path(table_path), len(shard_names))
        self._names = list(shard_names)
        self._namespace = namespace

    def pid(self) -> int:
        return os.getpid()

    def route(self, streams: list[tuple[str, str]]) -> list[int]:
        """Shard index for each (tenant, user), in order: one call per batch."""
        return self._table.route(streams)

    def lookup(self, streams: list[tuple[str, str]]) -> list[int | None]:
        """Shard index of each known (tenant, user), ``None`` for the others: reads never assign."""
        return self._table.lookup(streams)

    def adopt(self, held: list[list[tuple[str, str]]]) -> int:
        """Add the routes of the users the shard logs hold (``held[i]``: shard ``i``) that the table lacks."""
        return self._table.adopt(held)

    def shards(self) -> list:
        return [ray.get_actor(name, namespace=self._namespace) for name in self._names]

    def assignments(self) -> dict:
        return self._table.assignments()
