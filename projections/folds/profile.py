"""Long-term memory (MemoryOS, seed 004): the user profile, user knowledge and assistant knowledge.

The projection folds ``profile_distilled`` events only, so replay never
distils again:

- ``traits``: attribute name → value; the last event that sets a name wins,
  and the trait remembers that event (id, seq, time, session);
- ``user_knowledge`` and ``assistant_knowledge``: statements in the order
  they were first distilled, without duplicates (compared case-insensitively,
  whitespace collapsed, end punctuation ignored); a repeat keeps the first
  record.

The offline distiller that decides what such an event says is
:func:`projections.decisions.distill.distill_offline`; this module only folds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from events.envelope import Envelope
from events.model import ProfileDistilled

_END_PUNCT = re.compile(r"[\s.!?。！？；;…]+$")


@dataclass(frozen=True, slots=True)
class Trait:
    """One profile attribute and the ``profile_distilled`` event that last set it."""

    name: str
    value: str
    source_event_id: str
    seq: int
    at: datetime
    session_id: str


@dataclass(frozen=True, slots=True)
class Knowledge:
    """One distilled statement and the event that first recorded it."""

    text: str
    source_event_id: str
    seq: int
    at: datetime
    session_id: str


def knowledge_key(text: str) -> str:
    """What two statements must share to count as one: case-folded, whitespace collapsed, end punctuation dropped."""
    return _END_PUNCT.sub("", " ".join(text.split())).casefold()


@dataclass
class UserProfile:
    """One user's long-term memory, folded from ``profile_distilled`` events."""

    traits: dict[str, Trait] = field(default_factory=dict)
    user_knowledge: list[Knowledge] = field(default_factory=list)
    assistant_knowledge: list[Knowledge] = field(default_factory=list)
    distillations: list[str] = field(default_factory=list)  # event ids, in log order
    _user_keys: set[str] = field(default_factory=set, repr=False, compare=False)
    _assistant_keys: set[str] = field(default_factory=set, repr=False, compare=False)

    def canonical(self) -> list:
        def rows(items: list[Knowledge]) -> list:
            return [(k.text, k.source_event_id, k.seq, k.at.isoformat(), k.session_id) for k in items]

        return [
            [(t.name, t.value, t.source_event_id, t.seq, t.at.isoformat(), t.session_id)
             for t in sorted(self.traits.values(), key=lambda t: t.name)],
            rows(self.user_knowledge),
            rows(self.assistant_knowledge),
            list(self.distillations),
        ]


def _add(items: list[Knowledge], keys: set[str], texts: Iterable[str], env: Envelope, session_id: str) -> None:
    for text in texts:
        key = knowledge_key(text)
        if key and key not in keys:
            keys.add(key)
            items.append(Knowledge(text, env.event_id, env.seq, env.occurred_at, session_id))


# The events evolve reads; the shard fold (projections.folds.state) does not call it for any other.
HANDLES = (ProfileDistilled,)


def evolve(profile: UserProfile, env: Envelope) -> UserProfile:
    """Apply one envelope: a ``profile_distilled`` event sets traits and adds new statements; others are ignored."""
    event = env.event
    if isinstance(event, ProfileDistilled):
        for name, value in event.traits.items():
            profile.traits[name] = Trait(name, value, env.event_id, env.seq, env.occurred_at, event.session_id)
        _add(profile.user_knowledge, profile._user_keys, event.user_knowledge, env, event.session_id)
        _add(profile.assistant_knowledge, profile._assistant_keys, event.assistant_knowledge, env, event.session_id)
        profile.distillations.append(env.event_id)
    return profile


def fold(profile: UserProfile, envelopes: Iterable[Envelope]) -> UserProfile:
    for env in envelopes:
        profile = evolve(profile, env)
    return profile


def user_profile(
    profile: UserProfile, *, include_knowledge: bool = True, include_assistant_knowledge: bool = False
) -> dict:
    """The ``get_user_profile`` view (seed 004's MCP tool): traits, and optionally the knowledge lists."""
    view: dict = {"traits": {name: profile.traits[name].value for name in sorted(profile.traits)}}
    if include_knowledge:
        view["user_knowledge"] = [k.text for k in profile.user_knowledge]
    if include_assistant_knowledge:
        view["assistant_knowledge"] = [k.text for k in profile.assistant_knowledge]
    return view
