"""Episode projection: each user's message stream split into episodes (event segmentation).

Boundaries (seed 000 Feature 2, after EM-LLM):

- hard, known when a message is recorded: the first message (``start``), a
  message entering a boundary role such as ``system`` (``role_reset``), a
  marker message (``marker``: text prefix or metadata flag), another
  conversation (``conversation_change``), more than ``max_gap_seconds`` of
  silence (``time_gap``);
- ``topic_shift``: the cosine similarity of the mean recorded embeddings of
  the ``window`` messages before a position and the ``window`` messages from
  it falls below ``topic_threshold``. Windows stop at hard boundaries; a lone
  digression dilutes both windows and does not split;
- ``max_size``: an episode holding ``max_size`` messages is closed.

An episode opened by a topic shift with fewer than ``min_size`` messages
merges into the previous one when it closes (unless that exceeds
``max_size``); hard boundaries are never undone.

Incremental: a topic decision needs the embeddings of the window after the
position, so it is taken once they are final: the window's last embedding
arrives (the decider records it right after its message), a later message is
recorded, or a hard boundary cuts the window. Until then the message is
pending, shown in the open episode; so the last ``window - 1`` messages of a
stream never open a topic episode until more arrive. An embedding counts only
if it arrives before the next message. After any prefix of the log the
episodes are those of segmenting that prefix at once (tested at every split
point against a batch segmenter). The fold reads recorded messages and
embeddings only: it never embeds, reads no clock, does no I/O.
"""

from __future__ import annotations

import math
from operator import is_
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

import numpy as np

from events.envelope import Envelope
from events.errors import InvalidInputError, PalimpsestError
from events.model import EmbedderSwitched, MessageEmbedded, MessageRecorded

BoundaryReason = Literal["start", "role_reset", "marker", "conversation_change", "time_gap", "topic_shift", "max_size"]
HARD_REASONS = frozenset({"start", "role_reset", "marker", "conversation_change", "time_gap"})


DEFAULT_TOPIC_THRESHOLD = 0.4
# The default topic threshold on another encoder's cosine scale (none measured to help yet). For e5 the value at
# which the same share of LoCoMo dev window similarities (16 %) falls below it as below 0.4 with MiniLM is 0.92
# (``python -m benchmarks.similarity_scale``), but episodes cut there cost MemDaily dev 2.6 points of recall@10
# (79.57 against 82.15): e5 stores keep 0.4, where only time gaps, conversations and size cut their episodes.
MODEL_TOPIC: dict[str, float] = {}


def topic_threshold(config: SegmentationConfig, model: str) -> float:
    """The topic threshold the fold applies to vectors of ``model``: a threshold set by hand as given; the default
    moved to the model's scale."""
    if config.topic_threshold == DEFAULT_TOPIC_THRESHOLD:
        return MODEL_TOPIC.get(model, DEFAULT_TOPIC_THRESHOLD)
    return config.topic_threshold


@dataclass(frozen=True, slots=True)
class SegmentationConfig:
    """Every parameter of segmentation; re-project with another via ``fold(EpisodeState(), log, config)``.

    Defaults: an hour of silence ends an episode (seed 000); a one-message
    digression merges (seed 000's acceptance test). On the LoCoMo dev file with
    all-MiniLM-L6-v2, 3-turn windows inside one session fall below 0.4 at 2.5 %
    of positions (about one topic split per two sessions); 24 turns keep an
    episode near 600 tokens of such dialogue.
    """

    topic_threshold: float = DEFAULT_TOPIC_THRESHOLD  # on MiniLM's scale: another encoder's default, MODEL_TOPIC
    window: int = 3
    max_gap_seconds: float = 3600.0
    boundary_roles: tuple[str, ...] = ("system",)
    boundary_markers: tuple[str, ...] = ()  # text prefixes, e.g. ("/reset", "/new")
    marker_metadata_key: str | None = "episode_boundary"  # metadata flag set to True
    split_conversations: bool = True
    min_size: int = 2
    max_size: int = 24

    def __post_init__(self) -> None:
        checks = [
            ("topic_threshold", -1.0 <= self.topic_threshold <= 1.0, "a cosine similarity in [-1, 1]"),
            ("window", self.window >= 1, "at least 1 message"),
            ("max_gap_seconds", self.max_gap_seconds > 0, "a positive number of seconds"),
            ("min_size", 1 <= self.min_size <= self.max_size, "1 <= min_size <= max_size"),
        ]
        problems = [(name, f"{getattr(self, name)!r}: use {want}") for name, ok, want in checks if not ok]
        if problems:
            raise InvalidInputError(problems, what="segmentation config")


