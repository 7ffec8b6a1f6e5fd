"""``/v1/users/{user_id}/…`` written by hand: add messages, a memory-graph tool call.

Each route is the :class:`palimpsest.Memory` method of the same name with the tenant taken from the key; a user
the tenant does not have answers 404 before any shard is asked (adding messages, or creating a graph memory, may
start one). Every other route of a user is a declared operation, generated
(:mod:`palimpsest.server.routes_generated`); why these two are not is said in :mod:`palimpsest.operations`.
"""

from __future__ import annotations

from fastapi import APIRouter

from palimpsest.server.access import Authorized, Caller
from palimpsest.server.errors import ApiError
from palimpsest.server.models import AddMessages, ToolCall
from palimpsest.server.responses import JsonRoute

router = APIRouter(prefix="/v1/users/{user_id}", tags=["users"], route_class=JsonRoute)
TOOLS = ("create_memory", "link_memories", "search_memories")


@router.post("/messages", summary="Add messages (a batch; idempotent by client_message_id; durable when answered)")
def add_messages(user_id: str, body: AddMessages, who: Caller = Authorized) -> dict:
    problems = [(f"messages[{i}].{f}", "remove it: the tenant comes from your API key and the user from the path")
                for i, m in enumerate(body.messages) for f in ("tenant", "user_id") if f in m]
    if problems:
        raise ApiError(400, "invalid_input", "rejected batch; nothing was written", problems)
    messages = [{**m, "tenant": who.tenant, "user_id": user_id} for m in body.messages]
    report = who.served.ingests.add(messages, extract_graph=body.extract_graph)  # merged with concurrent ones
    return {"received": report.received, "created": report.created, "duplicates": report.duplicates,
            "memory_ids": report.memory_ids}


@router.post("/tools/{name}", summary="A memory-graph tool call: create_memory, link_memories or search_memories")
def tool_call(user_id: str, name: str, body: ToolCall, who: Caller = Authorized) -> dict:
    if name not in TOOLS:
        raise ApiError(404, "not_found", f"no tool {name!r}", [("name", f"use one of {', '.join(TOOLS)}")])
    user = user_id if name == "create_memory" else who.user(user_id)  # creating may start a new user
    return who.memory.tool_call(who.tenant, user, name, body.arguments, reference=body.reference)
