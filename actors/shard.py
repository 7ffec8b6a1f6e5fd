"""ShardActor: the Ray actor around :class:`ShardService`.

Owns one shard's DuckDB log file (its only writer), the projections of the
users routed to it, and its LanceDB table. Recovery: Ray restarts a dead
actor (``max_restarts=-1``); ``__init__`` folds the log again and reconciles
LanceDB, so nothing acknowledged is lost. Calls in flight when it died are
retried (``max_task_retries``): ``record`` is idempotent by client message
id, queries have no effects beyond touch events.

Each method forwards to the :class:`ShardService` method of the same name
(see there for arguments); the actor adds only process isolation.
"""

from __future__ import annotations

import os
import sys

import ray
import structlog

from actors.service import ShardService, ShardSpec


@ray.remote(max_restarts=-1, max_task_retries=-1, num_cpus=0)
class ShardActor:
    def __init__(self, spec: ShardSpec) -> None:
        # Logs go to stderr: a driver that forwards worker output keeps its stdout for results.
        structlog.configure(logger_factory=structlog.PrintLoggerFactory(file=sys.stderr))
        self._svc = ShardService(spec)

    def pid(self) -> int:
        return os.getpid()

    def record(self, *args, **kwargs):
        return self._svc.record(*args, **kwargs)

    def search(self, *args, **kwargs):
        return self._svc.search(*args, **kwargs)

    def context(self, *args, **kwargs):
        return self._svc.context(*args, **kwargs)

    def counterfactual(self, *args, **kwargs):
        return self._svc.counterfactual(*args, **kwargs)

    def episodes(self, *args, **kwargs):
        return self._svc.episodes(*args, **kwargs)

    def retention(self, *args, **kwargs):
        return self._svc.retention(*args, **kwargs)

    def sweep(self, *args, **kwargs):
        return self._svc.sweep(*args, **kwargs)

    def archive(self, *args, **kwargs):
        return self._svc.archive(*args, **kwargs)

    def restore(self, *args, **kwargs):
        return self._svc.restore(*args, **kwargs)

    def archived(self, *args, **kwargs):
        return self._svc.archived(*args, **kwargs)

    def notes(self, *args, **kwargs):
        return self._svc.notes(*args, **kwargs)

    def note_history(self, *args, **kwargs):
        return self._svc.note_history(*args, **kwargs)

    def record_reply(self, *args, **kwargs):
        return self._svc.record_reply(*args, **kwargs)

    def review(self, *args, **kwargs):
        return self._svc.review(*args, **kwargs)

    def profile(self, *args, **kwargs):
        return self._svc.profile(*args, **kwargs)

    def tiers(self, *args, **kwargs):
        return self._svc.tiers(*args, **kwargs)

    def stage_graph(self, *args, **kwargs):
        return self._svc.stage_graph(*args, **kwargs)

    def graph_jobs(self, *args, **kwargs):
        return self._svc.graph_jobs(*args, **kwargs)

    def append_graph(self, *args, **kwargs):
        return self._svc.append_graph(*args, **kwargs)

    def search_memories(self, *args, **kwargs):
        return self._svc.search_memories(*args, **kwargs)

    def link_memories(self, *args, **kwargs):
        return self._svc.link_memories(*args, **kwargs)

    def graph_export(self, *args, **kwargs):
        return self._svc.graph_export(*args, **kwargs)

    def graph_merges(self, *args, **kwargs):
        return self._svc.graph_merges(*args, **kwargs)

    def unmerge(self, *args, **kwargs):
        return self._svc.unmerge(*args, **kwargs)

    def scan(self, *args, **kwargs):
        return self._svc.scan(*args, **kwargs)

    def digest(self, *args, **kwargs):
        return self._svc.digest(*args, **kwargs)

    def replay(self, *args, **kwargs):
        return self._svc.replay(*args, **kwargs)

    def stats(self, *args, **kwargs):
        return self._svc.stats(*args, **kwargs)

    def close(self):
        self._svc.close()
