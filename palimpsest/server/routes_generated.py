"""The HTTP routes of the declared operations (:mod:`palimpsest.operations`), generated from their declarations.

Each route is the operation's method on the served :class:`palimpsest.Memory` with the tenant taken from the
key and the user checked (404 before any shard is asked for a user the tenant does not have, in any Unicode form;
a write may start a new user unless declared otherwise; ``?tenant=`` names another tenant's user where declared,
for an admin key); an admin operation needs an admin key, and one
over the whole store answers at ``/v1`` alone, with neither tenant nor user. A GET takes the parameters as query
parameters (times with their offset), a POST as a JSON body (the operation's request model; tenant-wide, it may
also name one ``user_id`` of the tenant, which then must exist); the answer is the result (a record with
``to_dict`` as that, another dataclass or a pydantic model as its fields), or ``{answer: result}`` when the
declaration names a key. The routes still written by hand, and why, are listed in :mod:`palimpsest.operations`.
"""

from __future__ import annotations

import dataclasses
import inspect
from datetime import datetime
from typing import Literal

from fastapi import APIRouter, Query
from pydantic import AwareDatetime

from events.commands import canonical_id
from palimpsest.operation import ADMIN, STORE, Operation, base_type, request_model
from palimpsest.operations import OPERATIONS
from palimpsest.server.access import Authorized, Caller
from palimpsest.server.errors import ApiError
from palimpsest.server.responses import JsonRoute

router = APIRouter(route_class=JsonRoute)
P = inspect.Parameter


def _scoped(op: Operation, tenant_wide: bool) -> bool:
    """Whether the route's body may name one user: a tenant-wide POST's may (not one over the whole store)."""
    return tenant_wide and op.user != STORE and op.http.method == "POST"


def _signature(op: Operation, tenant_wide: bool) -> inspect.Signature:
    """What FastAPI reads: the path parameters, the caller, then the query parameters (GET) or the body (POST)."""
    path_names = op.http.path_params()
    params = [] if tenant_wide else [P("user_id", P.KEYWORD_ONLY, annotation=str)]
    params += [P(n, P.KEYWORD_ONLY, annotation=op.param(n).type) for n in path_names]
    params.append(P("who", P.KEYWORD_ONLY, default=Authorized, annotation=Caller))
    if op.other_tenant and not tenant_wide:
        params.append(P("tenant", P.KEYWORD_ONLY, annotation=str | None, default=Query(
            None, min_length=1, description="another tenant's user (an admin key); default: your key's tenant")))
    rest = [p for p in op.params if p.name not in path_names]
    if op.http.method == "GET":
        for p in rest:
            bounds = {k: v for k, v in (("ge", p.ge), ("le", p.le)) if v is not None}
            default = {} if p.required else {"default": p.default}
            kind, nullable = base_type(p.type)
            annotation = p.type
            if p.choices:
                annotation = Literal[p.choices] | None if nullable else Literal[p.choices]
            elif kind is datetime:  # with its offset: a time without one is ambiguous
                annotation = AwareDatetime | None if nullable else AwareDatetime
            if kind is str:  # a text's bounds are its length's
                bounds = {{"ge": "min_length", "le": "max_length"}[k]: v for k, v in bounds.items()}
            params.append(P(p.name, P.KEYWORD_ONLY, annotation=annotation,
                            default=Query(**default, **bounds, description=p.help or None)))
    elif rest or _scoped(op, tenant_wide):  # a body with nothing required may be left out
        model = request_model(op, body=True, scoped=_scoped(op, tenant_wide))
        if any(p.required for p in rest):
            params.append(P("body", P.KEYWORD_ONLY, annotation=model))
        else:
            params.append(P("body", P.KEYWORD_ONLY, annotation=model | None, default=None))
    return inspect.Signature(params, return_annotation=dict)


def _endpoint(op: Operation, tenant_wide: bool):
    def endpoint(**values):
        who: Caller = values.pop("who")
        if op.kind == ADMIN:
            who.require_admin(op.name.replace("_", " "))
        if "body" in values:
            values.update((values.pop("body") or request_model(op, body=True, scoped=_scoped(op, tenant_wide))())
                          .model_dump())
        user_id, tenant = values.pop("user_id", None), values.pop("tenant", None)
        if op.user == STORE:  # the whole store (an admin's)
            scope = {}
        elif user_id is None:  # tenant-wide (a POST's body may name one user of the tenant)
            scope = {"tenant": who.tenant}
        elif tenant is not None and tenant != who.tenant:  # another tenant's user: an admin's
            who.require_admin(f"{op.name.replace('_', ' ')} of another tenant's user")
            scope = {"tenant": tenant, "user_id": _known(who, tenant, user_id)}
        elif op.starts_user:  # a write may start a new user (its ids are checked by the method)
            scope = {"tenant": who.tenant, "user_id": canonical_id(user_id)}
        else:
            scope = {"tenant": who.tenant, "user_id": _known(who, who.tenant, user_id)}
        result = plain(getattr(who.memory, op.name)(**scope, **op.python(values)))
        return {op.http.answer: result} if op.http.answer else result

    endpoint.__name__ = endpoint.__qualname__ = op.http.name or op.name
    endpoint.__signature__ = _signature(op, tenant_wide)
    return endpoint


def _known(who: Caller, tenant: str, user_id: str) -> str:
    """``user_id`` in its canonical form (NFC) if ``tenant`` has that user, in that form or as given (a store
    written before ids were NFC); 404 otherwise, before any shard is asked."""
    if not who.knows(tenant, user_id):
        raise ApiError(404, "not_found", f"no user {canonical_id(user_id)!r} in "
                       + ("your tenant" if tenant == who.tenant else f"tenant {tenant!r}"),
                       [("user_id", "add messages for this user first; user ids are per tenant")])
    return canonical_id(user_id)


def plain(result):
    """A result as its JSON: a record with ``to_dict`` (a hit, a context) as that, another dataclass or a pydantic
    model as its fields, a list of them each."""
    if isinstance(result, list):
        return [plain(r) for r in result]
    if hasattr(result, "to_dict"):
        return result.to_dict()
    if hasattr(result, "model_dump"):
        return result.model_dump(mode="json")
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        return dataclasses.asdict(result)
    return result


def add_routes(target: APIRouter, ops) -> None:
    """The routes of ``ops`` (each of its user, and tenant-wide where declared) on ``target``."""
    for op in ops:
        for path, summary, tenant_wide in op.routes():
            target.add_api_route(path, _endpoint(op, tenant_wide), methods=[op.http.method], summary=summary,
                                 tags=["store" if tenant_wide else "users"])


add_routes(router, OPERATIONS.values())
