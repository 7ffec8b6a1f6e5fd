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


class EmbedderSwitched(Event):
    """The user's memories are searched by the vectors of ``model_id`` from here on (and those of its graph labels).

    Appended by a re-embedding once every message of the user has a vector of
    that model (``message_embedded`` events of it, recorded before); the vectors
    of earlier models stay in the log, so switching back re-encodes nothing.
    ``embedder`` is the encoder's spec (:mod:`projections.adapters.encoder_kinds`).
    """

    kind: ClassVar[str] = "embedder_switched"
    schema_version: ClassVar[int] = 1

    embedder: str = Field(min_length=1)
    model_id: str = Field(min_length=1)
    dim: int = Field(gt=0)
    previous_model_id: str = ""


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
        if min(self.ranks) < 1:  # not empty: memory_ids has at least one (min(), not a generator: every replay runs this)
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
    schema_version: ClassVar[int] = 2  # v2: key_terms

    message_event_id: str
    memory_type: MemoryType
    confidence: float = Field(ge=0.0, le=1.0)
    classifier: str = Field(min_length=1)  # e.g. "rules-v1" or "llm:<model>"
    # The message's key terms as the rules read them (the tier fold's page keywords), recorded so that replay never
    # re-reads the text with today's rules; None in v1 events (the fold then reads them from the text, as v1 did).
    key_terms: tuple[str, ...] | None = None


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


NoteCategory = Literal["preference", "decision", "constraint", "fact"]
NOTE_CATEGORIES: tuple[str, ...] = ("preference", "decision", "constraint", "fact")
NoteLifecycle = Literal["core", "fact", "episode", "system"]  # seed 002's lifecycle classes
NoteOp = Literal["add", "update", "boost", "delete", "skip"]
NOTE_OPS: tuple[str, ...] = ("add", "update", "boost", "delete", "skip")


class NoteContent(BaseModel):
    """What a note states. Nested in :class:`NoteOperation` (``add`` and ``update``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    category: NoteCategory
    text: str = Field(min_length=1)  # a standalone statement in the language of the conversation
    subject: str = "user"
    key_terms: tuple[str, ...] = ()
    polarity: Literal["positive", "negative"] = "positive"
    slot: str | None = None  # a one-valued attribute ("residence"), None for open statements
    value: str | None = None
    confidence: float = Field(default=0.7, ge=0.0, le=1.0)
    language: Literal["en", "zh"] = "en"
    lifecycle: NoteLifecycle = "fact"


class NoteOperation(Event):
    """One operation on the user's notes (add, update, boost, delete or skip), with its reason.

    ``add`` creates a note whose id is this event's id; ``update`` creates a
    new version (id = this event's id) and closes ``target_note_id`` (valid-to
    = ``valid_from``, superseded-by = the new note); ``boost`` reinforces the
    target; ``delete`` retracts it (valid-to set, nothing removed from the
    log); ``skip`` records a considered candidate that changed nothing.
    """

    kind: ClassVar[str] = "note_operation"
    schema_version: ClassVar[int] = 1

    op: NoteOp
    target_note_id: str | None = None
    note: NoteContent | None = None
    source_message_ids: tuple[str, ...] = ()
    valid_from: AwareDatetime  # when the statement was made (the source message's time)
    relation: str | None = None  # the contradiction detector's verdict that led here, if any
    reason: str = Field(min_length=1)
    decider: str = Field(min_length=1)  # "rules-v1" or "llm:<model>"
    llm_call_id: str | None = None  # the llm_call_recorded event this decision was read from

    @model_validator(mode="after")
    def _shape(self) -> NoteOperation:
        if self.op in ("add", "update") and self.note is None:
            raise ValueError(f"op {self.op!r} needs note (the content to store)")
        if self.op in ("update", "boost", "delete") and not self.target_note_id:
            raise ValueError(f"op {self.op!r} needs target_note_id (the note it acts on)")
        return self

    def occurred(self, recorded_at: datetime) -> datetime:
        return self.valid_from


class MessageSuperseded(Event):
    """Earlier turns a new turn says it left behind ("I switched from green tea to coffee"): superseded from
    ``valid_from`` on by ``by_message_event_id``. Decided once at ingest (offline rules or a model) and recorded;
    replay reads this record. The earlier turns stay in the log and in search, labelled and ranked below."""

    kind: ClassVar[str] = "message_superseded"
    schema_version: ClassVar[int] = 1

    message_event_ids: tuple[str, ...] = Field(min_length=1)
    by_message_event_id: str = Field(min_length=1)
    valid_from: AwareDatetime  # when the new turn was said
    reason: str = Field(min_length=1)
    decider: str = Field(min_length=1)  # e.g. "turn-change-v1"

    def occurred(self, recorded_at: datetime) -> datetime:
        return self.valid_from


class NoteReviewed(Event):
    """The note reviewer's decision on a note whose importance crossed a threshold (promote, keep or retract)."""

    kind: ClassVar[str] = "note_reviewed"
    schema_version: ClassVar[int] = 1

    note_id: str
    trigger: Literal["promotion", "retraction"]
    importance: float
    decision: Literal["promote", "keep", "delete"]
    reason: str = Field(min_length=1)
    reviewer: str = Field(min_length=1)
    at: AwareDatetime
    llm_call_id: str | None = None

    def occurred(self, recorded_at: datetime) -> datetime:
        return self.at


