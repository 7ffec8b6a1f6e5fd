"""Typed, frozen, versioned domain events.

An event class describes the *payload* of one log row. The envelope (tenant,
user, seq, ids, timestamps) lives in :mod:`events.envelope`; the log assigns
``seq`` and ``recorded_at``.

Changing an event's shape: bump ``schema_version``, register one upcaster in
:mod:`events.upcasting` for the old version, and add a test that decodes a
stored fixture of the old version.
"""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar, Literal

import numpy as np
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator, model_validator

Role = Literal["user", "assistant", "system", "tool"]
ROLES: tuple[str, ...] = ("user", "assistant", "system", "tool")
MetadataValue = str | int | float | bool | None


def index_text(speaker: str | None, text: str) -> str:
    """What is embedded and indexed for a message: the speaker's name makes "what did X say" findable."""
    return f"{speaker}: {text}" if speaker else text


class Event(BaseModel):
    """Base payload model: frozen, strict about unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid", ser_json_bytes="base64", val_json_bytes="base64")

    kind: ClassVar[str]
    schema_version: ClassVar[int]

    def occurred(self, recorded_at: datetime) -> datetime:
        """When the fact happened in the world; defaults to when it was recorded."""
        return recorded_at


class MessageRecorded(Event):
    """A conversation message was stored. Its event id is the memory's id."""

    kind: ClassVar[str] = "message_recorded"
    schema_version: ClassVar[int] = 2

    conversation_id: str = Field(min_length=1)
    role: Role
    speaker: str | None = None
    text: str = Field(min_length=1)
    occurred_at: AwareDatetime
    client_message_id: str = Field(min_length=1)
    turn_id: str | None = None
    metadata: dict[str, MetadataValue] = Field(default_factory=dict)

    def occurred(self, recorded_at: datetime) -> datetime:
        return self.occurred_at


class MessageEmbedded(Event):
    """The embedding of a recorded message, stored once so replay never re-embeds.

    ``vector`` holds little-endian float32 values; ``input_text`` is exactly the
    text that was embedded (speaker prefix included).
    """

    kind: ClassVar[str] = "message_embedded"
    schema_version: ClassVar[int] = 1

    message_event_id: str
    model_id: str
    dim: int = Field(gt=0)
    vector: bytes
    input_text: str

    @field_validator("vector")
    @classmethod
    def _vector_length(cls, value: bytes, info) -> bytes:  # noqa: ANN001 - pydantic hook
        dim = info.data.get("dim")
        if dim is not None and len(value) != 4 * dim:
            raise ValueError(f"vector has {len(value) // 4} float32 values, expected dim={dim}")
        return value

    def array(self) -> np.ndarray:
        return np.frombuffer(self.vector, dtype="<f4")


TouchReason = Literal["search_hit", "context", "used"]


class MemoryTouched(Event):
    """Memories were accessed by one query: returned by a search, put into a context, or used by a reply.

    One event per query (not per memory) keeps the log small; the touch
    projection still counts every memory. The touched memories are stored as
    parallel columns (ids, 1-based ranks, fused scores): a context touches
    dozens of memories, and flat tuples decode far faster than nested models.
    """

    kind: ClassVar[str] = "memory_touched"
    schema_version: ClassVar[int] = 1

    reason: TouchReason
    query_id: str
    query: str
    memory_ids: tuple[str, ...] = Field(min_length=1)
    ranks: tuple[int, ...]
    scores: tuple[float, ...]

    @model_validator(mode="after")
    def _parallel(self) -> MemoryTouched:
        if not len(self.memory_ids) == len(self.ranks) == len(self.scores):
            raise ValueError("memory_ids, ranks and scores must have the same length")
        if any(r < 1 for r in self.ranks):
            raise ValueError("ranks start at 1")
        return self


MemoryType = Literal["decision", "config", "code", "error", "question", "chitchat", "preference", "fact", "unknown"]
MEMORY_TYPES: tuple[str, ...] = ("decision", "config", "code", "error", "question", "chitchat", "preference", "fact", "unknown")


class MessageClassified(Event):
    """The memory type of a message, decided once (offline rules or an LLM) and recorded.

    Retention reads the type to pick a stability; replay reads this record
    and never classifies again.
    """

    kind: ClassVar[str] = "message_classified"
    schema_version: ClassVar[int] = 1

    message_event_id: str
    memory_type: MemoryType
    confidence: float = Field(ge=0.0, le=1.0)
    classifier: str = Field(min_length=1)  # e.g. "rules-v1" or "llm:<model>"


class LlmCallRecorded(Event):
    """One call to a language model, recorded so replay reads it instead of calling again.

    ``prompt_sha256`` is the hash of the canonical JSON of (model, messages,
    parameters); ``parsed`` is the structured result (None when the call failed,
    then ``error`` says why). API keys are never recorded.
    """

    kind: ClassVar[str] = "llm_call_recorded"
    schema_version: ClassVar[int] = 1

    purpose: str = Field(min_length=1)
    model: str
    base_url: str
    prompt_sha256: str
    messages_json: str
    parameters: dict[str, MetadataValue] = Field(default_factory=dict)
    raw_output: str | None = None
    parsed_json: str | None = None
    error: str | None = None
    attempts: int = Field(default=1, ge=1)
    latency_ms: float = Field(default=0.0, ge=0.0)


EVENT_TYPES: dict[str, type[Event]] = {
    cls.kind: cls
    for cls in (MessageRecorded, MessageEmbedded, MemoryTouched, MessageClassified, LlmCallRecorded)
}
