"""The state a shard folds from its log: one :class:`UserMemory` per (tenant, user).

``evolve`` applies one envelope to each projection whose module lists the
event's class in ``HANDLES`` (any other would ignore it, so it is not called;
a replay is mostly such calls); ``fold`` applies many. Folds are pure: no
I/O, no clock, no randomness. ``digest`` hashes a canonical form of each
projection, so a live state and a rebuild from the log can be compared byte
for byte.
"""

from __future__ import annotations

import gc
import hashlib
import threading
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from itertools import groupby, islice

from events.envelope import Envelope
from events.model import Event, MemoryTouched
from events.touch_block import TouchBlock
from events.erasure_events import UserForgotten
from projections.folds import (
    adjustments, archive, episode_titles, episodes, erasure, feedback, graph, lexical, messages, molt, notes, profile,
    graph_run, retention, retention_run, tiers, touches, vectors, working,
)
from projections.folds.episodes import DEFAULT_SEGMENTATION, SegmentationConfig
from projections.folds.policy import DEFAULT_POLICY, RetentionPolicy
from projections.folds.tiers import DEFAULT_TIERS, TierConfig
from projections.folds.working import DEFAULT_WORKING, WorkingConfig

Stream = tuple[str, str]


@dataclass
class UserMemory:
    messages: messages.MessageStore = field(default_factory=messages.MessageStore)
    lexical: lexical.LexicalIndex = field(default_factory=lexical.LexicalIndex)
    vectors: vectors.VectorStore = field(default_factory=vectors.VectorStore)
    touches: touches.TouchLog = field(default_factory=touches.TouchLog)
    retention: retention.RetentionState = field(default_factory=retention.RetentionState)
    episodes: episodes.EpisodeState = field(default_factory=episodes.EpisodeState)
    archive: archive.ArchiveState = field(default_factory=archive.ArchiveState)
    notes: notes.NoteState = field(default_factory=notes.NoteState)
    profile: profile.UserProfile = field(default_factory=profile.UserProfile)
    tiers: tiers.TierState = field(default_factory=tiers.TierState)
    working: working.WorkingState = field(default_factory=working.WorkingState)
    graph: graph.GraphState = field(default_factory=graph.GraphState)
    titles: episode_titles.TitleState = field(default_factory=episode_titles.TitleState)
    feedback: feedback.FeedbackLog = field(default_factory=feedback.FeedbackLog)
    erasure: erasure.ErasureState = field(default_factory=erasure.ErasureState)
    adjustments: adjustments.AdjustmentState = field(default_factory=adjustments.AdjustmentState)
    molt: molt.PolicyHistory = field(default_factory=molt.PolicyHistory)
    head: int = 0


PROJECTIONS: dict[str, Callable] = {
    "messages": messages.evolve,
    "lexical": lexical.evolve,
    "vectors": vectors.evolve,
    "touches": touches.evolve,
    "archive": archive.evolve,
    "notes": notes.evolve,
    "profile": profile.evolve,
    "graph": graph.evolve,
    "titles": episode_titles.evolve,
    "feedback": feedback.evolve,
    "erasure": erasure.evolve,
    "adjustments": adjustments.evolve,
    "molt": molt.evolve,
}
# Folds parameterised by a shard-level config (the ShardState attribute named second): re-projecting the
# same log with another policy or segmentation is a fold with another ShardState.
CONFIGURED_PROJECTIONS: dict[str, tuple[Callable, str]] = {
    "retention": (retention.evolve, "policy"),
    "episodes": (episodes.evolve, "segmentation"),
    "tiers": (tiers.evolve, "tier_config"),
    "working": (working.evolve, "working_config"),
}
# The event classes each projection's evolve reads (its module's HANDLES). Any other event leaves the projection
# as it was, apart from the bookkeeping _bind does for every event, so evolve does not call it.
HANDLED: dict[str, tuple[type[Event], ...]] = {
    "messages": messages.HANDLES,
    "lexical": lexical.HANDLES,
    "vectors": vectors.HANDLES,
    "touches": touches.HANDLES,
    "archive": archive.HANDLES,
    "notes": notes.HANDLES,
    "profile": profile.HANDLES,
    "graph": graph.HANDLES,
    "titles": episode_titles.HANDLES,
    "feedback": feedback.HANDLES,
    "erasure": erasure.HANDLES,
    "adjustments": adjustments.HANDLES,
    "molt": molt.HANDLES,
    "retention": retention.HANDLES,
    "episodes": episodes.HANDLES,
    "tiers": tiers.HANDLES,
    "working": working.HANDLES,
}
# Projections whose module folds a whole run of one user's events at once (``fold_run(value, envelopes, *config)``),
# leaving exactly the state its ``evolve`` leaves after each in turn, with less work per event.
RUN_FOLDS: dict[str, Callable] = {
    "retention": retention_run.fold_run,
    "tiers": tiers.fold_run,
    "graph": graph_run.fold_run,
    "working": working.fold_run,
}
Step = Callable[["UserMemory", "ShardState", Envelope], None]


