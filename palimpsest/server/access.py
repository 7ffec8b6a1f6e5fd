"""One replica's view of the store and the checks every request passes: key, rate, tenant, user.

A replica holds one :class:`Served` (installed by the Serve deployment's
constructor, or by a test): the store's :class:`palimpsest.Memory` attached
to the running shard actors by name, the key ring, its side of the store's
shared rate limit and the known users. The tenant of a request is the tenant of its key, nothing else.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from fastapi import Depends, Request

from events.commands import canonical_id
from palimpsest import config as store_config
from palimpsest.server.errors import ApiError
from palimpsest.server.ingest_batches import IngestBatches
from palimpsest.server.keys import ApiKey, KeyRing
from palimpsest.server.limits import KnownStreams, RateLimiter
from palimpsest.server.settings import ServeSettings
from palimpsest.server.threads import in_thread


class Served:
    def __init__(self, memory, settings: ServeSettings) -> None:
        self.memory = memory
        self.settings = settings
        store = Path(settings.store)
        self.keys = KeyRing(store)
        self.limiter = RateLimiter(shared_lease(store), settings.rate_per_s, settings.burst)
        self.streams = KnownStreams(store_config.routing_table(store))
        self.ingests = IngestBatches(memory, merge=settings.merge_writes)  # concurrent requests written together


def shared_lease(store: Path):
    """Leases from the store's rate-limiter actor (one for every replica; started by ``palimpsest serve``)."""
    from actors.limiter import lease, limiter

    actor = limiter(store_config.store_id(store))
    return lambda key, want: lease(actor, key, want)


_served: Served | None = None


def install(served: Served) -> None:
    global _served
    _served = served


def served() -> Served:
    if _served is None:
        raise ApiError(503, "starting", "the server is still starting", [("store", "retry in a few seconds")],
                       {"Retry-After": "2"})
    return _served


@dataclass(frozen=True)
class Caller:
    """Who is asking: the key's id and tenant; ``admin`` keys may also audit the whole store."""

    key_id: str
    tenant: str
    admin: bool
    served: Served

    @property
    def memory(self):
        return self.served.memory

    def user(self, user_id: str) -> str:
        """``user_id`` (in its canonical form, NFC) if the caller's tenant has that user; 404 otherwise (another
        tenant's users do not exist)."""
        user_id = canonical_id(user_id)
        if (self.tenant, user_id) not in self.served.streams:
            raise ApiError(404, "not_found", f"no user {user_id!r} in your tenant",
                           [("user_id", "add messages for this user first; user ids are per tenant")])
        return user_id

    def knows(self, tenant: str, user_id: str) -> bool:
        """Whether the store holds the user, in its canonical form or exactly as given (an older store's form)."""
        streams = self.served.streams
        return (canonical_id(tenant), canonical_id(user_id)) in streams or (tenant, user_id) in streams

    def require_admin(self, what: str) -> None:
        if not self.admin:
            raise ApiError(403, "forbidden", f"{what} needs an admin key",
                           [("authorization", "create one with `palimpsest keys create --tenant T --admin`")])


def _unauthorized(message: str) -> ApiError:
    return ApiError(401, "unauthorized", message,
                    [("authorization", "send `Authorization: Bearer KEY`; create a key with "
                                       "`palimpsest --store DIR keys create --tenant T`")],
                    {"WWW-Authenticate": "Bearer"})


def verified(header: str) -> ApiKey:
    """The active key an ``Authorization`` header carries (401 without one; no rate taken)."""
    scheme, _, token = header.partition(" ")
    if not header:
        raise _unauthorized("no API key")
    if scheme.lower() != "bearer" or not token.strip():
        raise _unauthorized("the Authorization header is not `Bearer KEY`")
    key: ApiKey | None = served().keys.verify(token.strip())
    if key is None:
        raise _unauthorized("unknown or revoked API key")
    return key


async def caller(request: Request) -> Caller:
    """The verified caller of ``request`` (401 without a valid key, 429 over its rate).

    Run on the event loop (a synchronous dependency would cost every request a
    trip through the thread pool): the key check reads the few new bytes of the
    key log; only a new lease from the shared rate limiter (a Ray call) goes to a thread.
    """
    state = served()
    header = request.headers.get("authorization", "")
    checked = request.scope.get("palimpsest.key")  # verified at the entry (palimpsest.server.admission_http)
    key = checked[1] if checked is not None and checked[0] == header else verified(header)
    spent = state.limiter.spend(key.key_id)
    wait = None if spent else await in_thread(state.limiter.take, key.key_id)
    if wait is not None:
        raise ApiError(429, "rate_limited", f"more than {state.settings.rate_per_s:g} requests/s for this key",
                       [("authorization", f"retry after {math.ceil(wait)} s, or spread requests over more keys")],
                       {"Retry-After": str(max(1, math.ceil(wait)))})
    return Caller(key.key_id, key.tenant, key.admin, state)


Authorized = Depends(caller)
