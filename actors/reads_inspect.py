"""What the memory inspector reads about one memory: the recorded message, its retention now and its curve.

Views of the folded projections only (messages, retention, touches,
archive); nothing is written, no touch is recorded.
"""

from __future__ import annotations

from dataclasses import asdict

from actors.commands import MemoryRetention
from actors.decision import Answer
from events.errors import InvalidInputError
from projections.folds.retention import as_of, assess
from projections.queries.retention_curve import curve


def memory_retention(core, q: MemoryRetention) -> Answer:
    """The message, its retention row at ``now``, its curve, touches by reason and its archival (if any)."""
    memory = core.state.user(q.tenant, q.user_id)
    msg = memory.messages.by_id.get(q.memory_id) if memory is not None else None
    item = memory.retention.items.get(q.memory_id) if memory is not None else None
    if msg is None or item is None:
        raise InvalidInputError([("memory_id", f"{q.memory_id!r} matches no memory of this user; ids come from "
                                               "search results, notes' sources and the retention list")],
                                what="memory")
    policy = core.state.policy
    then = as_of(item, q.now, policy)
    stats = memory.touches.stats.get(q.memory_id)
    entry = memory.archive.archived.get(q.memory_id)
    return Answer({
        "memory": {"memory_id": msg.event_id, "seq": msg.seq, "text": msg.text, "speaker": msg.speaker,
                   "role": msg.role, "occurred_at": msg.occurred_at.isoformat(),
                   "conversation_id": msg.conversation_id, "turn_id": msg.turn_id,
                   "client_message_id": msg.client_message_id, "memory_type": item.memory_type,
                   "category": item.category, "classifier": item.classifier},
        "policy": policy.name,
        "retention": (asdict(assess(then, q.now, policy, memory.notes.constraint_sources(q.now)))
                      if then is not None else None),
        "curve": curve(item, policy, q.now, until=q.until, points=q.points),
        "touches": {"count": stats.count if stats else 0, "by_reason": dict(stats.by_reason) if stats else {},
                    "last_touched_at": stats.last_touched_at.isoformat() if stats and stats.last_touched_at else None},
        "archived": ({"at": entry.at.isoformat(), "reason": entry.reason, "policy": entry.policy,
                      "retention": entry.retention, "detail": entry.detail} if entry is not None else None),
        "restored": memory.archive.restored.get(q.memory_id, 0),
    })
