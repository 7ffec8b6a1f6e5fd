"""Palimpsest: event-sourced long-term memory for LLM agents."""

from events.commands import RecordMessage
from events.errors import InvalidInputError, PalimpsestError, StoreError

__all__ = ["IngestReport", "InvalidInputError", "Memory", "PalimpsestError", "RecordMessage", "StoreError"]
__version__ = "0.1.0"


def __getattr__(name: str):
    """``Memory`` and ``IngestReport`` on first use: importing them loads Ray, which a client of a server
    (``palimpsest --server URL …``, ``palimpsest mcp``) never needs."""
    if name in ("Memory", "IngestReport"):
        from palimpsest import memory

        return getattr(memory, name)
    raise AttributeError(f"module 'palimpsest' has no attribute {name!r}")
