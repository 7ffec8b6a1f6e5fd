"""``user_stats``: how much the memory holds of one user (declared in :mod:`palimpsest.operations`)."""

from __future__ import annotations

from actors.declared import reader
from actors.decision import Answer


@reader("user_stats")
def user_stats(core, tenant: str, user_id: str, *, conversation_id: str | None) -> Answer:
    """Counts of messages, conversations, active notes, episodes and archived memories, and the first and last
    message times; with ``conversation_id``, of what came from that conversation (the notes drawn from its
    messages, the episodes holding them). A user the shard does not hold has none of anything."""
    memory = core.state.user(tenant, user_id)
    messages = [] if memory is None else [memory.messages.by_id[i] for i in memory.messages.order]
    if conversation_id is not None:
        messages = [m for m in messages if m.conversation_id == conversation_id]
    ids = {m.event_id for m in messages}
    times = sorted(m.occurred_at for m in messages)
    return Answer({
        "conversation_id": conversation_id,
        "messages": len(messages),
        "conversations": len({m.conversation_id for m in messages}),
        "notes": 0 if memory is None else sum(1 for n in memory.notes.active()
                                              if conversation_id is None or ids & set(n.source_message_ids)),
        "episodes": 0 if memory is None else sum(1 for e in memory.episodes.episodes()
                                                 if conversation_id is None or ids & set(e.member_ids)),
        "archived": 0 if memory is None else len(ids & memory.archive.archived.keys()),
        "first_message_at": times[0].isoformat() if times else None,
        "last_message_at": times[-1].isoformat() if times else None,
    })