DEFAULT_SEGMENTATION = SegmentationConfig()


class SegmentationMismatchError(PalimpsestError, ValueError):
    """An episode state is being evolved with a config other than the one it was folded with."""


@dataclass(frozen=True, slots=True)
class EpisodeMember:
    """One message of an episode, with its provenance and its recorded embedding (None if never recorded)."""

    event_id: str
    seq: int
    conversation_id: str
    turn_id: str | None
    role: str
    occurred_at: datetime
    vector: np.ndarray | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Episode:
    """A run of consecutive messages; its id is its first message's event id, so it is stable as it grows."""

    episode_id: str
    reason: BoundaryReason
    members: tuple[EpisodeMember, ...]
    centroid: np.ndarray | None = field(default=None, compare=False)  # unit-length mean of member vectors
    is_open: bool = False  # the last episode of the stream: later messages may still join it

    @property
    def member_ids(self) -> tuple[str, ...]:
        return tuple(m.event_id for m in self.members)

    @property
    def turn_ids(self) -> tuple[str | None, ...]:
        return tuple(m.turn_id for m in self.members)

    @property
    def conversation_ids(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(m.conversation_id for m in self.members))

    @property
    def size(self) -> int:
        return len(self.members)

    @property
    def span(self) -> tuple[datetime, datetime]:
        """(start, end): earliest and latest ``occurred_at`` of the members."""
        times = [m.occurred_at for m in self.members]
        return min(times), max(times)

    def canonical(self) -> tuple:
        members = tuple((m.event_id, m.seq, m.conversation_id, m.turn_id, m.role, m.occurred_at.isoformat())
                        for m in self.members)
        return (self.episode_id, self.reason, self.is_open, members, None if self.centroid is None else self.centroid.tobytes())


def mean_direction(vectors: Sequence[np.ndarray]) -> np.ndarray | None:
    """The normalised mean of ``vectors`` (float64), or None when there are none or they cancel out."""
    if not vectors:
        return None
    with np.errstate(invalid="ignore", over="ignore"):  # a corrupt (non-finite) vector must not warn in a fold
        if any(v.shape != vectors[0].shape for v in vectors):
            np.stack(vectors)  # raises ValueError: vectors of different sizes have no mean
        # np.mean(np.stack(vectors).astype(np.float64), axis=0) and np.linalg.norm, step by step: the same
        # additions in the same order (row by row), a third of the time (every message of a replay runs this).
        mean = vectors[0].astype(np.float64)
        for v in vectors[1:]:
            mean += v
        mean /= len(vectors)
        norm = math.sqrt(mean.dot(mean))
    return mean / norm if norm > 0.0 and math.isfinite(norm) else None


_MEANS: dict[tuple[int, ...], tuple] = {}  # ids of a window's vectors → (those vectors, their mean_direction)
_MEANS_HELD = 8


def _window_mean(vectors: list[np.ndarray]) -> np.ndarray | None:
    """``mean_direction(vectors)``, once per window: the window after a message (its next ones) is, a few messages
    later, the window before another, with the very same vector objects. Found by identity (the entry holds
    the vectors, so their ids are not reused while it lives); the arrays are read-only, their mean is only read."""
    key = tuple(map(id, vectors))
    known = _MEANS.get(key)
    if known is not None and all(map(is_, known[0], vectors)):
        return known[1]
    mean = mean_direction(vectors)
    if len(_MEANS) >= _MEANS_HELD:
        _MEANS.pop(next(iter(_MEANS)), None)  # the oldest (a concurrent fold may have taken it already)
    _MEANS[key] = (tuple(vectors), mean)
    return mean


def window_similarity(before: Sequence[np.ndarray], after: Sequence[np.ndarray]) -> float | None:
    """Cosine similarity of the two windows' mean vectors; None when either window has no vector."""
    a, b = _window_mean(list(before)), _window_mean(list(after))
    return None if a is None or b is None else float(np.dot(a, b))


def make_episode(reason: str, members: Sequence[EpisodeMember], is_open: bool = False) -> Episode:
    """An episode of ``members`` (in stream order) with its centroid computed from their vectors."""
    mean = mean_direction([m.vector for m in members if m.vector is not None])
    centroid = None if mean is None else mean.astype(np.float32)
    return Episode(members[0].event_id, reason, tuple(members), centroid, is_open)  # type: ignore[arg-type]


