"""``/v1/keys``: an admin manages the store's API keys through the server (``palimpsest --server URL keys …``).

The same key log as ``palimpsest --store DIR keys …`` (:mod:`palimpsest.server.keys`): every replica reads
it before each check, so a key created or revoked here is honoured by all of them at once.
"""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from palimpsest.server.access import Authorized, Caller
from palimpsest.server.errors import ApiError
from palimpsest.server.responses import JsonRoute

router = APIRouter(prefix="/v1/keys", tags=["keys"], route_class=JsonRoute)


class NewKey(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    tenant: str = Field(min_length=1, max_length=200)
    admin: bool = False
    label: str = Field(default="", max_length=200)


class Revocation(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    reason: str = Field(default="", max_length=500)


@router.get("", summary="Every key (never its secret) with tenant, rights and state (admin)")
def listing(who: Caller = Authorized, tenant: str | None = None) -> dict:
    who.require_admin("listing keys")
    rows = who.served.keys.listing()
    return {"keys": [r for r in rows if tenant is None or r["tenant"] == tenant]}


@router.post("", summary="Create a key; its token is in this answer and nowhere else (admin)")
def create(body: NewKey, who: Caller = Authorized) -> dict:
    who.require_admin("creating keys")
    token, key = who.served.keys.create(body.tenant, admin=body.admin, label=body.label)
    return {"token": token, "key": key.public()}


@router.post("/{key_id}/revoke", summary="End a key: requests with it get 401 at once (admin)")
def revoke(key_id: str, body: Revocation, who: Caller = Authorized) -> dict:
    who.require_admin("revoking keys")
    if key_id not in who.served.keys.keys:
        who.served.keys.refresh()
    if key_id not in who.served.keys.keys:
        raise ApiError(404, "not_found", f"no key {key_id!r}", [("key_id", "see GET /v1/keys for the key ids")])
    return {"key": who.served.keys.revoke(key_id, reason=body.reason).public()}
