"""Plain builders for events and envelopes, shared by the unit and contract tests.

Envelopes are sealed the way the log seals them (``events.envelope.seal``),
with a fixed ``recorded_at`` so that folds over them are reproducible.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

import numpy as np

from events.envelope import Envelope, PendingEvent, seal
from events.model import Event, MemoryTouched, MessageEmbedded, MessageRecorded
from projections.adapters.embedding import HASH_ID
from projections.queries.list_expand import ListExpandConfig

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
RECORDED_AT = datetime(2024, 6, 1, 12, 0, tzinfo=UTC)


def message(
    text: str,
    client_id: str,
    *,
    conversation_id: str = "conv-1",
    role: str = "user",
    speaker: str | None = None,
    turn_id: str | None = None,
    occurred_at: datetime = T0,
) -> MessageRecorded:
    return MessageRecorded(
        conversation_id=conversation_id,
        role=role,
        speaker=speaker,
        text=text,
        occurred_at=occurred_at,
        client_message_id=client_id,
        turn_id=turn_id,
    )


def embedding(message_event_id: str, vector: Iterable[float], model_id: str = HASH_ID) -> MessageEmbedded:
    vec = np.asarray(list(vector), dtype="<f4")
    return MessageEmbedded(
        message_event_id=message_event_id, model_id=model_id, dim=len(vec), vector=vec.tobytes(), input_text="x"
    )


def touch(*memory_ids: str, reason: str = "search_hit", query: str = "query") -> MemoryTouched:
    """One query's touch event: the memories in rank order, scores 1, 1/2, 1/3, ..."""
    return MemoryTouched(
        reason=reason,
        query_id="q-1",
        query=query,
        memory_ids=tuple(memory_ids),
        ranks=tuple(range(1, len(memory_ids) + 1)),
        scores=tuple(1.0 / r for r in range(1, len(memory_ids) + 1)),
    )


def pending(event_id: str, event: Event, tenant: str = "acme", user_id: str = "alice") -> PendingEvent:
    return PendingEvent(tenant, user_id, event_id, event)


def stream(
    *events: tuple[str, Event],
    tenant: str = "acme",
    user_id: str = "alice",
    first_seq: int = 1,
    recorded_at: datetime = RECORDED_AT,
) -> list[Envelope]:
    """Seal ``(event_id, event)`` pairs as consecutive envelopes of one stream.

    Each envelope is recorded one second after the previous one, so
    touch timestamps are distinct.
    """
    return [
        seal(PendingEvent(tenant, user_id, event_id, event), first_seq + i, recorded_at + timedelta(seconds=i))
        for i, (event_id, event) in enumerate(events)
    ]


def command(text: str, i: int = 0, **fields) -> dict:
    """A valid message dict for ``validate_messages`` / ``Memory.add_messages``."""
    base = {
        "tenant": "acme",
        "user_id": "alice",
        "text": text,
        "occurred_at": (T0 + timedelta(minutes=i)).isoformat(),
    }
    base.update(fields)
    return base


# The stages after the fusion and the learned ranker switched off: tests that compute fused scores by hand use it.
STAGES_OFF = dict(neighbour_weight=0.0, speaker_weight=0.0, time_weight=0.0, clause_weight=0.0,
                  cjk_dense_weight=None, ranker=None, conversation_weight=0.0, fact_key=False, cjk_subwords=False,
                  context_weight=0.0, list_expansion=ListExpandConfig(weight=0.0))


def pet_turns() -> tuple[tuple[str, Event], ...]:
    """Three turns of one dialogue (ids m1-m3, a minute apart): a question, its answer, a reply to the answer."""
    return (("m1", message("Did you ever adopt a pet?", "c1", speaker="Nate", turn_id="D1:1")),
            ("m2", message("Yes, a turtle named Shelly", "c2", speaker="Joanna", turn_id="D1:2",
                           occurred_at=T0 + timedelta(minutes=1))),
            ("m3", message("Shelly loves the beach", "c3", speaker="Nate", turn_id="D1:3",
                           occurred_at=T0 + timedelta(minutes=2))))
