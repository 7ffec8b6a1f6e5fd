"""Note, profile, tier and archive queries of a shard: views of the folded projections (``projections.queries.views``)."""

from __future__ import annotations

from actors.commands import Archived, NoteHistory, Notes, Profile, Tiers
from actors.decide_archive import selected
from actors.decision import Answer
from projections.queries import views


def notes(core, q: Notes) -> Answer:
    memory = core.state.user(q.tenant, q.user_id)
    return Answer(views.notes_view(memory, q.now, q.at, q.include_inactive) if memory else [])


def note_history(core, q: NoteHistory) -> Answer:
    """The version chain of ``note_id`` and whose it is (None when no user of this shard has it)."""
    for t, u, memory in selected(core.state, q.tenant, q.user_id):
        if q.note_id in memory.notes.notes:
            return Answer({"tenant": t, "user_id": u, "chain": views.history_view(memory, q.note_id, q.now)})
    return Answer(None)


def profile(core, q: Profile) -> Answer:
    memory = core.state.user(q.tenant, q.user_id)
    if memory is None:
        return Answer({"traits": {}, "user_knowledge": [], "distillations": 0, "skills": []})
    out = views.profile_view(memory, q.include_knowledge, q.include_assistant_knowledge)
    # the style / tool-choice skills the dispatcher learned from feedback (seed 003 §6), latest version each
    out["skills"] = [{"skill": a.skill, "preference": a.preference, "weight": a.weight, "version": a.version,
                      "layer": a.layer, "adjustment_id": a.adjustment_id, "since": a.at.isoformat()}
                     for a in memory.adjustments.skills()]
    return Answer(out)


def tiers(core, q: Tiers) -> Answer:
    memory = core.state.user(q.tenant, q.user_id)
    if memory is None:
        return Answer({})
    out = views.tiers_view(memory, q.now, core.state.tier_config)
    conversation_id = q.conversation_id
    if conversation_id is None and memory.messages.order:
        conversation_id = memory.messages.by_id[memory.messages.order[-1]].conversation_id
    out["conversation_id"] = conversation_id
    out.update(views.working_view(memory, conversation_id, q.now) if conversation_id else {})
    return Answer(out)


def archived(core, q: Archived) -> Answer:
    """The user's archived memories: when, why, retention at the time, and the text."""
    memory = core.state.user(q.tenant, q.user_id)
    if memory is None:
        return Answer([])
    by_id = memory.messages.by_id
    return Answer([
        {"memory_id": e.memory_id, "reason": e.reason, "at": e.at.isoformat(), "policy": e.policy,
         "retention": e.retention, "detail": e.detail, "turn_id": by_id[e.memory_id].turn_id,
         "text": by_id[e.memory_id].text}
        for e in sorted(memory.archive.archived.values(), key=lambda e: (e.at, by_id[e.memory_id].seq))
    ])
