"""The actors of one store: its shards and its directory, created or re-attached by name.

Ray itself is started (or joined, with ``RAY_ADDRESS``) by :func:`actors.ray_init.ensure_ray`.
"""

from __future__ import annotations

import time
from pathlib import Path

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from actors.commands import Streams
from actors.directory import DirectoryActor
from actors.ray_init import NAMESPACE, ensure_ray
from actors.shard import ShardActor
from actors.spec import ShardSpec
from events.duckdb_log import DAMAGED
from events.errors import StoreError

__all__ = ["NAMESPACE", "ShardCluster", "ensure_ray"]
ATTACH_S = 60.0  # how long an open waits for the actors of a crashed driver to be removed and started anew


def _cause(exc: Exception) -> str:
    """The last line of a failed actor start (its own error's message), without Ray's wrapping."""
    last = str(exc).strip().splitlines()[-1]
    for prefix in ("events.errors.StoreError: ", "StoreError: "):
        last = last.split(prefix, 1)[-1]
    return last


def _placements(count: int) -> list:
    """Where each shard starts: round-robin over the cluster's live nodes, softly (a shard whose node is gone
    restarts on any survivor). Ray's own SPREAD is best effort and once put all three shards of a 3-node
    cluster on one node; on a single node it is what this returns."""
    nodes = sorted(n["NodeID"] for n in ray.nodes() if n.get("Alive"))
    if len(nodes) < 2:
        return ["SPREAD"] * count
    return [NodeAffinitySchedulingStrategy(node_id=nodes[i % len(nodes)], soft=True) for i in range(count)]


def _running(name: str) -> bool:
    try:
        ray.get_actor(name, namespace=NAMESPACE)
    except ValueError:
        return False
    return True


class ShardCluster:
    """The shard actors and the directory of one store, created or re-attached by name.

    The process that created the actors owns them: its :meth:`close` flushes and
    stops them. A process that re-attached to running actors (another driver on
    the same Ray cluster) only lets go of its handles, so the owner and the other
    drivers keep working.
    """

    def __init__(self, store_id: str, specs: list[ShardSpec], routing_table: Path) -> None:
        self.names = [f"{store_id}/shard-{s.index:03d}" for s in specs]
        self.owner = not _running(self.names[0])
        self.down: dict[int, str] = {}  # shards that could not start → why (their log's error, with the fix)
        self.shards: list = [None] * len(specs)
        pending, deadline = list(range(len(specs))), time.monotonic() + ATTACH_S
        placements = _placements(len(specs))
        while True:
            for i in pending:
                self.shards[i] = ShardActor.options(name=self.names[i], namespace=NAMESPACE, get_if_exists=True,
                                                    scheduling_strategy=placements[i]).remote(specs[i])
            self.directory = DirectoryActor.options(
                name=f"{store_id}/directory", namespace=NAMESPACE, get_if_exists=True
            ).remote(routing_table, self.names, NAMESPACE)
            # A probe without retries: a shard that cannot recover says why now, once, not at first use. A
            # damaged shard is down alone (its users get its error); the others serve.
            probes = [self.shards[i].pid.options(max_task_retries=0).remote() for i in pending]
            dying = []
            for i, probe in zip([*pending, -1], [*probes, self.directory.pid.options(max_task_retries=0).remote()]):
                try:
                    ray.get(probe)
                except ray.exceptions.RayActorError as exc:
                    if exc.actor_init_failed or time.monotonic() > deadline:
                        self.down[i] = _cause(exc)
                    else:  # an incarnation whose owner (a crashed driver) is gone: Ray is removing it
                        dying.append(i)
            if not dying:
                break
            self.owner = True  # what this process creates now is its own
            pending = [i for i in dying if i >= 0]
            time.sleep(0.5)
        if -1 in self.down:
            self.close()
            raise StoreError(f"the store's directory actor could not start: {self.down[-1]}")
        store_wide = [why for why in self.down.values() if DAMAGED not in why]
        if store_wide:  # e.g. an edited embedder: the other shards would write another model's vectors
            self.close()
            raise StoreError("the store cannot open: " + "; ".join(store_wide))
        if len(self.down) == len(self.shards) or (self.down and not routing_table.exists()):
            self.close()
            why = "" if len(self.down) == len(self.shards) else (
                f" (and {routing_table.name} is missing: routes cannot be rebuilt without every shard's log)")
            raise StoreError(f"the store cannot open{why}: " + "; ".join(self.down.values()))
        # The logs know their users: routes a lost or stale directory.jsonl lacks are rebuilt from them.
        up = [i for i in range(len(self.shards)) if i not in self.down]
        held = dict(zip(up, ray.get([self.shards[i].query.remote([Streams()]) for i in up])))
        try:
            ray.get(self.directory.adopt.remote([held[i][0] if i in held else [] for i in range(len(self.shards))]))
        except ray.exceptions.RayTaskError as exc:
            self.close()
            if isinstance(exc.cause, StoreError):
                raise exc.cause from None
            raise

    def route(self, streams: list[tuple[str, str]]) -> list[int]:
        """Shard of each stream, assigning new ones (writes)."""
        return ray.get(self.directory.route.remote(streams))

    def lookup(self, streams: list[tuple[str, str]]) -> list[int | None]:
        """Shard of each known stream, ``None`` for unknown ones (reads: nothing is assigned)."""
        return ray.get(self.directory.lookup.remote(streams))

    def close(self) -> None:
        if not self.owner:
            return  # re-attached to another process's actors: they stay up for it
        try:
            down = getattr(self, "down", {})
            ray.get([s.close.remote() for i, s in enumerate(self.shards) if i not in down], timeout=30)
        except ray.exceptions.RayError:
            pass  # a dead shard has nothing to flush: its log is durable at every acknowledgement
        finally:
            for actor in [*self.shards, self.directory]:
                ray.kill(actor, no_restart=True)
