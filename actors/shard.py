"""ShardActor: the Ray actor around :class:`actors.core.ShardCore`.

Owns one shard's DuckDB log file (its only writer), the projections of the
users routed to it, and its LanceDB table. Two entry points: ``handle``
(commands, each idempotent by its ``command_id``) and ``query`` (reads).
A daemon thread group-commits the queries' touch events once they are older
than ``spec.touch_flush_s``; a lock keeps it and the calls one at a time.

Recovery: Ray restarts a dead actor (``max_restarts=-1``); ``__init__``
folds the log again and reconciles LanceDB, so nothing acknowledged is lost.
Calls in flight when it died are retried with the same arguments
(``max_task_retries=-1``): a command already applied before the crash finds
its record and returns the recorded outcome, appending nothing; queries have
no effects beyond touches (buffered touches not yet flushed are lost with
the process: they are access signals, not facts).
"""

from __future__ import annotations

import gc
import os
import sys
import threading

import ray
import structlog

from actors.commands import Command, Query
from actors.core import ShardCore
from actors.spec import ShardSpec

logger = structlog.get_logger("palimpsest.shard")


@ray.remote(max_restarts=-1, max_task_retries=-1, num_cpus=0)
class ShardActor:
    def __init__(self, spec: ShardSpec) -> None:
        # Logs go to stderr: a driver that forwards worker output keeps its stdout for results.
        structlog.configure(logger_factory=structlog.PrintLoggerFactory(file=sys.stderr))
        self._core = ShardCore(spec)
        # The folded projections are long-lived: moved out of the collector's reach, a full collection no
        # longer walks them in the middle of a query (one took 264 ms on the dev store's shard, under load).
        gc.collect()
        gc.freeze()
        self._lock = threading.Lock()
        self._closed = threading.Event()
        threading.Thread(target=self._flusher, name="touch-flusher", daemon=True).start()

    def pid(self) -> int:
        return os.getpid()

    def where(self) -> dict:
        """This incarnation's process and Ray node (the chaos run kills them; a restart changes both)."""
        return {"pid": os.getpid(), "node_id": ray.get_runtime_context().get_node_id()}

    def handle(self, commands: list[Command]) -> list:
        with self._lock:
            outcomes = self._core.handle(commands)
            marker = self._core.spec.crash_marker
            if marker is not None and marker.exists():
                marker.unlink()
                os._exit(1)  # the injected crash: committed, never acknowledged
            return outcomes

    def query(self, queries: list[Query]) -> list:
        with self._lock:
            return [self._core.query(q) for q in queries]

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            self._core.close()

    def _flusher(self) -> None:
        period = max(0.01, self._core.spec.touch_flush_s / 2)
        while not self._closed.wait(period):
            with self._lock:
                if self._closed.is_set() or not self._core.touches_due():
                    continue
                try:
                    self._core.flush_touches()
                except Exception as exc:  # noqa: BLE001 - a failed flush is logged; the touches are dropped
                    logger.warning("touch_flush_failed", shard=self._core.spec.index, error=str(exc))
