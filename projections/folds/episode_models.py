"""Episodes across encoders: a user's switch to another model places its messages again, by that model's vectors.

Episode boundaries are decided by the vectors of the messages (topic shifts).
When a user switches encoder (``embedder_switched``, after a re-embedding
recorded the new model's vectors, which the episode fold holds), the episodes
become what they would be had the messages been recorded with the new model:
the messages are placed again in stream order, each with the hard boundary it
had (start, role reset, marker, conversation change, time gap: none depends on
a vector) and its new vector, by the fold's own steps. The old vectors are
held in turn, so switching back restores the old episodes exactly.
"""

from __future__ import annotations

from projections.folds.episodes import (HARD_REASONS, EpisodeMember, EpisodeState, SegmentationConfig, _attach,
                                        _drain)


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
