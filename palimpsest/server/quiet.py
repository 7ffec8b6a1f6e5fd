"""Graph consolidation of a served store, run while its replica is quiet and never inside a request.

Embedded, a :class:`palimpsest.Memory` consolidates inline: the ingest that
stages the ``consolidate_every``-th graph memory runs the round before it
answers. Served, that round would hold a write slot for seconds and take
the cores that answer queries. A replica therefore stages without
consolidating (its ``Memory.consolidate_every`` is 0) and this thread runs
the round once as many memories are staged and no request has run for
``idle_s`` seconds; under load that never pauses, the round runs anyway once
``max_lag`` times the threshold is staged, so the graph's lag stays bounded.
``POST /v1/consolidate`` runs a round on demand as before. A failed round is
logged and retried at the next quiet moment.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import structlog

log = structlog.get_logger("palimpsest.server")


class QuietConsolidation:
    def __init__(self, idle_for: Callable[[], float], every: int, *, idle_s: float = 1.0, max_lag: int = 20,
                 tick_s: float = 0.25) -> None:
        self.idle_for, self.every, self.idle_s, self.max_lag, self.tick_s = idle_for, every, idle_s, max_lag, tick_s
        self.rounds = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def due(self, staged: int) -> bool:
        """Whether a round runs now, with ``staged`` memories waiting for one."""
        if not self.every or staged < self.every:
            return False
        return staged >= self.max_lag * self.every or self.idle_for() >= self.idle_s

    def start(self, memory_of: Callable[[], object | None]) -> None:
        """Watch the memory ``memory_of()`` gives (None until the replica has opened it)."""
        def run() -> None:
            while not self._stop.wait(self.tick_s):
                memory = memory_of()
                if memory is None or not self.due(memory.staged_since_consolidation):
                    continue
                try:
                    memory.consolidate()
                    self.rounds += 1
                except Exception as exc:  # noqa: BLE001 - logged; the next quiet moment retries
                    log.warning("quiet_consolidation_failed", error=str(exc))

        self._thread = threading.Thread(target=run, name="quiet-consolidation", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
