"""What a server replica checks before it forwards a request: the key's rate and whether a user exists.

Both are per replica and need no Ray: a token bucket per key, and the
store's routing table (``directory.jsonl``, append-only, fsynced by the
directory actor) read incrementally, so a read of a user the tenant does
not have is answered 404 without asking (and so creating) a route.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path


class RateLimiter:
    """A token bucket per key: ``rate`` requests a second on average, bursts up to ``burst``."""

    def __init__(self, rate: float, burst: int, clock=time.monotonic) -> None:
        self.rate, self.burst, self.clock = rate, burst, clock
        self._buckets: dict[str, tuple[float, float]] = {}  # key → (tokens, when)
        self._lock = threading.Lock()

    def take(self, key: str) -> float | None:
        """None when the request may go; else the seconds to wait before the next one may."""
        if self.rate <= 0:
            return None
        with self._lock:
            now = self.clock()
            tokens, then = self._buckets.get(key, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - then) * self.rate)
            if tokens >= 1.0:
                self._buckets[key] = (tokens - 1.0, now)
                return None
            self._buckets[key] = (tokens, now)
            return (1.0 - tokens) / self.rate


class KnownStreams:
    """The (tenant, user) streams the store has routed, read from its routing table as it grows."""

    def __init__(self, table: Path) -> None:
        self.table = Path(table)
        self._offset = 0
        self._streams: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def __contains__(self, stream: tuple[str, str]) -> bool:
        if stream in self._streams:
            return True
        self._read_new()
        return stream in self._streams

    def of_tenant(self, tenant: str) -> list[str]:
        self._read_new()
        return sorted(u for t, u in self._streams if t == tenant)

    def _read_new(self) -> None:
        with self._lock:
            try:
                with self.table.open("rb") as fh:
                    fh.seek(self._offset)
                    data = fh.read()
            except FileNotFoundError:
                return
            end = data.rfind(b"\n") + 1  # only complete lines: a torn one was never handed out
            for line in data[:end].splitlines():
                row = json.loads(line)
                self._streams.add((row["tenant"], row["user_id"]))
            self._offset += end
