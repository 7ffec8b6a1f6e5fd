"""Why the learning loop moved held-back questions: the evidence that left (or entered) the top 10, and the
adjustments that applied to it when the question was asked.

For each held-back question whose recall@10 differs with and without the
loop, the evidence turns the loop dropped from the top 10 (found in the
``palimpsest_no_feedback`` hits) are classified by what applied to them at
the question's time: a ``working:penalty``, a ``stable:penalty``, a
``stable:invalidate``, or nothing (``unadjusted``: the Molt policy, or a
penalty on the notes that stood for them, moved them). Read-only: searches
with ``touch_reason=None`` and the adjustment listing.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime

from actors import commands as c
from benchmarks.dataset import Question
from palimpsest.locomo import TENANT
from projections.adapters.embedding import encode_whole_queries


def _applies(a: dict, now: datetime | None) -> bool:
    if now is None:
        return a["reverted_at"] is None
    at = datetime.fromisoformat(a["at"])
    if at > now or (a["reverted_at"] is not None and datetime.fromisoformat(a["reverted_at"]) <= now):
        return False
    return a["until"] is None or now < datetime.fromisoformat(a["until"])


def _hits(mem, q: Question, fusion, vector) -> list:
    return mem.shards.ask(TENANT, q.user_id, c.Search(
        tenant=TENANT, user_id=q.user_id, query=q.question, query_vector=vector, k=10, now=q.asked_at,
        scope="active", fusion=fusion, touch_reason=None))


def losses(mem, questions: list[Question], with_loop: list, without: list, fusion_on, fusion_off) -> dict:
    """Counts of held-back questions the loop lost / won at recall@10, and what applied to the lost evidence."""
    changed = [(q, a.values["recall@10"], b.values["recall@10"]) for q, a, b in zip(questions, with_loop, without)
               if a.values["recall@10"] != b.values["recall@10"]]
    lost = [q for q, a, b in changed if a < b]
    by_user: dict[str, list[dict]] = {}
    causes: Counter = Counter()
    for q in lost:
        vector = encode_whole_queries(mem.embedder, [q.question])[0]
        on = {h.turn_id for h in _hits(mem, q, fusion_on, vector)}
        if q.user_id not in by_user:
            by_user[q.user_id] = mem.adjustments(TENANT, q.user_id)
        for h in _hits(mem, q, fusion_off, vector):
            if h.turn_id not in q.evidence or h.turn_id in on:
                continue
            applying = [a for a in by_user[q.user_id] if h.memory_id in a["target_ids"] and _applies(a, q.asked_at)]
            kinds = sorted({f"{a['layer']}:{a['action']}" for a in applying}) or ["unadjusted"]
            causes["+".join(kinds)] += 1
    return {"questions_lost_at_10": len(lost), "questions_won_at_10": len(changed) - len(lost),
            "lost_evidence_by_adjustment": dict(causes)}
