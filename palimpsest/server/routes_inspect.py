"""Reads the memory inspector (``/ui``) needs beyond the rest of the API: one memory with its forgetting curve,
the memory graph as the graph view's data, and the retention-policy presets a counterfactual can start from.

Like every ``/v1/users/{user_id}/…`` route, the tenant is the key's and a
user the tenant does not have answers 404 before any shard is asked.
"""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter, Query

from palimpsest.server.access import Authorized, Caller
from palimpsest.server.errors import ApiError
from palimpsest.server.responses import JsonRoute
from projections.folds.policy import listing

router = APIRouter(prefix="/v1", tags=["inspect"], route_class=JsonRoute)


@router.get("/users/{user_id}/memories/{memory_id}",
            summary="One memory: the message, its retention at `now` with why, its forgetting curve, touches, archival")
def memory(user_id: str, memory_id: str, who: Caller = Authorized, now: datetime | None = None,
           until: datetime | None = None, points: int = Query(default=80, ge=2, le=2000)) -> dict:
    for name, value in (("now", now), ("until", until)):
        if value is not None and value.tzinfo is None:
            raise ApiError(400, "invalid_input", f"{name} has no timezone",
                           [(name, "give an ISO-8601 time with an offset, e.g. 2024-06-01T00:00:00+00:00")])
    return who.memory.memory_retention(who.tenant, who.user(user_id), memory_id, now=now, until=until, points=points)


@router.get("/users/{user_id}/graph/view", summary="The user's memory graph as the graph view draws it (nodes, edges)")
def graph_view(user_id: str, who: Caller = Authorized) -> dict:
    return who.memory.graph_data(who.tenant, who.user(user_id))


@router.get("/policies", summary="The store's live retention policy, the presets (a counterfactual's policy) and "
                                 "the old names presets still answer to")
def policies(who: Caller = Authorized) -> dict:
    return listing(who.memory.settings.retention_policy)
