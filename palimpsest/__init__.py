"""Palimpsest: event-sourced long-term memory for LLM agents."""

from events.errors import InvalidInputError, PalimpsestError, StoreError

__all__ = ["IngestReport", "InvalidInputError", "Memory", "PalimpsestError", "RecordMessage", "StoreError"]
__version__ = "0.1.0"


def __getattr__(name: str):
    """``Memory``, ``IngestReport`` and ``RecordMessage`` on first use: they load Ray, pyarrow and pydantic,
    which a client of a server (``palimpsest --server URL …``, ``palimpsest mcp``) never needs."""
    if name in ("Memory", "IngestReport"):
        from palimpsest import memory

        return getattr(memory, name)
    if name == "RecordMessage":
        from events.commands import RecordMessage

        return RecordMessage
    raise AttributeError(f"module 'palimpsest' has no attribute {name!r}")
