"""The event log: typed events, one Arrow envelope, durable append-only storage.

The names below are loaded on first use (PEP 562), so ``from events.errors import ...`` in a light
process (a client of a served store) does not import pyarrow and every event model.
"""

from __future__ import annotations

from importlib import import_module

_WHERE = {
    "ENVELOPE_SCHEMA": "events.envelope",
    "Envelope": "events.envelope",
    "PendingEvent": "events.envelope",
    "ConcurrencyError": "events.errors",
    "InvalidInputError": "events.errors",
    "PalimpsestError": "events.errors",
    "ShardUnavailableError": "events.errors",
    "StoreError": "events.errors",
    "UnknownEventError": "events.errors",
    "EventLog": "events.log",
    "InMemoryEventLog": "events.log",
    "ScanFilter": "events.log",
    "EVENT_TYPES": "events.registry",
    "Event": "events.model",
    "LlmCallRecorded": "events.model",
    "MemoryTouched": "events.model",
    "MessageClassified": "events.model",
    "MessageEmbedded": "events.model",
    "MessageRecorded": "events.model",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name in _WHERE:
        value = getattr(import_module(_WHERE[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'events' has no attribute {name!r}")
