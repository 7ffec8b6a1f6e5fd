"""``/v1/users/{user_id}/graph``: the user's memory graph's export (its merges and undoing one are declared
operations: :mod:`palimpsest.operations`)."""

from __future__ import annotations

from fastapi import APIRouter

from palimpsest.server.access import Authorized, Caller
from palimpsest.server.responses import JsonRoute

router = APIRouter(prefix="/v1/users/{user_id}/graph", tags=["graph"], route_class=JsonRoute)


@router.get("", summary="The user's memory graph as interactive HTML and GraphML, with counts")
def export(user_id: str, who: Caller = Authorized) -> dict:
    return who.memory.graph_export(who.tenant, who.user(user_id))
