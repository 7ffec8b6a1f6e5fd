"""Archival deciders: sweep by retention, archive and restore by hand. Archival and restore are events;
nothing is deleted."""

from __future__ import annotations

from actors.commands import ArchiveMemories, RestoreMemories, SweepArchive
from actors.decision import Decision, Deps, new_event_id
from events.envelope import PendingEvent
from events.errors import InvalidInputError
from events.model import MemoryArchived, MemoryRestored
from projections.folds.retention import archival_candidates
from projections.folds.state import ShardState, UserMemory


def selected(state: ShardState, tenant: str | None, user_id: str | None):
    """The shard's users in stream order, optionally narrowed to one tenant and/or user id.

    One at a time: with a residency cap a user is loaded when its turn comes and may leave memory after.
    """
    for t, u in sorted(state.users):
        if (tenant and t != tenant) or (user_id and u != user_id):
            continue
        yield t, u, state.users[(t, u)]


def decide_sweep(state: ShardState, cmd: SweepArchive, deps: Deps) -> Decision:
    """One ``memory_archived`` event per user and reason for the memories whose retention at ``now`` fell
    below the policy's floor (or passed its age limit); already archived ones, and the messages that state a
    constraint in force then, are left alone. ``dry_run`` reports without writing."""
    policy = state.policy
    pending, report = [], []
    for t, u, memory in selected(state, cmd.tenant, cmd.user_id):
        pinned = memory.notes.constraint_sources(cmd.now)
        rows = [r for r in archival_candidates(memory.retention, cmd.now, policy, pinned)
                if not memory.archive.is_archived(r.memory_id)]
        for reason in ("retention_floor", "category_rule"):
            chosen = [r for r in rows if r.archive_reason == reason]
            if not chosen:
                continue
            event = MemoryArchived(
                memory_ids=tuple(r.memory_id for r in chosen), reason=reason, at=cmd.now, policy=policy.name,
                retentions=tuple(r.retention for r in chosen),
            )
            pending.append(PendingEvent(t, u, new_event_id(), event))
            report.append({"tenant": t, "user_id": u, "reason": reason, "memory_ids": list(event.memory_ids),
                           "texts": [memory.messages.by_id[m].text for m in event.memory_ids]})
    return Decision([] if cmd.dry_run else pending, report)


def decide_archive(state: ShardState, cmd: ArchiveMemories, deps: Deps) -> Decision:
    """Archive the given memories by hand (reason ``manual``); the outcome lists those newly archived."""
    memory = known_memories(state, cmd.tenant, cmd.user_id, cmd.memory_ids, "archive")
    fresh = [m for m in dict.fromkeys(cmd.memory_ids) if not memory.archive.is_archived(m)]
    if not fresh:
        return Decision([], [])
    event = MemoryArchived(memory_ids=tuple(fresh), reason="manual", at=cmd.now, policy="", detail=cmd.reason)
    return Decision([PendingEvent(cmd.tenant, cmd.user_id, new_event_id(), event)], fresh)


def decide_restore(state: ShardState, cmd: RestoreMemories, deps: Deps) -> Decision:
    """Bring archived memories back into default retrieval; restoring counts as an access."""
    memory = known_memories(state, cmd.tenant, cmd.user_id, cmd.memory_ids, "restore")
    not_archived = [m for m in cmd.memory_ids if not memory.archive.is_archived(m)]
    if not_archived:
        raise InvalidInputError(
            [("memory_ids", f"{', '.join(not_archived)} not archived; list archived ones with `palimpsest archive list`")],
            what="restore",
        )
    ids = tuple(dict.fromkeys(cmd.memory_ids))
    event = MemoryRestored(memory_ids=ids, at=cmd.now, reason=cmd.reason)
    return Decision([PendingEvent(cmd.tenant, cmd.user_id, new_event_id(), event)], list(ids))


def known_memories(state: ShardState, tenant: str, user_id: str, memory_ids, what: str) -> UserMemory:
    memory = state.user(tenant, user_id)
    if not memory_ids:
        raise InvalidInputError([("memory_ids", "empty; name at least one memory id")], what=what)
    unknown = [m for m in memory_ids if memory is None or m not in memory.messages.by_id]
    if unknown:
        raise InvalidInputError(
            [("memory_ids", f"{', '.join(unknown)} not memories of {tenant}/{user_id}; ids come from search results")],
            what=what,
        )
    return memory
