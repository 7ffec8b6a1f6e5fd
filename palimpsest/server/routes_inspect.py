"""``/v1/policies``: the store's retention policy and the presets a counterfactual can start from (the memory
inspector's other reads, one memory with its forgetting curve and the graph view's data, are declared operations:
:mod:`palimpsest.operations`). It reads the store's settings, not the shards: no user, no shard is asked.
"""

from __future__ import annotations

from fastapi import APIRouter

from palimpsest.server.access import Authorized, Caller
from palimpsest.server.responses import JsonRoute
from projections.folds.policy import listing

router = APIRouter(prefix="/v1", tags=["inspect"], route_class=JsonRoute)


@router.get("/policies", summary="The store's live retention policy, the presets (a counterfactual's policy) and "
                                 "the old names presets still answer to")
def policies(who: Caller = Authorized) -> dict:
    return listing(who.memory.settings.retention_policy)
