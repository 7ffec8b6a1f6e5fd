"""The counterfactual: what a tenant's users would keep and lose under another retention policy (the tenant-wide
note review and a note found by id alone are declared operations: :mod:`palimpsest.operations`)."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from palimpsest.server.access import Authorized, Caller
from palimpsest.server.responses import JsonRoute

router = APIRouter(prefix="/v1", tags=["store"], route_class=JsonRoute)


class Body(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ComparedQuery(Body):
    user_id: str = Field(min_length=1)
    query: str = Field(min_length=1)


class CounterfactualBody(Body):
    policy: dict = Field(default_factory=dict, description="Retention policy fields (as in a policy file); left "
                                                           "out: the preset's, else the defaults")
    preset: str | None = Field(None, description="Start from this preset (a name from GET /v1/policies)")
    now: AwareDatetime | None = None
    queries: list[ComparedQuery] = Field(default_factory=list, max_length=1000)
    k: int = Field(default=10, ge=1, le=1000)


@router.post("/counterfactual", summary="What your users would keep and lose under another retention policy "
                                        "(read only)")
def counterfactual(body: CounterfactualBody, who: Caller = Authorized) -> dict:
    from projections.folds.policy import DEFAULT_POLICY, preset

    policy = (preset(body.preset) if body.preset else DEFAULT_POLICY).replace(**body.policy)
    queries = [(who.tenant, who.user(q.user_id), q.query) for q in body.queries]
    return {"users": who.memory.counterfactual(policy, body.now, queries=queries, k=body.k, tenant=who.tenant)}
