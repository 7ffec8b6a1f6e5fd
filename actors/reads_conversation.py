"""``conversation`` and ``conversations``: one conversation of a user, message by message, and the list of a user's
conversations (declared in :mod:`palimpsest.operations`)."""

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


@reader("conversations")
def conversations(core, tenant: str, user_id: str, *, limit: int | None) -> Answer:
    """The user's conversations, the one spoken in last first (only the ``limit`` latest, if given): each one's
    id, how many messages it holds, its first and last message times and the text it opened with (its first
    recorded message, cut at 80 characters), so a conversation can be found and then read whole
    (``conversation``)."""
    memory = core.state.user(tenant, user_id)
    found: dict[str, dict] = {}
    for memory_id in [] if memory is None else memory.messages.order:
        m = memory.messages.by_id[memory_id]
        entry = found.get(m.conversation_id)
        if entry is None:
            found[m.conversation_id] = entry = {"conversation_id": m.conversation_id, "messages": 0,
                                                "first_message_at": m.occurred_at, "last_message_at": m.occurred_at,
                                                "opening": m.text[:80]}
        entry["messages"] += 1
        entry["first_message_at"] = min(entry["first_message_at"], m.occurred_at)
        entry["last_message_at"] = max(entry["last_message_at"], m.occurred_at)
    rows = sorted(found.values(), key=lambda e: (e["last_message_at"], e["conversation_id"]), reverse=True)
    rows = rows[:limit] if limit is not None else rows
    return Answer([{**e, "first_message_at": e["first_message_at"].isoformat(),
                    "last_message_at": e["last_message_at"].isoformat()} for e in rows])
