"""Builders for retention tests: events placed on a timeline of days.

``timeline`` seals events the way the log does, but with ``recorded_at`` set
to each event's time, so a touch happens exactly when the test says.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from events.envelope import Envelope, PendingEvent, seal
from events.model import Event, MessageClassified, MessageRecorded
from tests.builders import T0, message, touch

__all__ = ["T0", "classified", "day", "remembered", "timeline", "touch"]


def day(n: float) -> datetime:
    """``n`` days after the test epoch T0."""
    return T0 + timedelta(days=n)


def remembered(text: str, client_id: str, *, at: float = 0.0, role: str = "user", **metadata) -> MessageRecorded:
    """A message that happened on day ``at``; keyword arguments become its metadata."""
    msg = message(text, client_id, role=role, occurred_at=day(at))
    return MessageRecorded.model_validate({**msg.model_dump(), "metadata": metadata})


def classified(message_event_id: str, memory_type: str, confidence: float = 1.0) -> MessageClassified:
    return MessageClassified(
        message_event_id=message_event_id, memory_type=memory_type, confidence=confidence, classifier="test"
    )


def timeline(*entries: tuple[float, str, Event], tenant: str = "acme", user_id: str = "alice") -> list[Envelope]:
    """Seal ``(day, event_id, event)`` entries as consecutive envelopes recorded on those days."""
    return [
        seal(PendingEvent(tenant, user_id, event_id, event), seq, day(at))
        for seq, (at, event_id, event) in enumerate(entries, start=1)
    ]
