"""What a server replica checks before it forwards a request: the key's rate and whether a user exists.

Neither imports Ray: the rate is leased from the store's shared buckets
through a function given in (so the limit holds across replicas), and the
user check reads the store's routing table (``directory.jsonl``, append-only, fsynced by the
directory actor) read incrementally, so a read of a user the tenant does
not have is answered 404 without asking (and so creating) a route.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path


class RateLimiter:
    """A replica's side of the per-key rate limit: tokens leased from the store's shared buckets, spent here.

    ``lease(key, want)`` answers ``(granted, wait)`` — the store's
    :class:`actors.limiter.RateLimiterActor` when served, a local
    :class:`actors.limiter.TokenBuckets` in a test. A replica asks for
    ``rate × LEASE_SECONDS`` tokens at a time (at least 1), so the shared
    limit costs one Ray call per lease, not per request, and no replica holds
    more than a twentieth of a second's worth of a key's rate unspent.
    """

    LEASE_SECONDS = 0.05

    def __init__(self, lease, rate: float, burst: int) -> None:
        self.lease, self.rate = lease, rate
        self.want = max(1, min(int(burst), int(rate * self.LEASE_SECONDS)))
        self._local: dict[str, int] = {}
        self._lock = threading.Lock()

    def spend(self, key: str) -> bool:
        """Spend one of the tokens already leased for ``key`` (always true with the limit off); no Ray call."""
        if self.rate <= 0:
            return True
        with self._lock:
            if self._local.get(key, 0) > 0:
                self._local[key] -= 1
                return True
        return False

    def take(self, key: str) -> float | None:
        """None when the request may go; else the seconds to wait before the next one may."""
        if self.spend(key):
            return None
        granted, wait = self.lease(key, self.want)
        if granted <= 0:
            return max(wait, 1.0 / self.rate)
        with self._lock:
            self._local[key] = self._local.get(key, 0) + granted - 1
        return None


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
