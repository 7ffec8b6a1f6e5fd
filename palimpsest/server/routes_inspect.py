"""Reads the memory inspector (``/ui``) needs beyond the plain API: one memory with its forgetting curve, the
graph as the graph view's data, feedback signals, the retention-policy presets and a counterfactual for one user.

Like every ``/v1/users/{user_id}/…`` route, the tenant is the key's and a
user the tenant does not have answers 404 before any shard is asked.
"""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter, Query

from palimpsest.server.access import Authorized, Caller
from palimpsest.server.errors import ApiError
from palimpsest.server.models import CounterfactualBody
from projections.folds.policy import DEFAULT_POLICY, PRESETS, RetentionPolicy

router = APIRouter(prefix="/v1", tags=["inspect"])


@router.get("/users/{user_id}/memories/{memory_id}",
            summary="One memory: the message, its retention at `now` with why, its forgetting curve, touches, archival")
def memory(user_id: str, memory_id: str, who: Caller = Authorized, now: datetime | None = None,
           until: datetime | None = None, points: int = Query(default=80, ge=2, le=2000)) -> dict:
    for name, value in (("now", now), ("until", until)):
        if value is not None and value.tzinfo is None:
            raise ApiError(400, "invalid_input", f"{name} has no timezone",
                           [(name, "give an ISO-8601 time with an offset, e.g. 2024-06-01T00:00:00+00:00")])
    return who.memory.memory_retention(who.tenant, who.user(user_id), memory_id, now=now, until=until, points=points)


@router.get("/users/{user_id}/graph", summary="The user's memory graph as the graph view draws it (nodes, edges)")
def graph(user_id: str, who: Caller = Authorized) -> dict:
    return who.memory.graph_data(who.tenant, who.user(user_id))


@router.get("/users/{user_id}/feedback", summary="The user's feedback signals (only those naming `memory_id`)")
def feedback(user_id: str, who: Caller = Authorized, memory_id: str | None = None) -> dict:
    return {"signals": who.memory.feedback(who.tenant, who.user(user_id), memory_id=memory_id)}


@router.get("/policies", summary="The retention-policy presets (for a counterfactual) and the store's live policy")
def policies(who: Caller = Authorized) -> dict:
    live = who.memory.settings.retention_policy
    return {"live": live.model_dump(mode="json"),
            "presets": [p.model_dump(mode="json") for p in PRESETS.values()]}


@router.post("/users/{user_id}/counterfactual",
             summary="What this user would keep and lose under another retention policy, and how queries re-rank")
def counterfactual(user_id: str, body: CounterfactualBody, who: Caller = Authorized) -> dict:
    policy = _policy(body)
    user = who.user(user_id)
    queries = [(who.tenant, user, q) for q in body.queries if q.strip()]
    report = who.memory.counterfactual(policy, body.now, queries=queries, k=body.k, tenant=who.tenant)
    mine = next((r for r in report if r["user_id"] == user), None)
    return {"policy": policy.model_dump(mode="json"), "live": who.memory.settings.retention_policy.name,
            "user": mine}


def _policy(body: CounterfactualBody) -> RetentionPolicy:
    if (body.preset is None) == (body.policy is None):
        raise ApiError(400, "invalid_input", "give a preset or a policy",
                       [("preset", f"one of {', '.join(PRESETS)}, or leave it out and send `policy`"),
                        ("policy", "the policy's fields as a JSON object (see GET /v1/policies)")])
    if body.preset is not None:
        if body.preset not in PRESETS:
            raise ApiError(400, "invalid_input", f"no preset {body.preset!r}",
                           [("preset", f"use one of {', '.join(PRESETS)}")])
        return PRESETS[body.preset]
    # Fields left out keep the defaults, as in a policy file; every bad field is named (PolicyError → 400).
    return DEFAULT_POLICY.replace(**{"name": "uploaded", "description": "", **body.policy})
