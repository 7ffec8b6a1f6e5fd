"""Starting Ray and the actors of one store.

The embedded default is a local Ray with ``num_cpus`` = the machine's cores
and no dashboard. Set ``RAY_ADDRESS`` (or pass ``address``) to use a running
cluster, e.g. one started from ``ray_cluster.yaml``.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import ray

from actors.directory import DirectoryActor
from actors.service import ShardSpec
from actors.shard import ShardActor
from events.errors import StoreError

NAMESPACE = "palimpsest"


def ensure_ray(address: str | None = None, num_cpus: int | None = None) -> None:
    """Connect to Ray once per process (local by default)."""
    if ray.is_initialized():
        return
    address = address or os.environ.get("RAY_ADDRESS")
    kwargs = dict(
        include_dashboard=False,
        logging_level=logging.WARNING,
        log_to_driver=os.environ.get("PALIMPSEST_RAY_LOGS") == "1",
        namespace=NAMESPACE,
        runtime_env={"env_vars": {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}},
    )
    if address:
        ray.init(address=address, **kwargs)
    else:
        ray.init(num_cpus=num_cpus or os.cpu_count() or 1, **kwargs)


class ShardCluster:
    """The shard actors and the directory of one store, created or re-attached by name."""

    def __init__(self, store_id: str, specs: list[ShardSpec], routing_table: Path) -> None:
        self.names = [f"{store_id}/shard-{s.index:03d}" for s in specs]
        self.shards = [
            ShardActor.options(name=name, namespace=NAMESPACE, get_if_exists=True, scheduling_strategy="SPREAD").remote(
                spec
            )
            for name, spec in zip(self.names, specs)
        ]
        self.directory = DirectoryActor.options(
            name=f"{store_id}/directory", namespace=NAMESPACE, get_if_exists=True
        ).remote(routing_table, self.names, NAMESPACE)
        try:
            # A probe without retries: a shard that cannot recover says why now, once, not at first use.
            ray.get([s.pid.options(max_task_retries=0).remote() for s in self.shards])
        except ray.exceptions.RayActorError as exc:
            self.close()
            cause = str(exc).strip().splitlines()[-1]
            raise StoreError(f"a shard of the store could not start: {cause}") from None

    def route(self, streams: list[tuple[str, str]]) -> list[int]:
        return ray.get(self.directory.route.remote(streams))

    def close(self) -> None:
        try:
            ray.get([s.close.remote() for s in self.shards], timeout=30)
        except ray.exceptions.RayError:
            pass  # a dead shard has nothing to flush: its log is durable at every acknowledgement
        finally:
            for actor in [*self.shards, self.directory]:
                ray.kill(actor, no_restart=True)