ArchiveReason = Literal["retention_floor", "category_rule", "lfu_eviction", "manual"]


class MemoryArchived(Event):
    """Memories left default retrieval (they stay in the log and in the archive search).

    ``retentions`` holds each memory's retention when archived (NaN when the
    reason is not a retention score, e.g. an LFU eviction).
    """

    kind: ClassVar[str] = "memory_archived"
    schema_version: ClassVar[int] = 1

    memory_ids: tuple[str, ...] = Field(min_length=1)
    reason: ArchiveReason
    at: AwareDatetime
    policy: str = ""  # the retention policy name, or the tier that evicted
    retentions: tuple[float, ...] = ()
    detail: str = ""

    @model_validator(mode="after")
    def _parallel(self) -> MemoryArchived:
        if self.retentions and len(self.retentions) != len(self.memory_ids):
            raise ValueError("retentions must be empty or as long as memory_ids")
        return self

    def occurred(self, recorded_at: datetime) -> datetime:
        return self.at


class MemoryRestored(Event):
    """Archived memories returned to default retrieval."""

    kind: ClassVar[str] = "memory_restored"
    schema_version: ClassVar[int] = 1

    memory_ids: tuple[str, ...] = Field(min_length=1)
    at: AwareDatetime
    reason: str = Field(min_length=1)

    def occurred(self, recorded_at: datetime) -> datetime:
        return self.at


class ProfileDistilled(Event):
    """A hot mid-term session's pages distilled into long-term memory (MemoryOS), recorded once.

    ``traits`` are user-profile attributes (name → value); ``user_knowledge``
    and ``assistant_knowledge`` are standalone statements.
    """

    kind: ClassVar[str] = "profile_distilled"
    schema_version: ClassVar[int] = 1

    session_id: str
    page_ids: tuple[str, ...] = Field(min_length=1)
    traits: dict[str, str] = Field(default_factory=dict)
    user_knowledge: tuple[str, ...] = ()
    assistant_knowledge: tuple[str, ...] = ()
    heat: float
    at: AwareDatetime
    distiller: str = Field(min_length=1)
    llm_call_id: str | None = None

    def occurred(self, recorded_at: datetime) -> datetime:
        return self.at


class EpisodeTitled(Event):
    """A title and summary for an episode written by a language model, recorded so replay never asks again."""

    kind: ClassVar[str] = "episode_titled"
    schema_version: ClassVar[int] = 1

    episode_id: str
    member_ids: tuple[str, ...] = Field(min_length=1)
    title: str = Field(min_length=1)
    summary: str = ""
    titler: str = Field(min_length=1)
    llm_call_id: str | None = None


EVENT_TYPES: dict[str, type[Event]] = {
    cls.kind: cls
    for cls in (
        MessageRecorded,
        MessageEmbedded,
        EmbedderSwitched,
        MemoryTouched,
        MessageClassified,
        LlmCallRecorded,
        NoteOperation,
        MessageSuperseded,
        NoteReviewed,
        MemoryArchived,
        MemoryRestored,
        ProfileDistilled,
        EpisodeTitled,
    )
}