def _step(name: str) -> Step:
    if name in PROJECTIONS:
        plain = PROJECTIONS[name]

        def step(memory: UserMemory, state: ShardState, env: Envelope) -> None:
            setattr(memory, name, plain(getattr(memory, name), env))
    else:
        configured, config = CONFIGURED_PROJECTIONS[name]

        def step(memory: UserMemory, state: ShardState, env: Envelope) -> None:
            setattr(memory, name, configured(getattr(memory, name), env, getattr(state, config)))
    return step


@cache
def route(event_type: type[Event]) -> tuple[Step, ...]:
    """The projection steps an event of this class reaches, in the order evolve applies them."""
    return tuple(_step(name) for name in [*PROJECTIONS, *CONFIGURED_PROJECTIONS]
                 if issubclass(event_type, HANDLED[name]))


class ProjectionOrderError(RuntimeError):
    """An envelope arrived out of its stream's seq order: the fold would diverge from the log."""


@dataclass
class ShardState:
    users: dict[Stream, UserMemory] = field(default_factory=dict)
    policy: RetentionPolicy = DEFAULT_POLICY
    segmentation: SegmentationConfig = DEFAULT_SEGMENTATION
    tier_config: TierConfig = DEFAULT_TIERS
    working_config: WorkingConfig = DEFAULT_WORKING

    def user(self, tenant: str, user_id: str) -> UserMemory | None:
        return self.users.get((tenant, user_id))

    @property
    def events_applied(self) -> int:
        return sum(u.head for u in self.users.values())


def _bind(memory: UserMemory, state: ShardState, seq: int) -> None:
    # What every projection's evolve does for any event, even one it ignores: check and hold its config, and
    # (the graph) note the stream's last seq.
    retention.bind(memory.retention, state.policy)
    episodes.bind(memory.episodes, state.segmentation)
    tiers.bind(memory.tiers, state.tier_config)
    working.bind(memory.working, state.working_config)
    graph.advance(memory.graph, seq)


def evolve(state: ShardState, env: Envelope) -> ShardState:
    """Apply one envelope to every projection; each one that reads its event class folds it.

    A ``user_forgotten`` event replaces the user's projections by empty ones, its erasure record kept.
    """
    memory = state.users.get(env.stream)
    if memory is None:
        memory = state.users[env.stream] = UserMemory()
    if env.seq != memory.head + 1:
        raise ProjectionOrderError(f"{env.stream}: got seq {env.seq} after {memory.head}")
    if type(env.event) is UserForgotten:
        _forget(state, env)
        return state
    _bind(memory, state, env.seq)
    for step in route(type(env.event)):
        step(memory, state, env)
    memory.head = env.seq
    return state


def fold(state: ShardState, envelopes: Iterable[Envelope]) -> ShardState:
    """Apply many envelopes; the same state as :func:`evolve` on each in turn, with less work per event.

    Envelopes are taken a run of one stream at a time (a scan is ordered by
    stream, then seq), and each projection folds the events of the run it
    reads in one loop: projections read only events, never each other, so
    the order across projections does not matter, only the order within one.
    """
    with collector_paused():
        for stream, run in groupby(envelopes, key=_stream_of):
            while chunk := list(islice(run, FOLD_CHUNK)):
                _fold_run(state, stream, chunk)
    return state


_paused = [0]  # folds under way that paused the cyclic garbage collector
_paused_lock = threading.Lock()


@contextmanager
def collector_paused():
    """Python's cyclic garbage collector off while folds run (back on when the last one ends).

    A fold allocates an object or more per event (envelope, payload, projection entries), and the collector,
    run every few hundred allocations, traverses the whole growing state again and again: about a tenth of a
    replay's CPU, to find next to no garbage (a fold builds few reference cycles; reference counting frees the
    rest as ever). Nested and concurrent folds share one pause; the collector's state before the first returns.
    """
    with _paused_lock:
        if _paused[0] == 0:
            _paused.append(gc.isenabled())
            gc.disable()
        _paused[0] += 1
    try:
        yield
    finally:
        with _paused_lock:
            _paused[0] -= 1
            if _paused[0] == 0 and _paused.pop():
                gc.enable()


