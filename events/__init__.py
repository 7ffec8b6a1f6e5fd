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
from events.model import EVENT_TYPES, Event, MemoryTouched, MessageEmbedded, MessageRecorded

__all__ = [
    "ENVELOPE_SCHEMA",
    "EVENT_TYPES",
    "ConcurrencyError",
    "Envelope",
    "Event",
    "EventLog",
    "InMemoryEventLog",
    "InvalidInputError",
    "MemoryTouched",
    "MessageEmbedded",
    "MessageRecorded",
    "PalimpsestError",
    "PendingEvent",
    "ScanFilter",
    "ShardUnavailableError",
    "StoreError",
    "UnknownEventError",
]
