"""Tenant-wide routes: who the key is, the tenant's users and the event audit.

A tenant key acts on its own tenant only; an admin key may also audit the events of any tenant (``?tenant=``)
or of all. (The archive sweep, consolidation, digests and replay are declared operations: :mod:`palimpsest.operations`.)
"""

from __future__ import annotations

import json
from datetime import datetime

from fastapi import APIRouter, Query

from palimpsest.server.access import Authorized, Caller
from palimpsest.server.errors import ApiError
from palimpsest.server.responses import JsonRoute

router = APIRouter(prefix="/v1", tags=["store"], route_class=JsonRoute)


@router.get("/whoami", summary="The tenant and rights of the key you sent")
def whoami(who: Caller = Authorized) -> dict:
    return {"key_id": who.key_id, "tenant": who.tenant, "admin": who.admin}


@router.get("/users", summary="The users of your tenant")
def users(who: Caller = Authorized) -> dict:
    return {"tenant": who.tenant, "users": who.served.streams.of_tenant(who.tenant)}


@router.get("/events", summary="Read-only audit of the event log, filtered (a tenant key: its own tenant)")
def events(
    who: Caller = Authorized,
    tenant: str | None = None,
    user_id: str | None = None,
    kind: list[str] | None = Query(default=None),
    from_seq: int | None = Query(default=None, ge=0),
    to_seq: int | None = Query(default=None, ge=0),
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int = Query(default=1000, ge=1, le=100_000),
) -> dict:
    if tenant is not None and tenant != who.tenant and not who.admin:
        raise ApiError(403, "forbidden", "a tenant key audits only its own tenant",
                       [("tenant", "leave it out (your key's tenant is used) or use an admin key")])
    scope = tenant if tenant is not None else (None if who.admin else who.tenant)
    if user_id is not None and scope is not None and (scope, user_id) not in who.served.streams:
        raise ApiError(404, "not_found", f"no user {user_id!r} in tenant {scope!r}",
                       [("user_id", "user ids are per tenant; see GET /v1/users")])
    found = who.memory.events(scope, user_id, kinds=kind, from_seq=from_seq, to_seq=to_seq, since=since,
                              until=until, limit=limit)
    return {"events": [_envelope(e) for e in found]}


def _envelope(env) -> dict:
    return {"tenant": env.tenant, "user_id": env.user_id, "seq": env.seq, "event_id": env.event_id,
            "kind": env.kind, "schema_version": env.schema_version, "occurred_at": env.occurred_at.isoformat(),
            "recorded_at": env.recorded_at.isoformat(), "causation_id": env.causation_id,
            "correlation_id": env.correlation_id, "payload": json.loads(env.event.model_dump_json())}