FOLD_CHUNK = 8192  # the most envelopes of one stream held at once by fold


def _stream_of(env: Envelope) -> Stream:
    return (env.tenant, env.user_id)


@cache
def _names(event_type: type[Event]) -> tuple[str, ...]:
    return tuple(name for name in [*PROJECTIONS, *CONFIGURED_PROJECTIONS] if issubclass(event_type, HANDLED[name]))


def _forget(state: ShardState, env: Envelope) -> None:
    """The user's projections, emptied at a ``user_forgotten`` event: only its erasure record remains."""
    memory = state.users.get(env.stream) or UserMemory()
    fresh = UserMemory(erasure=erasure.evolve(memory.erasure, env))
    _bind(fresh, state, env.seq)
    fresh.head = env.seq
    state.users[env.stream] = fresh


def _fold_run(state: ShardState, stream: Stream, run: list[Envelope]) -> None:
    """Apply the consecutive envelopes of one stream, split at each ``user_forgotten`` (which empties the user)."""
    start = 0
    for i, env in enumerate(run):
        if type(env.event) is UserForgotten:
            if i > start:
                _fold_segment(state, stream, run[start:i])
            memory = state.users.get(stream)
            if env.seq != (memory.head if memory is not None else 0) + 1:
                raise ProjectionOrderError(f"{stream}: got seq {env.seq} after {memory.head if memory else 0}")
            _forget(state, env)
            start = i + 1
    if start < len(run):
        _fold_segment(state, stream, run[start:] if start else run)


def _fold_segment(state: ShardState, stream: Stream, run: list[Envelope]) -> None:
    """Apply the consecutive envelopes of one stream: each projection over the events it reads, in seq order."""
    memory = state.users.get(stream)
    if memory is None:
        memory = state.users[stream] = UserMemory()
    expected = memory.head + 1
    for env in run:
        first = env.first_seq if type(env) is TouchBlock else env.seq
        if first != expected:
            raise ProjectionOrderError(f"{stream}: got seq {first} after {expected - 1}")
        expected = env.seq + 1
    _bind(memory, state, run[-1].seq)
    per_projection: dict[str, list[Envelope]] = {}
    appends: dict[type, tuple] = {}  # event class → the append of each projection list it goes to
    for env in run:
        cls = MemoryTouched if type(env) is TouchBlock else type(env.event)
        targets = appends.get(cls)
        if targets is None:
            targets = appends[cls] = tuple(per_projection.setdefault(name, []).append for name in _names(cls))
        for append in targets:
            append(env)
    for name, envs in per_projection.items():
        if envs:
            _apply(memory, state, name, envs)
    memory.head = run[-1].seq


def _apply(memory: UserMemory, state: ShardState, name: str, envs: list[Envelope]) -> None:
    """Fold one projection of one user over envelopes it reads, in seq order (its ``fold_run`` if it has one)."""
    if name in PROJECTIONS:
        step, config = PROJECTIONS[name], ()
    else:
        step, attr = CONFIGURED_PROJECTIONS[name]
        config = (getattr(state, attr),)
    run = RUN_FOLDS.get(name)
    if run is not None:
        setattr(memory, name, run(getattr(memory, name), envs, *config))
        return
    value = getattr(memory, name)
    for env in envs:
        value = step(value, env, *config)
    setattr(memory, name, value)


def fold_projection(state: ShardState, name: str, envelopes: Iterable[Envelope]) -> ShardState:
    """Fold only the projection ``name`` (for measuring one fold alone; heads are not moved)."""
    for stream, run in groupby(envelopes, key=_stream_of):
        memory = state.users.get(stream)
        if memory is None:
            memory = state.users[stream] = UserMemory()
        _bind(memory, state, 0)
        _apply(memory, state, name, list(run))
    return state


def digest(state: ShardState) -> dict[str, str]:
    """sha256 of each projection's canonical form over all users, plus a combined digest."""
    out: dict[str, str] = {}
    for name in [*PROJECTIONS, *CONFIGURED_PROJECTIONS]:
        h = hashlib.sha256()
        for stream in sorted(state.users):
            memory = state.users[stream]
            h.update(repr((stream, memory.head, getattr(memory, name).canonical())).encode("utf-8"))
        out[name] = h.hexdigest()
    combined = hashlib.sha256("".join(out[n] for n in sorted(out)).encode()).hexdigest()
    out["combined"] = combined
    return out
