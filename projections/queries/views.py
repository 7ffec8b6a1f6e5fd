"""Read-only views of one user's projections as plain dicts (what the API, CLI and demo print).

Pure functions of (user memory, parameters): no log access, no clock.
"""

from __future__ import annotations

from datetime import datetime

from projections.folds.notes import DEFAULT_NOTE_POLICY, Note, NotePolicy, importance
from projections.folds.profile import user_profile
from projections.folds.state import UserMemory
from projections.folds.tiers import TierConfig, heat, sessions, short_term
from projections.folds.working import sensory_buffer, working_memory


def _sources(memory: UserMemory, note: Note) -> list[dict]:
    by_id = memory.messages.by_id
    return [
        {"memory_id": m, "turn_id": by_id[m].turn_id, "speaker": by_id[m].speaker or by_id[m].role,
         "occurred_at": by_id[m].occurred_at.isoformat(), "text": by_id[m].text}
        for m in note.source_message_ids if m in by_id
    ]


def note_view(memory: UserMemory, note: Note, now: datetime, policy: NotePolicy = DEFAULT_NOTE_POLICY) -> dict:
    return {
        "note_id": note.note_id,
        "category": note.category,
        "text": note.text,
        "status": note.status,
        "version": note.version,
        "lifecycle": note.lifecycle,
        "valid_from": note.valid_from.isoformat(),
        "valid_to": note.valid_to.isoformat() if note.valid_to else None,
        "supersedes": note.supersedes,
        "superseded_by": note.superseded_by,
        "confidence": note.confidence,
        "importance": importance(note, now, policy) if note.valid_from <= now else None,
        "boosts": note.boosts,
        "uses": note.uses,
        "decider": note.decider,
        "reason": note.reason,
        "sources": _sources(memory, note),
    }


def notes_view(memory: UserMemory, now: datetime, at: datetime | None = None, include_inactive: bool = False) -> list[dict]:
    """Active notes (or those valid at ``at``; or every version), grouped by category, in log order within one."""
    if include_inactive:
        chosen = sorted(memory.notes.notes.values(), key=lambda n: n.seq)
    else:
        chosen = memory.notes.active(at)
    return [note_view(memory, n, now) for n in sorted(chosen, key=lambda n: (n.category, n.seq))]


def history_view(memory: UserMemory, note_id: str, now: datetime) -> list[dict]:
    """The version chain containing ``note_id``, oldest first, each version with its sources."""
    return [note_view(memory, n, now) for n in memory.notes.history(note_id)]


def profile_view(memory: UserMemory, include_knowledge: bool = True, include_assistant_knowledge: bool = False) -> dict:
    view = user_profile(memory.profile, include_knowledge=include_knowledge,
                        include_assistant_knowledge=include_assistant_knowledge)
    view["distillations"] = len(memory.profile.distillations)
    return view


def tiers_view(memory: UserMemory, now: datetime, config: TierConfig) -> dict:
    """Short-term pages, mid-term sessions with their heat at ``now``, and what was evicted."""
    by_id = memory.messages.by_id
    return {
        "short_term": [{"memory_id": p.page_id, "turn_id": by_id[p.page_id].turn_id, "text": by_id[p.page_id].text}
                       for p in short_term(memory.tiers) if p.page_id in by_id],
        "sessions": sorted(
            (
                {"session_id": s.session_id, "pages": len(s.pages), "unanalysed": len(s.unanalysed_page_ids),
                 "visits": s.visits, "access_count": s.access_count, "heat": round(heat(s, now, config), 6),
                 "keywords": list(s.keywords)}
                for s in sessions(memory.tiers)
            ),
            key=lambda s: -s["heat"],
        ),
        "evicted_sessions": sorted(memory.tiers.archived),
    }


def working_view(memory: UserMemory, conversation_id: str, now: datetime) -> dict:
    """Working memory (M2) of one conversation and the sensory buffer (M1) at ``now``."""
    by_id = memory.messages.by_id
    return {
        "working_memory": [{"memory_id": i.memory_id, "rehearsals": i.rehearsals, "text": by_id[i.memory_id].text}
                           for i in working_memory(memory.working, conversation_id) if i.memory_id in by_id],
        "sensory_buffer": [{"memory_id": i.memory_id, "occurred_at": i.occurred_at.isoformat(),
                            "text": by_id[i.memory_id].text}
                           for i in sensory_buffer(memory.working, now, conversation_id) if i.memory_id in by_id],
    }
