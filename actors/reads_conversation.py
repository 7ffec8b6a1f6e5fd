"""``conversation``: one conversation of a user, message by message (declared in :mod:`palimpsest.operations`)."""

from __future__ import annotations

from actors.declared import reader
from actors.decision import Answer


@reader("conversation")
def conversation(core, tenant: str, user_id: str, *, conversation_id: str, limit: int | None,
                 withdrawn: bool) -> Answer:
    """The conversation's messages in log order (the last ``limit`` of them, if given), each with its metadata
    and, if archived, when and why. Messages archived by hand (withdrawn: a session's popped or cleared items)
    are left out unless ``withdrawn``; those archived by their retention stay: they were said."""
    memory = core.state.user(tenant, user_id)
    if memory is None:
        return Answer([])
    archived = memory.archive.archived
    out = []
    for memory_id in memory.messages.order:
        m = memory.messages.by_id[memory_id]
        if m.conversation_id != conversation_id:
            continue
        entry = archived.get(memory_id)
        if entry is not None and entry.reason == "manual" and not withdrawn:
            continue
        out.append({"memory_id": memory_id, "role": m.role, "speaker": m.speaker, "text": m.text,
                    "occurred_at": m.occurred_at.isoformat(), "turn_id": m.turn_id, "metadata": dict(m.metadata),
                    "archived": None if entry is None else {"reason": entry.reason, "detail": entry.detail,
                                                            "at": entry.at.isoformat()}})
    return Answer(out[-limit:] if limit is not None else out)
