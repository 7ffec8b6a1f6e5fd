"""Follow-up decisions: events a fold calls for after other events were appended.

The tier fold evicts the least-frequently-used mid-term session when the
tier is full and marks it ``pending_archival``; a session whose heat passes
the threshold is due for distillation into the long-term profile. Both are
decisions, so they are written down as events (``memory_archived`` with
reason ``lfu_eviction``, ``profile_distilled``) by the shard right after the
append that caused them, and again on start-up if a crash fell in between:
the pending state is in the fold, so this catch-up is idempotent.

With a language model configured, distillation and episode titles need the
model. They are decided in two steps so that no model call holds the shard
(:mod:`actors.reactor` runs them): :func:`model_asks`, right after the
append, lists what is due and takes the inputs (a :class:`ModelAsk` holds
the prompt); the model is asked with no lock held; :func:`answered` then
turns the answer into events against the state as it is by then, and writes
nothing a concurrent command already did. :func:`answered` is pure: given
the recorded ``llm_call_recorded`` event (:class:`actors.llm.RecordedLlm`)
it returns the same decision.

"Now" for heat is the time of the stream's latest event: the decision
depends only on the log, so a replay reaches the same one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from actors.decision import new_event_id
from actors.llm import distill, titles
from actors.llm.client import LlmResult
from events.envelope import PendingEvent
from events.model import MemoryArchived, MessageRecorded, ProfileDistilled
from projections.decisions.distill import DISTILLER_ID, distill_offline
from projections.folds.state import ShardState, UserMemory
from projections.folds.tiers import sessions_due_for_distillation


def decide_user_followups(
    tenant: str, user_id: str, memory: UserMemory, now: datetime, state: ShardState, *, distil: bool = True,
    evictions_only: bool = False,
) -> list[PendingEvent]:
    """Archival of evicted sessions and (``distil``) the offline distillation of hot ones, for one user at ``now``.

    ``evictions_only``: only the archival a fold left pending (what a crash
    between an append and its follow-up leaves behind; deterministic, so a
    shard writes it on start-up without depending on the clock).

    ``distil=False`` with a language model configured: the model distils, by
    way of :func:`model_asks`.
    """
    out: list[PendingEvent] = []
    for session_id, page_ids in sorted(memory.tiers.pending_archival.items()):
        event = MemoryArchived(
            memory_ids=tuple(page_ids), reason="lfu_eviction", at=now, policy="mid_term",
            detail=f"session {session_id} evicted from the mid-term tier (least frequently used)",
        )
        out.append(PendingEvent(tenant, user_id, new_event_id(), event))
    if evictions_only or not distil:
        return out
    for due in sessions_due_for_distillation(memory.tiers, now, state.tier_config):
        pages = _pages(memory, due.page_ids)
        if not pages:
            continue
        traits, user_knowledge, assistant_knowledge = distill_offline(pages)
        event = ProfileDistilled(
            session_id=due.session_id, page_ids=tuple(p for p, _ in pages), traits=traits,
            user_knowledge=user_knowledge, assistant_knowledge=assistant_knowledge, heat=due.heat, at=now,
            distiller=DISTILLER_ID,
        )
        out.append(PendingEvent(tenant, user_id, new_event_id(), event))
    return out


@dataclass(frozen=True, slots=True)
class ModelAsk:
    """A follow-up that needs the model: what it is about, its inputs, and the prompt made of them.

    ``subject`` is the episode (``purpose == "episode_title"``) or the session
    (``"profile_distillation"``); ``inputs`` its (event id, message) pairs as the
    prompt shows them; ``heat`` and ``at`` date a distillation.
    """

    tenant: str
    user_id: str
    purpose: str
    subject: str
    inputs: tuple[tuple[str, MessageRecorded], ...]
    messages: tuple[dict[str, str], ...]
    heat: float = 0.0
    at: datetime | None = None

    @property
    def key(self) -> tuple:
        return ask_key(self.tenant, self.user_id, self.purpose, self.subject, tuple(i for i, _ in self.inputs))

    @property
    def stream(self) -> tuple[str, str]:
        return self.tenant, self.user_id

    @property
    def once(self) -> bool:
        """Asked once per process (a title: a failed or unusable one is not asked again); a distillation is asked
        again whenever it is due."""
        return self.purpose == titles.PURPOSE

    @property
    def schema(self) -> dict:
        return titles.SCHEMA if self.purpose == titles.PURPOSE else distill.SCHEMA

    def ask(self, llm) -> LlmResult:
        """The model's answer (a live ``LlmClient``: the one step here that does I/O; a ``RecordedLlm``: replayed)."""
        return llm.complete_json(self.purpose, list(self.messages), self.schema)


