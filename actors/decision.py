"""What a decider returns, and what it may use besides the state.

A decider is ``decide(state, command, deps) -> Decision``: the events to
append (in one transaction, with the command's record) and the outcome the
caller gets, as JSON-native values (it is stored with the command and given
again to a retry). Deciders are pure apart from minting event ids (repeatable:
:func:`drawing_ids`) and, with a language model configured, its calls, each
returned as an ``llm_call_recorded`` event beside the decisions it informed;
the shard answers those calls before the decision (:mod:`actors.answers_first`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from events.envelope import PendingEvent


_tape: ContextVar[tuple[list[str], list[int]] | None] = ContextVar("event_id_tape", default=None)


def new_event_id() -> str:
    """A new event id; inside :func:`drawing_ids`, the tape's next one (drawn afresh past its end)."""
    tape = _tape.get()
    if tape is None:
        return uuid.uuid4().hex
    ids, cursor = tape
    if cursor[0] == len(ids):
        ids.append(uuid.uuid4().hex)
    cursor[0] += 1
    return ids[cursor[0] - 1]


@contextmanager
def drawing_ids(ids: list[str]) -> Iterator[None]:
    """Event ids drawn inside are ``ids`` in order (extended as needed): a decision dropped and made again draws
    the same ids in the same order, so a prompt naming one is the same prompt."""
    token = _tape.set((ids, [0]))
    try:
        yield
    finally:
        _tape.reset(token)


@dataclass(frozen=True, slots=True)
class Decision:
    pending: list[PendingEvent] = field(default_factory=list)
    outcome: Any = None  # JSON-native: dicts, lists, str, numbers, bool, None
    react: bool = True  # run the follow-up rule (actors.followups) for the streams it wrote


@dataclass(frozen=True, slots=True)
class Deps:
    """What deciders may call besides the state: the language model (or None) and the user's key generation.
    No encoder: graph labels are embedded by the driver (``Memory.embed_labels``)."""

    model_id: str = ""  # the store's embedding model: vectors from another are refused
    dim: int = 0
    llm: Any = None  # actors.llm.LlmClient
    # The generation of a user's current data key (None: no live key); None itself: the log is not encrypted.
    key_generation: Callable[[tuple[str, str]], int | None] | None = None


@dataclass(frozen=True, slots=True)
class Answer:
    """What a query returns: its value, and the touch events to group-commit after it (never in line)."""

    value: Any
    touches: list[PendingEvent] = field(default_factory=list)
