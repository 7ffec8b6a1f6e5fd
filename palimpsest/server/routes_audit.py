"""``/v1/audit/…``: the read-only audit of a store *while it is served*.

The shard actors hold the logs open, so the audit cannot attach the files as
``palimpsest sql`` does on a stopped store: each shard hands over its stored
rows (of the caller's tenant only, for a tenant key) and an
:class:`events.audit.AuditReader` is built from them in memory, with the same
read-only checks and the same tenant scoping. A tenant key audits its own
tenant, whatever the query text names; an admin key any tenant (``tenant``)
or the whole store.
"""

from __future__ import annotations

import json
import tempfile
from datetime import datetime
from pathlib import Path

from fastapi import APIRouter, Query
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field

from actors import commands as c
from events.audit import AuditReader
from events.commands import canonical_id
from events.log import ScanFilter
from palimpsest.server.access import Authorized, Caller
from palimpsest.server.errors import ApiError
from palimpsest.server.responses import JsonRoute

router = APIRouter(prefix="/v1", tags=["audit"], route_class=JsonRoute)
PARQUET = "application/vnd.apache.parquet"


class SqlBody(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    query: str = Field(min_length=1, max_length=100_000)
    tenant: str | None = None


def scope_of(who: Caller, tenant: str | None) -> str | None:
    """The tenant an audit covers: the key's own (a tenant key), or ``tenant``/everything (an admin key)."""
    tenant = canonical_id(tenant)
    if tenant is not None and tenant != who.tenant and not who.admin:
        raise ApiError(403, "forbidden", "a tenant key audits only its own tenant",
                       [("tenant", "leave it out (your key's tenant is used) or use an admin key")])
    return tenant if tenant is not None else (None if who.admin else who.tenant)


def reader(who: Caller, tenant: str | None, *, bounded: bool = False) -> AuditReader:
    """The caller's audit reader; ``bounded``: each query within the store's ``audit_limits`` (the caller's SQL)."""
    scope = scope_of(who, tenant)
    tables = who.memory.shards.ask_each(c.AuditRows(tenant=scope))
    return AuditReader.of_tables(tables, tenant=scope, limits=who.memory.settings.audit_limits if bounded else None)


def _table_json(table) -> Response:
    """Columns and rows; values JSON cannot hold (times) as ``str(value)``, as ``palimpsest sql --json`` prints."""
    body = {"columns": table.column_names, "rows": [list(r.values()) for r in table.to_pylist()]}
    return Response(json.dumps(body, ensure_ascii=False, default=str), media_type="application/json")


@router.post("/audit/sql", summary="Read-only SQL over the log (view `events`; a tenant key: its own rows only)")
def sql(body: SqlBody, who: Caller = Authorized) -> Response:
    audit = reader(who, body.tenant, bounded=True)
    try:
        return _table_json(audit.sql(body.query))
    finally:
        audit.close()


@router.get("/audit/events", summary="The log's rows as `palimpsest events` prints them (shard column included)")
def audit_events(
    who: Caller = Authorized,
    tenant: str | None = None,
    user_id: str | None = None,
    kind: list[str] | None = Query(default=None),
    from_seq: int | None = Query(default=None, ge=0),
    to_seq: int | None = Query(default=None, ge=0),
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int | None = Query(default=None, ge=1, le=1_000_000),
) -> Response:
    audit = reader(who, tenant)
    try:
        flt = ScanFilter(tenant, user_id, from_seq, to_seq, since, until, tuple(kind) if kind else None)
        return _table_json(audit.events(flt, limit))
    finally:
        audit.close()


@router.get("/audit/export", summary="The log (your tenant's, or with an admin key any or all) as Parquet",
            response_class=Response, responses={200: {"content": {PARQUET: {}}}})
def export(who: Caller = Authorized, tenant: str | None = None) -> Response:
    audit = reader(who, tenant)
    try:
        with tempfile.TemporaryDirectory(prefix="palimpsest-export-") as tmp:
            data = audit.export_parquet(Path(tmp)).read_bytes()
    finally:
        audit.close()
    return Response(data, media_type=PARQUET, headers={"Content-Disposition": 'attachment; filename="events.parquet"'})