@dataclass
class EpisodeState:
    """Closed episodes, the open one, and the messages whose topic decision waits (``pending``).

    ``window``: the last decided messages since the latest hard boundary; ``last``: the latest message.
    """

    config: SegmentationConfig | None = None
    closed: list[Episode] = field(default_factory=list)
    open_reason: str | None = None
    open_members: list[EpisodeMember] = field(default_factory=list)
    pending: list[tuple[EpisodeMember, str | None]] = field(default_factory=list)  # (message, hard reason)
    window: list[EpisodeMember] = field(default_factory=list)
    last: EpisodeMember | None = None
    # The model of the members' vectors, and other models' vectors of the members (a re-embedding's, recorded
    # ahead of its switch): model → message id → vector (see switched, below).
    model: str = ""
    held: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)

    def episodes(self) -> list[Episode]:
        """Every episode in stream order; pending messages join the open episode as if no boundary came before them."""
        out = list(self.closed)
        tail = self.open_members + [m for m, _ in self.pending]
        if not tail:
            return out
        cap = self.config.max_size if self.config else len(tail)
        pieces = [tail[i : i + cap] for i in range(0, len(tail), cap)]
        for n, piece in enumerate(pieces):
            out.append(make_episode(self.open_reason if n == 0 else "max_size", piece, is_open=n == len(pieces) - 1))
        return out

    def membership(self) -> dict[str, str]:
        """message event id → id of the episode that holds it."""
        return {m.event_id: ep.episode_id for ep in self.episodes() for m in ep.members}

    def canonical(self) -> list:
        out = [[ep.canonical() for ep in self.episodes()], [m.event_id for m, _ in self.pending]]
        if self.held:  # only a user that re-embedded: the others keep the form they always had
            out.append([self.model, [(m, sorted((i, v.tobytes()) for i, v in vs.items()))
                                     for m, vs in sorted(self.held.items())]])
        return out


def hard_reason(previous: EpisodeMember | None, event: MessageRecorded, config: SegmentationConfig) -> str | None:
    """Why ``event`` must open an episode whatever its embedding says, or None."""
    if previous is None:
        return "start"
    if event.role in config.boundary_roles and previous.role not in config.boundary_roles:
        return "role_reset"  # entering a system block; consecutive system messages stay together
    key = config.marker_metadata_key
    if (key is not None and event.metadata.get(key) is True) or event.text.lstrip().startswith(config.boundary_markers):
        return "marker"
    if config.split_conversations and event.conversation_id != previous.conversation_id:
        return "conversation_change"
    if (event.occurred_at - previous.occurred_at).total_seconds() > config.max_gap_seconds:
        return "time_gap"
    return None


def _close(state: EpisodeState, config: SegmentationConfig) -> None:
    members = state.open_members
    previous = state.closed[-1] if state.closed else None
    if (state.open_reason == "topic_shift" and len(members) < config.min_size and previous is not None
            and len(previous.members) + len(members) <= config.max_size):
        state.closed[-1] = make_episode(previous.reason, previous.members + tuple(members))
    else:
        state.closed.append(make_episode(state.open_reason or "start", members))


def _place(state: EpisodeState, member: EpisodeMember, reason: str | None, config: SegmentationConfig) -> None:
    if reason is None and len(state.open_members) >= config.max_size:
        reason = "max_size"
    if reason in HARD_REASONS:
        state.window = []
    if reason is None:
        state.open_members.append(member)
    else:
        if state.open_members:
            _close(state, config)
        state.open_reason, state.open_members = reason, [member]
    state.window = (state.window + [member])[-config.window :]


def _decision(state: EpisodeState, config: SegmentationConfig) -> tuple[bool, str | None]:
    """(decidable, reason) for the first pending message: decidable once the window after it is final."""
    pending = state.pending
    if pending[0][1] is not None:
        return True, pending[0][1]
    after: list[EpisodeMember] = []
    for m, hard in pending:
        if hard is not None or len(after) == config.window:
            break
        after.append(m)
    cut = len(after) < len(pending) and pending[len(after)][1] is not None  # vectors before a recorded message are final
    full = len(after) == config.window and (after[-1].event_id != pending[-1][0].event_id or after[-1].vector is not None)
    if not (cut or full):
        return False, None
    sim = window_similarity([m.vector for m in state.window if m.vector is not None],
                            [m.vector for m in after if m.vector is not None])
    return True, ("topic_shift" if sim is not None and sim < topic_threshold(config, state.model) else None)


def _drain(state: EpisodeState, config: SegmentationConfig) -> None:
    while state.pending:
        decidable, reason = _decision(state, config)
        if not decidable:
            return
        _place(state, state.pending.pop(0)[0], reason, config)


