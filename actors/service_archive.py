"""Archival commands of a shard (a mixin of :class:`ShardService`): sweep by retention, archive and
restore by hand, list. Archival and restore are events; nothing is deleted."""

from __future__ import annotations

from datetime import datetime

from actors.deciders import new_event_id
from events.envelope import PendingEvent
from events.errors import InvalidInputError
from events.model import MemoryArchived, MemoryRestored
from projections.retention import archival_candidates


class ArchiveMixin:
    def sweep(self, now: datetime, tenant: str | None = None, user_id: str | None = None, dry_run: bool = False) -> list[dict]:
        """Archive every memory whose retention at ``now`` fell below the policy's floor (or past its age limit).

        One ``memory_archived`` event per user and reason; already archived
        memories are left alone. ``dry_run`` reports without writing.
        """
        policy = self.state.policy
        pending, report = [], []
        for (t, u), memory in sorted(self.state.users.items()):
            if (tenant and t != tenant) or (user_id and u != user_id):
                continue
            rows = [r for r in archival_candidates(memory.retention, now, policy) if not memory.archive.is_archived(r.memory_id)]
            for reason in ("retention_floor", "category_rule"):
                chosen = [r for r in rows if r.archive_reason == reason]
                if not chosen:
                    continue
                event = MemoryArchived(
                    memory_ids=tuple(r.memory_id for r in chosen), reason=reason, at=now, policy=policy.name,
                    retentions=tuple(r.retention for r in chosen),
                )
                pending.append(PendingEvent(t, u, new_event_id(), event))
                report.append({"tenant": t, "user_id": u, "reason": reason, "memory_ids": list(event.memory_ids),
                               "texts": [memory.messages.by_id[m].text for m in event.memory_ids]})
        if pending and not dry_run:
            self._commit(pending)
        return report

    def archive(self, tenant: str, user_id: str, memory_ids: list[str], now: datetime, reason: str) -> list[str]:
        """Archive the given memories by hand (reason ``manual``); returns those newly archived."""
        memory = self._known(tenant, user_id, memory_ids, "archive")
        fresh = [m for m in dict.fromkeys(memory_ids) if not memory.archive.is_archived(m)]
        if fresh:
            event = MemoryArchived(memory_ids=tuple(fresh), reason="manual", at=now, policy="", detail=reason)
            self._commit([PendingEvent(tenant, user_id, new_event_id(), event)])
        return fresh

    def restore(self, tenant: str, user_id: str, memory_ids: list[str], now: datetime, reason: str) -> list[str]:
        """Bring archived memories back into default retrieval; restoring counts as an access."""
        memory = self._known(tenant, user_id, memory_ids, "restore")
        not_archived = [m for m in memory_ids if not memory.archive.is_archived(m)]
        if not_archived:
            raise InvalidInputError(
                [("memory_ids", f"{', '.join(not_archived)} not archived; list archived ones with `palimpsest archive list`")],
                what="restore",
            )
        ids = tuple(dict.fromkeys(memory_ids))
        self._commit([PendingEvent(tenant, user_id, new_event_id(), MemoryRestored(memory_ids=ids, at=now, reason=reason))])
        return list(ids)

    def archived(self, tenant: str, user_id: str) -> list[dict]:
        """The user's archived memories: when, why, retention at the time, and the text."""
        memory = self.state.user(tenant, user_id)
        if memory is None:
            return []
        by_id = memory.messages.by_id
        return [
            {"memory_id": e.memory_id, "reason": e.reason, "at": e.at.isoformat(), "policy": e.policy,
             "retention": e.retention, "detail": e.detail, "turn_id": by_id[e.memory_id].turn_id,
             "text": by_id[e.memory_id].text}
            for e in sorted(memory.archive.archived.values(), key=lambda e: (e.at, by_id[e.memory_id].seq))
        ]

    def _known(self, tenant: str, user_id: str, memory_ids: list[str], what: str):
        memory = self.state.user(tenant, user_id)
        if not memory_ids:
            raise InvalidInputError([("memory_ids", "empty; name at least one memory id")], what=what)
        unknown = [m for m in memory_ids if memory is None or m not in memory.messages.by_id]
        if unknown:
            raise InvalidInputError(
                [("memory_ids", f"{', '.join(unknown)} not memories of {tenant}/{user_id}; ids come from search results")],
                what=what,
            )
        return memory
