"""The request rate of each API key, shared by every replica of a served store.

:class:`TokenBuckets` is the logic (a token bucket per key, no Ray, tested
alone); :class:`RateLimiterActor` owns one instance for the whole store, so
the limit holds across replicas instead of multiplying with them. Replicas do
not call it per request: each leases a few tokens at a time
(:class:`palimpsest.server.limits.LeasedLimiter`) and spends them locally, so
a request costs a Ray call only once per lease. The tokens granted never
exceed what one bucket allows.

Recovery: the actor holds only counters; after a restart every bucket starts
full (a key may then burst once more). ``lease`` is not idempotent (it hands
out tokens), which is why a lost answer only costs the tokens it carried.
"""

from __future__ import annotations

import math
import threading
import time

import ray

from actors.ray_init import NAMESPACE
from events.errors import StoreError

OPEN_WAIT_S = 1800.0  # how long a replica waits for the server process to open the store (a large one replays its logs)


class TokenBuckets:
    """A token bucket per key: ``rate`` requests a second on average, bursts up to ``burst``."""

    def __init__(self, rate: float, burst: int, clock=time.monotonic) -> None:
        self.rate, self.burst, self.clock = rate, max(1, burst), clock
        self._buckets: dict[str, tuple[float, float]] = {}  # key → (tokens, when)
        self._lock = threading.Lock()

    def lease(self, key: str, want: int = 1) -> tuple[int, float]:
        """Up to ``want`` tokens for ``key`` now: (granted, seconds until the next token when none is left)."""
        if self.rate <= 0:
            return want, 0.0
        with self._lock:
            now = self.clock()
            tokens, then = self._buckets.get(key, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - then) * self.rate)
            granted = min(int(want), math.floor(tokens))
            tokens -= granted
            self._buckets[key] = (tokens, now)
            return granted, (1.0 - tokens) / self.rate if tokens < 1.0 else 0.0


@ray.remote(num_cpus=0, max_restarts=-1)
class RateLimiterActor:
    """Owns the store's :class:`TokenBuckets` (see the module docstring for recovery)."""

    def __init__(self, rate: float, burst: int) -> None:
        self.buckets = TokenBuckets(rate, burst)

    def lease(self, key: str, want: int) -> tuple[int, float]:
        return self.buckets.lease(key, want)


def limiter_name(store_id: str) -> str:
    return f"{store_id}/rate-limiter"


def start_limiter(store_id: str, rate: float, burst: int):
    """The store's limiter actor with these limits; it lives as long as the process that starts it (the server)."""
    return RateLimiterActor.options(name=limiter_name(store_id), namespace=NAMESPACE, get_if_exists=True).remote(
        rate, burst)


def limiter(store_id: str):
    """The running limiter actor of the store (started by the server process)."""
    return ray.get_actor(limiter_name(store_id), namespace=NAMESPACE)


def stop_limiter(actor) -> None:
    """End the store's limiter (the server stopping): a server started again on the store starts its own, and its
    replicas wait for that one (:func:`wait_for_limiter`), not find this one."""
    ray.kill(actor, no_restart=True)


def wait_for_limiter(store_id: str, timeout: float = OPEN_WAIT_S, poll: float = 0.05) -> None:
    """Return once the store's limiter runs: the server process starts it once it has opened the store (its shard
    actors are up), so a replica started beside the open attaches to them, never creates them. A clear error if it
    never comes."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            ray.get_actor(limiter_name(store_id), namespace=NAMESPACE)
            return
        except ValueError:
            if time.monotonic() > deadline:
                raise StoreError(f"the server did not finish opening the store within {timeout:g}s (its rate "
                                 "limiter, started once the shards are up, never came); see the server's output "
                                 "for why") from None
            time.sleep(poll)


def lease(actor, key: str, want: int, timeout: float = 5.0) -> tuple[int, float]:
    return ray.get(actor.lease.remote(key, want), timeout=timeout)