def _attach(state: EpisodeState, latest: EpisodeMember, vector: np.ndarray) -> None:
    """Give the latest message its vector wherever it sits (pending, or open episode and window)."""
    member = EpisodeMember(latest.event_id, latest.seq, latest.conversation_id, latest.turn_id, latest.role,
                           latest.occurred_at, vector)  # positional: replace() costs more, once per message
    state.last = member
    if state.pending and state.pending[-1][0].event_id == member.event_id:
        state.pending[-1] = (member, state.pending[-1][1])
    for members in (state.open_members, state.window):
        if members and members[-1].event_id == member.event_id:
            members[-1] = member


# The events evolve reads; the shard fold (projections.folds.state) does not call it for any other.
HANDLES = (MessageRecorded, MessageEmbedded, EmbedderSwitched)


def bind(state: EpisodeState, config: SegmentationConfig) -> None:
    """Refuse a config other than the one the state was folded with, then hold this one (every event does this)."""
    if state.config is not None and state.config is not config and state.config != config:
        raise SegmentationMismatchError(f"this episode state was folded with {state.config}, not {config}; "
                                        "re-project with fold(EpisodeState(), log, config)")
    state.config = config


def evolve(state: EpisodeState, env: Envelope, config: SegmentationConfig = DEFAULT_SEGMENTATION) -> EpisodeState:
    """Apply one envelope: a message extends the open episode or opens one; an embedding may settle boundaries."""
    bind(state, config)
    event = env.event
    if isinstance(event, MessageRecorded):
        member = EpisodeMember(env.event_id, env.seq, event.conversation_id, event.turn_id, event.role, event.occurred_at)
        hard = hard_reason(state.last, event, config)
        state.last = member
        state.pending.append((member, hard))
        _drain(state, config)
    elif isinstance(event, MessageEmbedded):
        if (state.last is not None and event.message_event_id == state.last.event_id and state.last.vector is None
                and (not state.model or event.model_id == state.model)):
            state.model = state.model or event.model_id
            _attach(state, state.last, event.array())
            _drain(state, config)
        elif state.model and event.model_id != state.model:  # a re-embedding's: held until the user's switch
            state.held.setdefault(event.model_id, {})[event.message_event_id] = event.array()
    elif isinstance(event, EmbedderSwitched) and state.model and event.model_id != state.model:
        return switched(state, event.model_id, config)
    return state


def fold(
    state: EpisodeState, envelopes: Iterable[Envelope], config: SegmentationConfig = DEFAULT_SEGMENTATION
) -> EpisodeState:
    for env in envelopes:
        state = evolve(state, env, config)
    return state


# -- a user's switch to another encoder (embedder_switched) -----------------------------------------------------
# Episode boundaries are decided by the vectors of the messages (topic shifts). When a user switches encoder (after
# a re-embedding recorded the new model's vectors, which this fold holds), the episodes become what they would be
# had the messages been recorded with the new model: the messages are placed again in stream order, each with the
# hard boundary it had (start, role reset, marker, conversation change, time gap: none depends on a vector) and its
# new vector, by the fold's own steps. The old vectors are held in turn, so switching back restores the old episodes.

def _sequence(state: EpisodeState) -> list[tuple[EpisodeMember, str | None]]:
    """Every message in stream order with its hard boundary reason (or None)."""
    out = []
    for episode in state.closed:
        for i, member in enumerate(episode.members):
            out.append((member, episode.reason if i == 0 and episode.reason in HARD_REASONS else None))
    for i, member in enumerate(state.open_members):
        out.append((member, state.open_reason if i == 0 and state.open_reason in HARD_REASONS else None))
    out.extend(state.pending)
    return out


def switched(state: EpisodeState, model: str, config: SegmentationConfig) -> EpisodeState:
    """The state the fold leaves for these messages recorded with ``model``'s held vectors."""
    sequence = _sequence(state)
    held = {m: dict(vs) for m, vs in state.held.items()}
    incoming = held.pop(model, {})
    held[state.model] = {m.event_id: m.vector for m, _ in sequence if m.vector is not None}
    fresh = EpisodeState(config=state.config, model=model, held=held)
    for member, hard in sequence:
        bare = EpisodeMember(member.event_id, member.seq, member.conversation_id, member.turn_id, member.role,
                             member.occurred_at)
        fresh.last = bare
        fresh.pending.append((bare, hard))
        _drain(fresh, config)
        vector = incoming.get(member.event_id)
        if vector is not None:
            _attach(fresh, bare, vector)
            _drain(fresh, config)
    return fresh
