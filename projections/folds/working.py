"""Working memory (M2) and the sensory buffer (M1) of seed 003, as a pure fold.

- **Working memory (M2)**: per conversation, the messages currently "held in
  mind", at most ``capacity`` of them (7 ± 2: the default is 7, 5 to 9 are
  allowed). Every recorded message enters its conversation's working memory;
  a ``memory_touched`` event (reason in ``rehearsal_reasons``) that hits an
  item held there rehearses it once. When a message enters a full working
  memory, the item with the fewest rehearsals leaves (ties: the one that
  entered first); the newcomer itself always enters. Leaving is not a loss:
  the message stays in the log and in every other projection.
- **Sensory buffer (M1)**: the raw input stream with a TTL. The query
  :func:`sensory_buffer` returns the messages whose time ``t`` satisfies
  ``t ≤ now < t + ttl_seconds`` (default 30 s), all conversations or one.
  To stay small the fold forgets items already expired at the latest message
  time seen, so asking about a ``now`` before that time may miss them.

Times are the messages' ``occurred_at``; the fold reads no clock, and "now"
is a parameter of the query.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from events.envelope import Envelope
from events.errors import InvalidInputError, PalimpsestError
from events.model import MemoryTouched, MessageRecorded
from events.touch_block import TouchBlock
from projections.folds.touch_pairs import tally

MIN_CAPACITY, MAX_CAPACITY = 5, 9  # Miller's 7 ± 2
TOUCH_REASONS: tuple[str, ...] = ("search_hit", "context", "used")


@dataclass(frozen=True, slots=True)
class WorkingConfig:
    """Capacity of working memory and TTL of the sensory buffer; another instance re-projects the same log."""

    capacity: int = 7
    ttl_seconds: float = 30.0
    rehearsal_reasons: tuple[str, ...] = TOUCH_REASONS

    def __post_init__(self) -> None:
        checks = [
            ("capacity", isinstance(self.capacity, int) and MIN_CAPACITY <= self.capacity <= MAX_CAPACITY,
             f"an integer from {MIN_CAPACITY} to {MAX_CAPACITY} (7 ± 2 items)"),
            ("ttl_seconds", isinstance(self.ttl_seconds, int | float) and math.isfinite(self.ttl_seconds)
             and self.ttl_seconds > 0, "a positive number of seconds"),
            ("rehearsal_reasons", set(self.rehearsal_reasons) <= set(TOUCH_REASONS), f"a subset of {TOUCH_REASONS}"),
        ]
        problems = [(name, f"{getattr(self, name)!r}: use {want}") for name, ok, want in checks if not ok]
        if problems:
            raise InvalidInputError(problems, what="working memory config")


DEFAULT_WORKING = WorkingConfig()


class WorkingConfigMismatchError(PalimpsestError, ValueError):
    """A working-memory state is being evolved with a config other than the one it was folded with."""


@dataclass(slots=True, unsafe_hash=True)  # immutable by convention: a frozen __init__ costs 3x in a replay
class WorkingItem:
    """A message held in working memory and how often it has been rehearsed."""

    memory_id: str
    seq: int
    conversation_id: str
    role: str
    occurred_at: datetime
    rehearsals: int = 0


@dataclass(frozen=True, slots=True)
class SensoryItem:
    """A message in the sensory buffer (the text stays in the message store)."""

    memory_id: str
    seq: int
    conversation_id: str
    role: str
    occurred_at: datetime


@dataclass
class WorkingState:
    """Working memory per conversation (entry order) and the unexpired sensory stream of one user."""

    config: WorkingConfig | None = None
    conversations: dict[str, list[WorkingItem]] = field(default_factory=dict)
    held: dict[str, str] = field(default_factory=dict)  # memory id → conversation id
    sensory: list[SensoryItem] = field(default_factory=list)  # log order
    latest: datetime | None = None  # the latest message time seen

    def canonical(self) -> list:
        return [
            sorted((cid, [(i.memory_id, i.seq, i.role, i.occurred_at.isoformat(), i.rehearsals) for i in items])
                   for cid, items in self.conversations.items()),
            [(s.memory_id, s.seq, s.conversation_id, s.role, s.occurred_at.isoformat()) for s in self.sensory],
            None if self.latest is None else self.latest.isoformat(),
        ]


def _hold(state: WorkingState, item: WorkingItem, config: WorkingConfig) -> None:
    items = state.conversations.setdefault(item.conversation_id, [])
    if len(items) >= config.capacity:
        # Fewest rehearsals leaves; min() returns the first (oldest) of equals. The newcomer is not a candidate.
        victim = min(range(len(items)), key=lambda i: items[i].rehearsals)
        del state.held[items.pop(victim).memory_id]
    items.append(item)
    state.held[item.memory_id] = item.conversation_id


def _sense(state: WorkingState, item: SensoryItem, config: WorkingConfig) -> None:
    previous = state.latest
    state.latest = item.occurred_at if previous is None else max(previous, item.occurred_at)
    horizon = state.latest - timedelta(seconds=config.ttl_seconds)
    if state.latest != previous:  # the same latest time keeps the same horizon: nothing held has expired since
        state.sensory = [s for s in state.sensory if s.occurred_at > horizon]
    if item.occurred_at > horizon:
        state.sensory.append(item)


def _rehearse(state: WorkingState, event: MemoryTouched) -> None:
    held = state.held
    # Once per item per touch event; most touched ids are not held (the filter, in C, drops them).
    for memory_id in dict.fromkeys(filter(held.__contains__, event.memory_ids)):
        conversation_id = held[memory_id]
        items = state.conversations[conversation_id]
        for i, item in enumerate(items):
            if item.memory_id == memory_id:
                items[i] = WorkingItem(item.memory_id, item.seq, item.conversation_id, item.role, item.occurred_at,
                                       item.rehearsals + 1)  # positional: replace() is slow in a replay
                break


# The events evolve reads; the shard fold (projections.folds.state) does not call it for any other.
HANDLES = (MessageRecorded, MemoryTouched)


def bind(state: WorkingState, config: WorkingConfig) -> None:
    """Refuse a config other than the one the state was folded with, then hold this one (every event does this)."""
    if state.config is not None and state.config is not config and state.config != config:
        raise WorkingConfigMismatchError(f"this working-memory state was folded with {state.config}, not {config}; "
                                         "re-project with fold(WorkingState(), log, config)")
    state.config = config


def evolve(state: WorkingState, env: Envelope, config: WorkingConfig = DEFAULT_WORKING) -> WorkingState:
    """Apply one envelope: a message enters working memory and the sensory buffer; a touch rehearses."""
    bind(state, config)
    event = env.event
    if isinstance(event, MessageRecorded):
        _hold(state, WorkingItem(env.event_id, env.seq, event.conversation_id, event.role, event.occurred_at), config)
        _sense(state, SensoryItem(env.event_id, env.seq, event.conversation_id, event.role, event.occurred_at), config)
    elif isinstance(event, MemoryTouched) and event.reason in config.rehearsal_reasons:
        _rehearse(state, event)
    return state


def fold_run(state: WorkingState, envelopes: Iterable[Envelope], config: WorkingConfig = DEFAULT_WORKING) -> WorkingState:
    """The state :func:`evolve` leaves after each envelope in turn. A replay's touches come in bursts (a
    conversation's queries): the rehearsals of consecutive touches are counted per held item and each item is
    rebuilt once, before the next message (which may evict the least rehearsed) and at the end of the run."""
    bind(state, config)
    rehearsed: dict[str, int] = {}  # memory id → rehearsals not yet applied
    for env in envelopes:
        if type(env) is TouchBlock:  # held items change only at a message: the same ones for the whole block
            counted = tally(env, reasons=config.rehearsal_reasons.__contains__, member=state.held)
            for memory_id, count in zip(counted.groups, counted.counts, strict=True):
                if count:
                    rehearsed[memory_id] = rehearsed.get(memory_id, 0) + count
            continue
        event = env.event
        if type(event) is MemoryTouched:
            if event.reason in config.rehearsal_reasons:
                for memory_id in dict.fromkeys(filter(state.held.__contains__, event.memory_ids)):
                    rehearsed[memory_id] = rehearsed.get(memory_id, 0) + 1
            continue
        if rehearsed:
            _rehearse_many(state, rehearsed)
        evolve(state, env, config)
    if rehearsed:
        _rehearse_many(state, rehearsed)
    return state


def _rehearse_many(state: WorkingState, rehearsed: dict[str, int]) -> None:
    for memory_id, times in rehearsed.items():
        items = state.conversations[state.held[memory_id]]
        for i, item in enumerate(items):
            if item.memory_id == memory_id:
                items[i] = WorkingItem(item.memory_id, item.seq, item.conversation_id, item.role, item.occurred_at,
                                       item.rehearsals + times)
                break
    rehearsed.clear()


def fold(state: WorkingState, envelopes: Iterable[Envelope], config: WorkingConfig = DEFAULT_WORKING) -> WorkingState:
    for env in envelopes:
        state = evolve(state, env, config)
    return state


# -- queries -------------------------------------------------------------------


def working_memory(state: WorkingState, conversation_id: str) -> tuple[WorkingItem, ...]:
    """The items held for ``conversation_id``, in the order they entered."""
    return tuple(state.conversations.get(conversation_id, ()))


def sensory_buffer(state: WorkingState, now: datetime, conversation_id: str | None = None) -> tuple[SensoryItem, ...]:
    """Messages with ``t ≤ now < t + ttl`` (optionally of one conversation), ordered by time then seq.

    The TTL is that of the config the state was folded with.
    """
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware (e.g. datetime.now(UTC)); naive times are ambiguous")
    ttl = timedelta(seconds=(state.config or DEFAULT_WORKING).ttl_seconds)
    alive = [s for s in state.sensory if s.occurred_at <= now < s.occurred_at + ttl
             and (conversation_id is None or s.conversation_id == conversation_id)]
    return tuple(sorted(alive, key=lambda s: (s.occurred_at, s.seq)))
