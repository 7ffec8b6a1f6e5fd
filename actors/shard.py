"""ShardActor: the Ray actor around :class:`ShardService`.

Owns one shard's DuckDB log file (its only writer), the projections of the
users routed to it, and its LanceDB table. Recovery: Ray restarts a dead
actor (``max_restarts=-1``); ``__init__`` folds the log again and reconciles
LanceDB, so nothing acknowledged is lost. Calls in flight when it died are
retried (``max_task_retries``): ``record`` is idempotent by client message
id, queries have no effects beyond touch events.
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

    def record(self, commands, vectors, model_id):
        return self._svc.record(commands, vectors, model_id)

    def search(self, tenant, user_id, query, query_vector, k, fusion, touch_reason="search_hit"):
        return self._svc.search(tenant, user_id, query, query_vector, k, fusion, touch_reason)

    def context(self, tenant, user_id, query, query_vector, token_budget, fusion):
        return self._svc.context(tenant, user_id, query, query_vector, token_budget, fusion)

    def counterfactual(self, policy, now):
        return self._svc.counterfactual(policy, now)

    def episodes(self, tenant, user_id):
        return self._svc.episodes(tenant, user_id)

    def retention(self, tenant, user_id, now):
        return self._svc.retention(tenant, user_id, now)

    def scan(self, flt, limit=None):
        return self._svc.scan(flt, limit)

    def digest(self):
        return self._svc.digest()

    def replay(self):
        return self._svc.replay()

    def stats(self):
        return self._svc.stats()

    def close(self):
        self._svc.close()
