"""Message store projection: every recorded message of one user, in log order."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from events.envelope import Envelope
from events.model import MessageRecorded, MetadataValue, index_text


@dataclass(frozen=True, slots=True)
class StoredMessage:
    event_id: str
    seq: int
    conversation_id: str
    turn_id: str | None
    role: str
    speaker: str | None
    text: str
    occurred_at: datetime
    client_message_id: str
    metadata: tuple[tuple[str, MetadataValue], ...] = ()  # the message's metadata, as (key, value) pairs in order

    @property
    def index_text(self) -> str:
        return index_text(self.speaker, self.text)


@dataclass
class MessageStore:
    """Messages by event id plus the client ids already seen (for idempotent ingest)."""

    by_id: dict[str, StoredMessage] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    client_ids: dict[str, str] = field(default_factory=dict)

    def canonical(self) -> list[tuple]:
        out = []
        for event_id in self.order:
            m = self.by_id[event_id]
            out.append((m.event_id, m.seq, m.conversation_id, m.turn_id, m.role, m.speaker, m.text,
                        m.occurred_at.isoformat(), m.client_message_id, m.metadata))
        return out


# The events evolve reads; the shard fold (projections.folds.state) does not call it for any other.
HANDLES = (MessageRecorded,)


def evolve(state: MessageStore, env: Envelope) -> MessageStore:
    event = env.event
    if isinstance(event, MessageRecorded):
        msg = StoredMessage(
            event_id=env.event_id,
            seq=env.seq,
            conversation_id=event.conversation_id,
            turn_id=event.turn_id,
            role=event.role,
            speaker=event.speaker,
            text=event.text,
            occurred_at=event.occurred_at,
            client_message_id=event.client_message_id,
            metadata=tuple(event.metadata.items()),
        )
        state.by_id[env.event_id] = msg
        state.order.append(env.event_id)
        state.client_ids[event.client_message_id] = env.event_id
    return state
