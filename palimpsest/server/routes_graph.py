"""``/v1/users/{user_id}/graph/…``: a user's memory-graph merges, undoing one, and the graph's export."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from palimpsest.server.access import Authorized, Caller
from palimpsest.server.responses import JsonRoute

router = APIRouter(prefix="/v1/users/{user_id}/graph", tags=["graph"], route_class=JsonRoute)


class UnmergeBody(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    merge_id: str = Field(min_length=1)
    reason: str = "undone by the user"


@router.get("/merges", summary="The node merges of the user's memory graph, oldest first")
def merges(user_id: str, who: Caller = Authorized) -> dict:
    return {"merges": who.memory.graph_merges(who.tenant, who.user(user_id))}


@router.post("/unmerge", summary="Undo a node merge (an event; the nodes stand apart again)")
def unmerge(user_id: str, body: UnmergeBody, who: Caller = Authorized) -> dict:
    return who.memory.unmerge(who.tenant, who.user(user_id), body.merge_id, reason=body.reason)


@router.get("", summary="The user's memory graph as interactive HTML and GraphML, with counts")
def export(user_id: str, who: Caller = Authorized) -> dict:
    return who.memory.graph_export(who.tenant, who.user(user_id))
