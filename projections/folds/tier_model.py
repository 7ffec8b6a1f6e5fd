"""The data of the memory tiers (:mod:`projections.folds.tiers`): configuration, pages, sessions, one user's state."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from events.errors import InvalidInputError, PalimpsestError
from events.model import ROLES

SECONDS_PER_HOUR = 3600.0
TOUCH_REASONS: tuple[str, ...] = ("search_hit", "context", "used")


@dataclass(frozen=True, slots=True)
class TierConfig:
    """Every parameter of the tiers; re-project with another via ``fold(TierState(), log, config)``."""

    short_term_capacity: int = 10  # pages (MemoryOS default)
    session_similarity: float = 0.6  # threshold on cos + keyword_weight · Jaccard (see the module docstring)
    keyword_weight: float = 1.0
    session_keywords: int = 10  # most frequent page key terms that stand for a session's summary keywords
    mid_term_capacity: int = 50  # active sessions before LFU eviction
    alpha: float = 1.0  # weight of N_visit
    beta: float = 1.0  # weight of L_interaction
    gamma: float = 1.0  # weight of recency e^(−Δt/τ)
    tau_hours: float = 24.0
    heat_threshold: float = 5.0
    page_roles: tuple[str, ...] = ("user", "assistant")
    visit_reasons: tuple[str, ...] = TOUCH_REASONS

    def __post_init__(self) -> None:
        def finite(x: float) -> bool:
            return isinstance(x, int | float) and math.isfinite(x)

        checks = [
            ("short_term_capacity", isinstance(self.short_term_capacity, int) and self.short_term_capacity >= 1,
             "an integer number of pages >= 1"),
            ("session_similarity", finite(self.session_similarity),
             "a finite score (cosine in [-1, 1] plus weighted Jaccard)"),
            ("keyword_weight", finite(self.keyword_weight) and self.keyword_weight >= 0, "a finite weight >= 0"),
            ("session_keywords", isinstance(self.session_keywords, int) and self.session_keywords >= 1,
             "an integer number of keywords >= 1"),
            ("mid_term_capacity", isinstance(self.mid_term_capacity, int) and self.mid_term_capacity >= 1,
             "an integer number of sessions >= 1"),
            ("alpha", finite(self.alpha) and self.alpha >= 0, "a finite weight >= 0"),
            ("beta", finite(self.beta) and self.beta >= 0, "a finite weight >= 0"),
            ("gamma", finite(self.gamma) and self.gamma >= 0, "a finite weight >= 0"),
            ("tau_hours", finite(self.tau_hours) and self.tau_hours > 0, "a positive number of hours"),
            ("heat_threshold", finite(self.heat_threshold) and self.heat_threshold > 0, "a positive heat"),
            ("page_roles", bool(self.page_roles) and set(self.page_roles) <= set(ROLES),
             f"a non-empty subset of {ROLES}"),
            ("visit_reasons", set(self.visit_reasons) <= set(TOUCH_REASONS), f"a subset of {TOUCH_REASONS}"),
        ]
        problems = [(name, f"{getattr(self, name)!r}: use {want}") for name, ok, want in checks if not ok]
        if problems:
            raise InvalidInputError(problems, what="tier config")


DEFAULT_TIERS = TierConfig()


class TierConfigMismatchError(PalimpsestError, ValueError):
    """A tier state is being evolved with a config other than the one it was folded with."""


@dataclass(slots=True, unsafe_hash=True)  # immutable by convention: a frozen __init__ costs 3x in a replay
class Page:
    """One message as a page: provenance, key terms and its unit-length recorded vector (None if never recorded)."""

    page_id: str
    seq: int
    conversation_id: str
    role: str
    occurred_at: datetime
    keywords: tuple[str, ...] | None  # None only while awaiting the classification that records them
    vector: np.ndarray | None = field(default=None, compare=False)
    analysed: bool = False
    terms: frozenset[str] = field(init=False, repr=False, compare=False)  # the keywords as a set, for jaccard

    def __post_init__(self) -> None:
        self.terms = frozenset(self.keywords or ())

    def canonical(self) -> tuple:
        return (self.page_id, self.seq, self.conversation_id, self.role, self.occurred_at.isoformat(),
                self.keywords, self.analysed, None if self.vector is None else self.vector.tobytes())


@dataclass(slots=True, unsafe_hash=True)  # immutable by convention (never assigned to): see Page
class Session:
    """A mid-term session; replaced (never edited) when a page joins, a touch visits it, or it is distilled."""

    session_id: str
    pages: tuple[Page, ...]
    created_at: datetime
    last_access: datetime
    visits: int = 0  # N_visit, reset by distillation
    access_count: int = 0  # lifetime visits, the LFU key
    vector_sum: np.ndarray | None = field(default=None, compare=False)  # float64 sum of page vectors
    centroid: np.ndarray | None = field(default=None, compare=False)  # the sum, normalised
    keyword_counts: tuple[tuple[str, int], ...] = ()  # (term, pages using it), in first-seen order
    keywords: tuple[str, ...] = ()  # the session_keywords most frequent terms (ties: first seen)
    terms: frozenset[str] = field(init=False, repr=False, compare=False)  # the keywords as a set, for jaccard

    def __post_init__(self) -> None:
        self.terms = frozenset(self.keywords)

    @property
    def page_ids(self) -> tuple[str, ...]:
        return tuple(p.page_id for p in self.pages)

    @property
    def unanalysed_page_ids(self) -> tuple[str, ...]:
        return tuple(p.page_id for p in self.pages if not p.analysed)

    @property
    def interaction_length(self) -> int:
        """L_interaction: the pages not yet distilled."""
        return sum(not p.analysed for p in self.pages)

    def canonical(self) -> tuple:
        return (self.session_id, tuple(p.canonical() for p in self.pages), self.created_at.isoformat(),
                self.last_access.isoformat(), self.visits, self.access_count, self.keyword_counts,
                None if self.vector_sum is None else self.vector_sum.tobytes())


@dataclass
class TierState:
    """One user's tiers. ``pending_archival``: evicted session id → its page ids, until archived."""

    config: TierConfig | None = None
    short: list[Page] = field(default_factory=list)  # oldest first
    awaiting: Page | None = None  # the latest message, waiting for its embedding
    awaiting_text: str | None = None  # its text, for a v1 log that recorded no key terms
    active: dict[str, Session] = field(default_factory=dict)  # in creation order
    page_session: dict[str, str] = field(default_factory=dict)  # page id → active session id
    pending_archival: dict[str, tuple[str, ...]] = field(default_factory=dict)
    archived: list[str] = field(default_factory=list)  # evicted sessions whose archival is recorded

    def canonical(self) -> list:
        return [
            [p.canonical() for p in self.short],
            None if self.awaiting is None else self.awaiting.canonical(),
            [s.canonical() for s in self.active.values()],
            sorted(self.pending_archival.items()),
            list(self.archived),
        ]
