"""Learning-loop and audit queries of a shard: ``explain`` (a memory's whole chain), the Molt inputs and the
policy history. ``explain`` scans the user's events (an audit reads the log, like the counterfactual)."""

from __future__ import annotations

from actors.commands import Explain, PolicyHistory
from actors.decision import Answer
from actors.reads import fused_hits
from events.errors import InvalidInputError
from events.log import ScanFilter
from projections.queries.explain import UnknownMemory, explain


def explain_memory(core, q: Explain) -> Answer:
    memory = core.state.user(q.tenant, q.user_id)
    if memory is None:
        raise InvalidInputError([("user_id", f"{q.tenant}/{q.user_id} has no memories")], what="explain")
    score = None
    if q.query is not None and q.query_vector is not None:
        hits = fused_hits(core, q.model_copy(update={"now": q.at}), q.fusion.candidates)
        wanted = {q.memory_id}
        if q.memory_id in memory.notes.notes:
            wanted |= set(memory.notes.notes[q.memory_id].source_message_ids)
        hit = next((h for h in hits if h.memory_id in wanted), None)
        score = ({"query": q.query, "memory_id": hit.memory_id, "rank": hit.rank, "score": hit.score,
                  "breakdown": hit.breakdown} if hit is not None else
                 {"query": q.query, "rank": None, "note": f"not among the {q.fusion.candidates} best hits at "
                                                         "this time (archived, invalidated or not matching)"})
    envelopes = core.log.scan(ScanFilter(tenant=q.tenant, user_id=q.user_id))
    try:
        return Answer(explain(memory, envelopes, q.memory_id, q.at, core.state.policy, score))
    except UnknownMemory:
        raise InvalidInputError([("memory_id", f"{q.memory_id!r} is no memory, note or graph memory of "
                                               f"{q.tenant}/{q.user_id}; take an id from search, context or notes")],
                                what="explain") from None


def policy_history(core, q: PolicyHistory) -> Answer:
    memory = core.state.user(q.tenant, q.user_id)
    if memory is None:
        return Answer({"parameters": {}, "history": []})
    reverted = memory.molt.reverted()
    return Answer({"parameters": memory.molt.parameters(),
                   "history": [{**r.to_dict(), "reverted": r.change_id in reverted} for r in memory.molt.records]})
