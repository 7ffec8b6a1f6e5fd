"""Titles and summaries of episodes written by a language model (``episode_titled`` events).

The extractive title of :mod:`projections.queries.summaries` is always there; a
recorded model title replaces it in the views when it was written for the
same members (an episode that has since changed keeps its extractive title).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from events.envelope import Envelope
from events.model import EpisodeTitled


@dataclass(frozen=True, slots=True)
class Title:
    title: str
    summary: str
    member_ids: tuple[str, ...]
    titler: str
    event_id: str


@dataclass
class TitleState:
    titles: dict[str, Title] = field(default_factory=dict)  # episode id → the latest recorded title

    def for_episode(self, episode_id: str, member_ids: tuple[str, ...]) -> Title | None:
        title = self.titles.get(episode_id)
        return title if title is not None and title.member_ids == member_ids else None

    def canonical(self) -> list:
        return sorted((k, t.title, t.summary, t.member_ids, t.titler, t.event_id) for k, t in self.titles.items())


# The events evolve reads; the shard fold (projections.folds.state) does not call it for any other.
HANDLES = (EpisodeTitled,)


def evolve(state: TitleState, env: Envelope) -> TitleState:
    event = env.event
    if isinstance(event, EpisodeTitled):
        state.titles[event.episode_id] = Title(event.title, event.summary, event.member_ids, event.titler, env.event_id)
    return state


def fold(state: TitleState, envelopes: Iterable[Envelope]) -> TitleState:
    for env in envelopes:
        state = evolve(state, env)
    return state
