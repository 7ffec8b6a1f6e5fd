"""The event log: typed events, one Arrow envelope, durable append-only storage."""

from events.envelope import ENVELOPE_SCHEMA, Envelope, PendingEvent
from events.errors import (
    ConcurrencyError,
    InvalidInputError,
    PalimpsestError,
    ShardUnavailableError,
    StoreError,
    UnknownEventError,
)
from events.log import EventLog, InMemoryEventLog, ScanFilter
from events.registry import EVENT_TYPES
from events.model import (
    Event,
    LlmCallRecorded,
    MemoryTouched,
    MessageClassified,
    MessageEmbedded,
    MessageRecorded,
)

__all__ = [
    "ENVELOPE_SCHEMA",
    "EVENT_TYPES",
    "ConcurrencyError",
    "Envelope",
    "Event",
    "EventLog",
    "InMemoryEventLog",
    "InvalidInputError",
    "LlmCallRecorded",
    "MemoryTouched",
    "MessageClassified",
    "MessageEmbedded",
    "MessageRecorded",
    "PalimpsestError",
    "PendingEvent",
    "ScanFilter",
    "ShardUnavailableError",
    "StoreError",
    "UnknownEventError",
]
