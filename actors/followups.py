"""Follow-up decisions: events a fold calls for after other events were appended.

The tier fold evicts the least-frequently-used mid-term session when the
tier is full and marks it ``pending_archival``; a session whose heat passes
the threshold is due for distillation into the long-term profile. Both are
decisions, so they are written down as events (``memory_archived`` with
reason ``lfu_eviction``, ``profile_distilled``) by the shard right after the
append that caused them, and again on start-up if a crash fell in between:
the pending state is in the fold, so this catch-up is idempotent.

"Now" for heat is the time of the stream's latest event: the decision
depends only on the log, so a replay reaches the same one.
"""

from __future__ import annotations

from datetime import datetime

from actors.decision import new_event_id
from actors.llm.distill import llm_distill_profile
from actors.llm.titles import llm_episode_title
from events.envelope import PendingEvent
from events.model import MemoryArchived, ProfileDistilled
from projections.decisions.distill import DISTILLER_ID, distill_offline
from projections.folds.state import ShardState, UserMemory
from projections.folds.tiers import sessions_due_for_distillation


def decide_user_followups(
    tenant: str, user_id: str, memory: UserMemory, now: datetime, state: ShardState, llm=None,
    attempted: set | None = None, evictions_only: bool = False,
) -> list[PendingEvent]:
    """Archival of evicted sessions and distillation of hot ones, for one user at ``now``.

    ``evictions_only``: only the archival a fold left pending (what a crash
    between an append and its follow-up leaves behind; deterministic, so a
    shard writes it on start-up without depending on the clock).

    With ``llm`` (an LlmClient) the distillation asks the model (its call is
    recorded beside the ``profile_distilled`` event); otherwise offline rules.
    With ``llm``, closed episodes also get a model title (``episode_titled``);
    ``attempted`` remembers the episodes already asked about.
    """
    attempted = set() if attempted is None else attempted
    out: list[PendingEvent] = []
    for session_id, page_ids in sorted(memory.tiers.pending_archival.items()):
        event = MemoryArchived(
            memory_ids=tuple(page_ids), reason="lfu_eviction", at=now, policy="mid_term",
            detail=f"session {session_id} evicted from the mid-term tier (least frequently used)",
        )
        out.append(PendingEvent(tenant, user_id, new_event_id(), event))
    if evictions_only:
        return out
    by_id = memory.messages.by_id
    for due in sessions_due_for_distillation(memory.tiers, now, state.tier_config):
        pages = [(page_id, by_id[page_id]) for page_id in due.page_ids if page_id in by_id]
        if not pages:
            continue
        if llm is not None:
            (call_id, call), event = llm_distill_profile(llm, due.session_id, pages, due.heat, now)
            out += [PendingEvent(tenant, user_id, call_id, call), PendingEvent(tenant, user_id, new_event_id(), event)]
            continue
        traits, user_knowledge, assistant_knowledge = distill_offline(pages)
        event = ProfileDistilled(
            session_id=due.session_id, page_ids=tuple(p for p, _ in pages), traits=traits,
            user_knowledge=user_knowledge, assistant_knowledge=assistant_knowledge, heat=due.heat, at=now,
            distiller=DISTILLER_ID,
        )
        out.append(PendingEvent(tenant, user_id, new_event_id(), event))
    if llm is not None:
        out += _episode_titles(tenant, user_id, memory, llm, attempted)
    return out


def _episode_titles(tenant: str, user_id: str, memory: UserMemory, llm, attempted: set) -> list[PendingEvent]:
    """A model title for each closed episode that has none yet (one attempt per episode per process)."""
    out = []
    by_id = memory.messages.by_id
    for episode in memory.episodes.episodes():
        key = (tenant, user_id, episode.episode_id, episode.member_ids)
        if episode.is_open or key in attempted or memory.titles.for_episode(episode.episode_id, episode.member_ids):
            continue
        attempted.add(key)
        members = [(m, by_id[m]) for m in episode.member_ids if m in by_id]
        (call_id, call), titled = llm_episode_title(llm, episode.episode_id, members)
        out.append(PendingEvent(tenant, user_id, call_id, call))
        if titled is not None:
            out.append(PendingEvent(tenant, user_id, new_event_id(), titled))
    return out


def latest_time(memory: UserMemory) -> datetime | None:
    """The time of the user's latest message or touch: "now" for decisions taken right after an append."""
    times = []
    if memory.messages.order:
        times.append(memory.messages.by_id[memory.messages.order[-1]].occurred_at)
    times += [s.last_touched_at for s in memory.touches.stats.values() if s.last_touched_at is not None]
    return max(times) if times else None
