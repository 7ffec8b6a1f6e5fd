"""Memory tiers (MemoryOS, seed 004): short-term pages → mid-term sessions → long-term distillation.

A *page* is one recorded message of a role in ``page_roles`` (default user and
assistant), with its recorded embedding and its key terms as recorded by its
``message_classified`` event (v1 logs recorded none: they are read from the text
with :func:`projections.rules.extraction.key_terms`, as v1 did). The fold reads
recorded messages, classifications, embeddings, touches, archival and
distillation events only: it never embeds, reads no clock and does no I/O.

- **Short-term**: the last ``short_term_capacity`` pages of the user (FIFO,
  default 10). A message enters once its embedding is recorded, or without a
  vector when the next message is recorded first (as in
  :mod:`projections.folds.episodes`, an embedding counts only if it arrives before
  the next message). Each page entering a full short-term pushes the oldest
  page into mid-term.
- **Mid-term sessions**: a pushed page joins the most similar active session,
  or opens one with id ``"s-<page id>"``. The exact rule::

      score(page, session) = cos(page vector, session centroid)
                             + keyword_weight · |K_page ∩ K_session| / |K_page ∪ K_session|

  where the centroid is the normalised mean of the session's page vectors
  (replay never embeds, so it stands in for MemoryOS's summary embedding),
  K_session are its ``session_keywords`` most frequent page key terms (ties:
  first seen), and a missing vector or an empty keyword set contributes 0.
  The page joins the best session if score ≥ ``session_similarity`` (ties:
  the oldest session); otherwise it opens a new one. Defaults (0.6, weight
  1.0) are MemoryOS's ``insert_pages_into_session``.
- **Heat** (a query; ``now`` is a parameter)::

      heat = α·N_visit + β·L_interaction + γ·e^(−Δt/τ)

  N_visit: touch events (reason in ``visit_reasons``) that hit at least one
  of the session's pages, one per event; L_interaction: the session's
  unanalysed pages; Δt: hours from the session's last access to ``now``.
  The last access is the latest of: the time of the message whose arrival
  pushed a page into the session, the touch events that visited it, and its
  last distillation. Defaults α = β = γ = 1, τ = 24 h, threshold 5.0 (MemoryOS).
- **LFU eviction**: when more than ``mid_term_capacity`` sessions are active
  (default 50), the session with the fewest lifetime accesses (MemoryOS's
  ``access_count_lfu``, which distillation does not reset; ties: oldest last
  access, then session id) leaves the active sessions and waits in
  ``pending_archival`` until the shard records a ``memory_archived`` event
  (reason ``lfu_eviction``) for exactly its pages. Eviction decisions depend
  only on counts and event times, never on a wall clock.
- **Distillation**: :func:`sessions_due_for_distillation` lists sessions whose
  heat at ``now`` reaches ``heat_threshold`` and that hold unanalysed pages;
  a ``profile_distilled`` event marks its pages analysed and resets the heat
  contributors as seed 004 does: N_visit → 0, L_interaction counts only the
  pages still unanalysed, and the last access moves to the distillation time.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from events.envelope import Envelope
from events.touch_block import TouchBlock
from events.model import (
    MemoryArchived,
    MemoryTouched,
    MessageClassified,
    MessageEmbedded,
    MessageRecorded,
    ProfileDistilled,
)
from projections.folds.tier_model import (
    DEFAULT_TIERS,
    SECONDS_PER_HOUR,
    TOUCH_REASONS,
    Page,
    Session,
    TierConfig,
    TierConfigMismatchError,
    TierState,
)
from projections.folds.tier_index import SessionIndex
from projections.folds.touch_pairs import add_bursts, tally
from projections.folds.touches import count_burst
from projections.rules.extraction import key_terms

__all__ = [  # the model is re-exported: callers import the tiers from one place
    "DEFAULT_TIERS", "TOUCH_REASONS", "Page", "Session", "TierConfig", "TierConfigMismatchError", "TierState",
    "DistillationDue", "evolve", "fold", "heat", "jaccard", "session_of", "sessions", "sessions_due_for_distillation",
    "short_term", "similarities", "similarity",
]

# -- similarity ----------------------------------------------------------------


def _unit(vector: np.ndarray) -> np.ndarray | None:
    # A corrupt vector must not warn in a fold: evolve and fold_run hold np.errstate around every call (entering it
    # costs ~3 us, more than the product: a replay normalises each page and each session's new centroid).
    v = vector if vector.dtype == np.float64 else vector.astype(np.float64)  # only read: no copy needed
    norm = math.sqrt(v.dot(v))  # np.linalg.norm of a vector, without its dispatch
    return v / norm if norm > 0.0 and math.isfinite(norm) else None


def jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    """|A ∩ B| / |A ∪ B|, 0 when either set is empty."""
    sa, sb = frozenset(a), frozenset(b)  # no copy when given frozensets (Page.terms, Session.terms)
    common = 0 if sa.isdisjoint(sb) else len(sa & sb)  # most sessions share no term with a page: no set built
    return common / (len(sa) + len(sb) - common) if sa and sb else 0.0  # |A ∪ B| without building it


def similarity(page: Page, session: Session, config: TierConfig) -> float:
    """cos(page vector, session centroid) + keyword_weight · Jaccard(page terms, session keywords)."""
    # Run for every active session per placed page: ndarray.dot is np.dot (same BLAS call) without the dispatch.
    vector, centroid = page.vector, session.centroid
    comparable = vector is not None and centroid is not None and vector.shape == centroid.shape
    cos = float(vector.dot(centroid)) if comparable else 0.0  # another model's vector says nothing
    return cos + config.keyword_weight * jaccard(page.terms, session.terms)


# -- the fold ------------------------------------------------------------------


def _top_terms(counts: dict[str, int], limit: int) -> tuple[str, ...]:
    """The ``limit`` most frequent terms; sorted() is stable (reverse too), so ties keep first-seen order."""
    return tuple(sorted(counts, key=counts.__getitem__, reverse=True)[:limit])


def _with_page(session: Session, page: Page, at: datetime, config: TierConfig,
               index: SessionIndex | None = None) -> Session:
    vector_sum = session.vector_sum
    if page.vector is not None and vector_sum is None:
        vector_sum = page.vector.copy()
    elif page.vector is not None and page.vector.shape == vector_sum.shape:
        vector_sum = vector_sum + page.vector
    if index is not None:  # a run's fold: the same counts and keywords, without a dict of every term per page
        counts, keywords = index.counts_after(session.keyword_counts, session.keywords, page.keywords,
                                              config.session_keywords)
    else:
        every = dict(session.keyword_counts)
        for term in page.keywords:
            every[term] = every.get(term, 0) + 1
        counts, keywords = tuple(every.items()), _top_terms(every, config.session_keywords)
    return Session(  # positional, not dataclasses.replace: one per page that leaves short-term, in a replay
                   session.session_id, session.pages + (page,), session.created_at, max(session.last_access, at),
                   session.visits, session.access_count, vector_sum, None if vector_sum is None else _unit(vector_sum),
                   counts, keywords)


def _evict_lfu(state: TierState) -> None:
    victim = min(state.active.values(), key=lambda s: (s.access_count, s.last_access, s.session_id))
    del state.active[victim.session_id]
    for page_id in victim.page_ids:
        state.page_session.pop(page_id, None)
    state.pending_archival[victim.session_id] = victim.page_ids


def similarities(page: Page, sessions: list[Session], config: TierConfig) -> np.ndarray:
    """:func:`similarity` of ``page`` to each session (one matrix product for the cosines); NaN reads as -inf."""
    cos = np.zeros(len(sessions))
    vector = page.vector
    if vector is not None:
        rows = [i for i, s in enumerate(sessions) if s.centroid is not None and s.centroid.shape == vector.shape]
        if rows:
            with np.errstate(invalid="ignore", over="ignore"):
                cos[rows] = np.stack([sessions[i].centroid for i in rows]) @ vector.astype(np.float64)
    terms, weight = page.terms, config.keyword_weight
    if terms:  # jaccard inlined: most sessions share no term with a page, and an empty set scores 0
        n = len(terms)
        scores = cos + np.fromiter(
            (weight * (common / (n + len(s.terms) - common)) if s.terms and (common := len(terms & s.terms)) else 0.0
             for s in sessions), np.float64, len(sessions))
    else:
        scores = cos + np.fromiter((weight * 0.0 for _ in sessions), np.float64, len(sessions))
    return np.nan_to_num(scores, nan=-math.inf)


def _to_mid_term(state: TierState, page: Page, at: datetime, config: TierConfig, index: SessionIndex | None) -> None:
    best, best_score = None, -math.inf
    if index is not None:
        sessions, scores = index.similarities(state, page, config)
    else:
        sessions = list(state.active.values())
        scores = similarities(page, sessions, config) if sessions else None
    if sessions:
        i = int(np.argmax(scores))  # the first of equals: the oldest session wins a tie
        best, best_score = sessions[i], float(scores[i])
    if best is not None and best_score >= config.session_similarity:
        target = _with_page(best, page, at, config, index)
    else:
        target = _with_page(Session(f"s-{page.page_id}", (), at, at), page, at, config, index)
    state.active[target.session_id] = target
    state.page_session[page.page_id] = target.session_id
    if len(state.active) > config.mid_term_capacity:
        _evict_lfu(state)


def _enter_short_term(state: TierState, page: Page, config: TierConfig, index: SessionIndex | None) -> None:
    state.short.append(page)
    while len(state.short) > config.short_term_capacity:
        _to_mid_term(state, state.short.pop(0), page.occurred_at, config, index)


def _visit(state: TierState, event: MemoryTouched, at: datetime) -> None:
    page_session = state.page_session
    visited = dict.fromkeys([page_session[m] for m in event.memory_ids if m in page_session])
    active = state.active
    for session_id in visited:  # one visit per session per touch event
        active[session_id] = _visited(active[session_id], at)


def _visited(s: Session, at: datetime, times: int = 1) -> Session:
    """``Session(...)`` of ``s`` visited ``times`` more, the latest at ``at``, slot by slot: one per touched session
    per query over a whole replay, and its key terms are the same set (``__post_init__`` would build it again)."""
    new = object.__new__(Session)
    new.session_id, new.pages, new.created_at = s.session_id, s.pages, s.created_at
    new.last_access = max(s.last_access, at)
    new.visits, new.access_count = s.visits + times, s.access_count + times
    new.vector_sum, new.centroid = s.vector_sum, s.centroid
    new.keyword_counts, new.keywords = s.keyword_counts, s.keywords
    new.terms = s.terms
    return new


_VISITED_SETS = ("session_id", "pages", "created_at", "last_access", "visits", "access_count", "vector_sum", "centroid",
                 "keyword_counts", "keywords", "terms")
assert Session.__slots__ == _VISITED_SETS, "a Session field was added: _visited must set it too"


def _distilled(state: TierState, event: ProfileDistilled, at: datetime) -> None:
    session = state.active.get(event.session_id)
    if session is None:  # evicted before the distillation was recorded: nothing to reset
        return
    done = set(event.page_ids)
    pages = tuple(Page(p.page_id, p.seq, p.conversation_id, p.role, p.occurred_at, p.keywords, p.vector, True)
                  if p.page_id in done else p for p in session.pages)
    s = session
    state.active[s.session_id] = Session(s.session_id, pages, s.created_at, max(s.last_access, at), 0,
                                         s.access_count, s.vector_sum, s.centroid, s.keyword_counts, s.keywords)


def _archived(state: TierState, event: MemoryArchived) -> None:
    ids = set(event.memory_ids)
    for session_id, page_ids in list(state.pending_archival.items()):
        if set(page_ids) == ids:
            del state.pending_archival[session_id]
            state.archived.append(session_id)
            return


# The events evolve reads; the shard fold (projections.folds.state) does not call it for any other.
HANDLES = (MessageRecorded, MessageClassified, MessageEmbedded, MemoryTouched, ProfileDistilled, MemoryArchived)


def bind(state: TierState, config: TierConfig) -> None:
    """Refuse a config other than the one the state was folded with, then hold this one (every event does this)."""
    if state.config is not None and state.config is not config and state.config != config:
        raise TierConfigMismatchError(f"this tier state was folded with {state.config}, not {config}; "
                                      "re-project with fold(TierState(), log, config)")
    state.config = config


def _take_awaiting(state: TierState) -> Page:
    """The awaiting page, leaving; a v1 log recorded no key terms for it: they are read from its text, as v1 did."""
    page, text = state.awaiting, state.awaiting_text
    state.awaiting = state.awaiting_text = None
    return page if page.keywords is not None else _page_with(page, key_terms(text or ""), page.vector)


def _page_with(page: Page, keywords: tuple[str, ...] | None, vector: np.ndarray | None) -> Page:
    # Positional, not dataclasses.replace: twice per recorded message, over a whole replay.
    return Page(page.page_id, page.seq, page.conversation_id, page.role, page.occurred_at, keywords, vector,
                page.analysed)


def evolve(state: TierState, env: Envelope, config: TierConfig = DEFAULT_TIERS) -> TierState:
    """Apply one envelope: messages and embeddings fill short-term, touches visit, archival and distillation settle."""
    bind(state, config)
    with np.errstate(invalid="ignore", over="ignore"):  # a corrupt vector must not warn in a fold (see _unit)
        _apply(state, env, config, None)
    return state


def fold_run(state: TierState, envelopes: Iterable[Envelope], config: TierConfig = DEFAULT_TIERS) -> TierState:
    """The state :func:`evolve` leaves after each envelope in turn; pages are scored against the sessions through
    one :class:`~projections.folds.tier_index.SessionIndex` for the whole run (the same scores, bit for bit)."""
    bind(state, config)
    index = SessionIndex()
    # A replay's touches come in runs (a conversation's queries), and each visits a few sessions: the visits of
    # consecutive touches are counted per session ([visits, latest time]) and each session is rebuilt once, before
    # the next other event (the only ones that place pages, evict or distil) and at the end. Touches do not change
    # which session holds a page, so each is mapped as it comes; n visits then add n, the latest time is the max.
    with np.errstate(invalid="ignore", over="ignore"):  # once for the run: _unit and the index do not set it
        visits: dict[str, list] = {}
        for env in envelopes:
            if type(env) is TouchBlock:
                add_bursts(visits, env, tally(env, reasons=config.visit_reasons.__contains__,
                                              group_of=state.page_session.get))
                continue
            event = env.event
            if type(event) is MemoryTouched:
                if event.reason in config.visit_reasons:
                    page_session, at = state.page_session, env.occurred_at
                    count_burst(visits, dict.fromkeys([page_session[m] for m in event.memory_ids
                                                       if m in page_session]), at)
                continue
            if visits:
                _apply_visits(state, visits)
            _apply(state, env, config, index)
        if visits:
            _apply_visits(state, visits)
    return state


def _apply_visits(state: TierState, visits: dict[str, list]) -> None:
    active = state.active
    for session_id, (times, at) in visits.items():
        active[session_id] = _visited(active[session_id], at, times)
    visits.clear()


def _apply(state: TierState, env: Envelope, config: TierConfig, index: SessionIndex | None) -> None:
    event = env.event
    if isinstance(event, MessageRecorded):
        if state.awaiting is not None:  # its embedding did not come before this message: it enters without one
            _enter_short_term(state, _take_awaiting(state), config, index)
        if event.role in config.page_roles:
            # v1 logs record no key terms (see MessageClassified): read them from the text, as v1 did. A v2
            # classification, which comes next, replaces them with the recorded ones.
            state.awaiting = Page(env.event_id, env.seq, event.conversation_id, event.role, event.occurred_at, None)
            state.awaiting_text = event.text
    elif isinstance(event, MessageClassified):
        if state.awaiting is not None and event.message_event_id == state.awaiting.page_id:
            if event.key_terms is not None:
                state.awaiting = _page_with(state.awaiting, event.key_terms, state.awaiting.vector)
    elif isinstance(event, MessageEmbedded):
        if state.awaiting is not None and event.message_event_id == state.awaiting.page_id:
            page = _take_awaiting(state)
            _enter_short_term(state, _page_with(page, page.keywords, _unit(event.array())), config, index)
    elif isinstance(event, MemoryTouched):
        if event.reason in config.visit_reasons:
            _visit(state, event, env.occurred_at)
    elif isinstance(event, ProfileDistilled):
        _distilled(state, event, env.occurred_at)
    elif isinstance(event, MemoryArchived) and event.reason == "lfu_eviction":
        _archived(state, event)


def fold(state: TierState, envelopes: Iterable[Envelope], config: TierConfig = DEFAULT_TIERS) -> TierState:
    for env in envelopes:
        state = evolve(state, env, config)
    return state


# -- queries: pure functions of (state or session, now, config) -----------------


@dataclass(frozen=True, slots=True)
class DistillationDue:
    """A hot session with pages to distil: what a ``profile_distilled`` event needs."""

    session_id: str
    page_ids: tuple[str, ...]  # the unanalysed pages, in session order
    heat: float


def heat(session: Session, now: datetime, config: TierConfig = DEFAULT_TIERS) -> float:
    """α·N_visit + β·L_interaction + γ·e^(−Δt/τ); Δt in hours since the last access, 0 if ``now`` is earlier."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware (e.g. datetime.now(UTC)); naive times are ambiguous")
    delta_hours = max(0.0, (now - session.last_access).total_seconds() / SECONDS_PER_HOUR)
    recency = math.exp(-delta_hours / config.tau_hours)
    return config.alpha * session.visits + config.beta * session.interaction_length + config.gamma * recency


def sessions_due_for_distillation(
    state: TierState, now: datetime, config: TierConfig = DEFAULT_TIERS
) -> list[DistillationDue]:
    """Sessions with heat ≥ ``heat_threshold`` at ``now`` and unanalysed pages; hottest first (ties: session id)."""
    due = []
    for session in state.active.values():
        h = heat(session, now, config)
        if h >= config.heat_threshold and session.interaction_length:
            due.append(DistillationDue(session.session_id, session.unanalysed_page_ids, h))
    return sorted(due, key=lambda d: (-d.heat, d.session_id))


def short_term(state: TierState) -> tuple[Page, ...]:
    """The short-term pages, oldest first (a message waiting for its embedding is not yet among them)."""
    return tuple(state.short)


def sessions(state: TierState) -> tuple[Session, ...]:
    """The active mid-term sessions, in creation order."""
    return tuple(state.active.values())


def session_of(state: TierState, page_id: str) -> Session | None:
    """The active session holding ``page_id``, or None (still short-term, evicted, or unknown)."""
    session_id = state.page_session.get(page_id)
    return None if session_id is None else state.active[session_id]