def ask_key(tenant: str, user_id: str, purpose: str, subject: str, input_ids: tuple[str, ...]) -> tuple:
    """What an ask is about: an episode with these members; a session, whichever of its pages (pages that join it
    while its distillation is asked wait for the next one)."""
    return tenant, user_id, purpose, subject, input_ids if purpose == titles.PURPOSE else ()


def model_asks(tenant: str, user_id: str, memory: UserMemory, now: datetime, state: ShardState,
               asked: set) -> list[ModelAsk]:
    """The model follow-ups due for one user at ``now`` whose key is not in ``asked``: distillations of hot
    sessions (as the offline rule would distil them), then a title for each closed episode without one."""
    out = []
    for due in sessions_due_for_distillation(memory.tiers, now, state.tier_config):
        pages = _pages(memory, due.page_ids)
        key = ask_key(tenant, user_id, distill.PURPOSE, due.session_id, tuple(p for p, _ in pages))
        if pages and key not in asked:
            out.append(ModelAsk(tenant, user_id, distill.PURPOSE, due.session_id, tuple(pages),
                                tuple(distill.distill_prompt(pages)), due.heat, now))
    for episode in memory.episodes.episodes():
        key = ask_key(tenant, user_id, titles.PURPOSE, episode.episode_id, episode.member_ids)
        if episode.is_open or key in asked or memory.titles.for_episode(episode.episode_id, episode.member_ids):
            continue
        members = _pages(memory, episode.member_ids)
        if members:
            out.append(ModelAsk(tenant, user_id, titles.PURPOSE, episode.episode_id, tuple(members),
                                tuple(titles.title_prompt(members))))
    return out


def answered(ask: ModelAsk, result: LlmResult, memory: UserMemory, call_id: str,
             new_id=new_event_id) -> list[PendingEvent]:
    """The events the model's answer to ``ask`` makes, against the user's ``memory`` now.

    The call record (id ``call_id``) and the decision while the follow-up is
    still due; the call record alone once it is not (another distillation
    took those pages, the episode changed or got its title); nothing once
    the inputs are gone (the user was forgotten: nothing of theirs is written
    again).
    """
    held = memory.messages.by_id
    if not all(i in held for i, _ in ask.inputs):
        return []
    out = [PendingEvent(ask.tenant, ask.user_id, call_id, result.event)]
    if ask.purpose == titles.PURPOSE:
        member_ids = tuple(i for i, _ in ask.inputs)
        closed = any(e.episode_id == ask.subject and e.member_ids == member_ids and not e.is_open
                     for e in memory.episodes.episodes())
        event = titles.title_from_answer(ask.subject, ask.inputs, result, call_id) if (
            closed and not memory.titles.for_episode(ask.subject, member_ids)) else None
    else:
        session = memory.tiers.active.get(ask.subject)
        due = session is not None and {i for i, _ in ask.inputs} <= set(session.unanalysed_page_ids)
        event = distill.distillation_from_answer(ask.subject, ask.inputs, ask.heat, ask.at, result,
                                                 call_id) if due else None
    if event is not None:
        out.append(PendingEvent(ask.tenant, ask.user_id, new_id(), event))
    return out


def _pages(memory: UserMemory, ids) -> list[tuple[str, MessageRecorded]]:
    by_id = memory.messages.by_id
    return [(i, by_id[i]) for i in ids if i in by_id]


def latest_time(memory: UserMemory) -> datetime | None:
    """The time of the user's latest message or touch: "now" for decisions taken right after an append."""
    times = []
    if memory.messages.order:
        times.append(memory.messages.by_id[memory.messages.order[-1]].occurred_at)
    times += [s.last_touched_at for s in memory.touches.stats.values() if s.last_touched_at is not None]
    return max(times) if times else None
