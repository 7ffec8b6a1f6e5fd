"""``/v1/users/{user_id}/feedback/judge``: the Feedback Judge on a user's reaction (the recorded signals are a
declared operation, ``feedback``: :mod:`palimpsest.operations`)."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from palimpsest.server.access import Authorized, Caller
from palimpsest.server.responses import JsonRoute

router = APIRouter(prefix="/v1/users/{user_id}/feedback", tags=["users"], route_class=JsonRoute)


class JudgeBody(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    user_input: str = Field(min_length=1)
    agent_response: str = Field(min_length=1)
    context_window: list[str] = Field(default_factory=list, max_length=1000)
    memory_ids: list[str] = Field(default_factory=list, max_length=10_000)
    query: str | None = Field(default=None, max_length=20_000)  # the question the judged reply answered


@router.post("/judge", summary="Judge the user's turn that answers an agent reply; records the signal")
def judge(user_id: str, body: JudgeBody, who: Caller = Authorized) -> dict:
    return who.memory.judge_feedback(who.tenant, who.user(user_id), body.user_input, body.agent_response,
                                     context_window=body.context_window, retrieved=body.memory_ids,
                                     query=body.query)
