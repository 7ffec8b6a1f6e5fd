"""Palimpsest: event-sourced long-term memory for LLM agents."""

from events.commands import RecordMessage
from events.errors import InvalidInputError, PalimpsestError, StoreError
from palimpsest.memory import IngestReport, Memory

__all__ = ["IngestReport", "InvalidInputError", "Memory", "PalimpsestError", "RecordMessage", "StoreError"]
__version__ = "0.1.0"
