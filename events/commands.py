"""Commands: what a caller asks the store to do, validated at the boundary.

Commands are imperative (``RecordMessage``); the events they produce are past
tense. Validation errors are turned into :class:`InvalidInputError` lines that
name the field and say how to fix it.
"""

from __future__ import annotations

import hashlib
from datetime import UTC
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError, field_validator

from events.errors import InvalidInputError
from events.model import MetadataValue, Role, index_text

FIX_HINTS: dict[str, str] = {
    "text": "give the message's text as a non-empty string",
    "occurred_at": "use an ISO-8601 timestamp with a timezone offset, e.g. 2024-05-01T09:30:00+00:00",
    "role": "use one of: user, assistant, system, tool",
    "tenant": "give a non-empty tenant id (string)",
    "user_id": "give a non-empty user id (string)",
    "conversation_id": "give a non-empty conversation id (string)",
    "speaker": "give the speaker's name as a string, or leave it out",
    "client_message_id": "give a non-empty string unique per message, or leave it out",
    "turn_id": "give a string such as D1:3, or leave it out",
    "metadata": "give an object of string keys to string/number/boolean/null values",
}


class RecordMessage(BaseModel):
    """Store one conversation message for (tenant, user)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tenant: str = Field(min_length=1, max_length=200)
    user_id: str = Field(min_length=1, max_length=200)
    conversation_id: str = Field(default="default", min_length=1, max_length=200)
    role: Role = "user"
    speaker: str | None = None
    text: str = Field(min_length=1)
    occurred_at: AwareDatetime
    client_message_id: str | None = Field(default=None, min_length=1)
    turn_id: str | None = None
    metadata: dict[str, MetadataValue] = Field(default_factory=dict)

    @field_validator("text")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("text is blank")
        return value

    def message_key(self) -> str:
        """The idempotency key: the caller's id, else a hash of the message's content and time."""
        if self.client_message_id:
            return self.client_message_id
        basis = "\x1f".join(
            [self.conversation_id, self.role, self.speaker or "", self.turn_id or "", self.occurred_at.astimezone(UTC).isoformat(), self.text]
        )
        return "sha1:" + hashlib.sha1(basis.encode("utf-8")).hexdigest()

    def index_text(self) -> str:
        """The text that is embedded and indexed: the speaker's name makes "what did X say" findable."""
        return index_text(self.speaker, self.text)


def _describe(error: Mapping[str, Any], prefix: str) -> tuple[str, str]:
    loc = [str(part) for part in error["loc"]]
    field = loc[0] if loc else ""
    where = prefix + ("." + ".".join(loc) if loc else "")
    if error["type"] == "extra_forbidden":
        return where, f"unknown field; remove it (known fields: {', '.join(RecordMessage.model_fields)})"
    hint = FIX_HINTS.get(field, "see the message format in the README")
    given = error.get("input")
    shown = repr(given)[:60] if field != "text" or not isinstance(given, str) else repr(given[:40])
    return where, f"{error['msg']} (got {shown}); fix: {hint}"


def validate_messages(items: Iterable[Mapping[str, Any] | RecordMessage], *, label: str = "messages") -> list[RecordMessage]:
    """Validate a whole batch; raise one :class:`InvalidInputError` listing every bad field."""
    items = list(items)
    out: list[RecordMessage] = []
    problems: list[tuple[str, str]] = []
    for i, item in enumerate(items):
        if isinstance(item, RecordMessage):
            out.append(item)
            continue
        if not isinstance(item, Mapping):
            problems.append((f"{label}[{i}]", f"expected an object, got {type(item).__name__}"))
            continue
        try:
            out.append(RecordMessage.model_validate(item))
        except ValidationError as exc:
            problems.extend(_describe(err, f"{label}[{i}]") for err in exc.errors())
    if problems:
        raise InvalidInputError(problems, what=f"batch of {len(items)} {label}")
    return out
