"""Commands: what a caller asks the store to do, validated at the boundary.

Commands are imperative (``RecordMessage``); the events they produce are past
tense. Validation errors are turned into :class:`InvalidInputError` lines that
name the field and say how to fix it.
"""

from __future__ import annotations

import hashlib
import json
import math
import unicodedata
from datetime import UTC
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError, field_validator

from events.errors import InvalidInputError
from events.model import MetadataValue, Role, index_text

# Size limits (documented in the README, "Limits"): checked field by field before anything is written.
MAX_ID_CHARS = 200  # tenant, user_id, conversation_id, speaker, client_message_id, turn_id
MAX_TEXT_CHARS = 100_000  # one message's text
MAX_METADATA_KEYS = 64
MAX_METADATA_KEY_CHARS = 128
MAX_METADATA_BYTES = 16_384  # the metadata object as JSON (UTF-8); values are scalars: depth 1
MAX_MESSAGES_PER_CALL = 100_000  # one add_messages call / one ingested file
MAX_BATCH_SIZE = 10_000  # messages per shard command (add_messages(batch_size=...))
ID_RULE = (f"1 to {MAX_ID_CHARS} characters, no control characters, no '/' or '\\', not '.' or '..', "
           "no leading or trailing spaces")

FIX_HINTS: dict[str, str] = {
    "text": f"give the message's text as a non-empty string of at most {MAX_TEXT_CHARS} characters",
    "occurred_at": "use an ISO-8601 timestamp with a timezone offset, e.g. 2024-05-01T09:30:00+00:00",
    "role": "use one of: user, assistant, system, tool",
    "tenant": f"give a non-empty tenant id: {ID_RULE}",
    "user_id": f"give a non-empty user id: {ID_RULE}",
    "conversation_id": "give a non-empty conversation id (string)",
    "speaker": "give the speaker's name as a string, or leave it out",
    "client_message_id": "give a non-empty string unique per message, or leave it out",
    "turn_id": "give a string such as D1:3, or leave it out",
    "metadata": (f"give an object of at most {MAX_METADATA_KEYS} string keys (each at most "
                 f"{MAX_METADATA_KEY_CHARS} characters) to string/number/boolean/null values, at most "
                 f"{MAX_METADATA_BYTES} bytes as JSON"),
}


class RecordMessage(BaseModel):
    """Store one conversation message for (tenant, user)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tenant: str = Field(min_length=1, max_length=200)
    user_id: str = Field(min_length=1, max_length=200)
    conversation_id: str = Field(default="default", min_length=1, max_length=MAX_ID_CHARS)
    role: Role = "user"
    speaker: str | None = Field(default=None, max_length=MAX_ID_CHARS)
    text: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    occurred_at: AwareDatetime
    client_message_id: str | None = Field(default=None, min_length=1, max_length=MAX_ID_CHARS)
    turn_id: str | None = Field(default=None, max_length=MAX_ID_CHARS)
    metadata: dict[str, MetadataValue] = Field(default_factory=dict, max_length=MAX_METADATA_KEYS)

    @field_validator("tenant", "user_id")
    @classmethod
    def _id_characters(cls, value: str) -> str:
        value = canonical_id(value)
        problem = id_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("occurred_at")
    @classmethod
    def _representable(cls, value):
        if not _utc_ok(value) or not 2 <= value.astimezone(UTC).year <= 9998:
            raise ValueError("the time is too close to year 1 or 9999; give a time between the years 2 and 9998")
        return value

    @field_validator("metadata")
    @classmethod
    def _metadata_size(cls, value: dict) -> dict:
        long = [k for k in value if len(k) > MAX_METADATA_KEY_CHARS]
        if long:
            raise ValueError(f"key {long[0][:40]!r}... is longer than {MAX_METADATA_KEY_CHARS} characters")
        for key, item in value.items():
            # A lone surrogate is no text (it cannot be stored as UTF-8), NaN/inf no JSON: both would come
            # back changed from the log, so they are refused here.
            for text in (key, item) if isinstance(item, str) else (key,):
                if not is_utf8(text):
                    raise ValueError(f"key {key[:40]!r} holds a lone surrogate (not valid Unicode text)")
            if isinstance(item, float) and not math.isfinite(item):
                raise ValueError(f"key {key[:40]!r} is {item}; give a finite number (NaN and infinity are not JSON)")
        size = len(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        if size > MAX_METADATA_BYTES:
            raise ValueError(f"{size} bytes as JSON, more than {MAX_METADATA_BYTES}")
        return value

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


def is_utf8(text: str) -> bool:
    """Whether ``text`` is valid Unicode: no lone surrogate, which UTF-8 (DuckDB, Arrow, JSON on the wire) cannot
    hold."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _utc_ok(value) -> bool:
    try:
        value.astimezone(UTC)
    except (OverflowError, ValueError):
        return False
    return True


def canonical_id(value: object) -> object:
    """A tenant or user id in the one form it is stored, routed and compared in: Unicode NFC (so "josé" typed
    as é or as e + combining accent is one user). Anything else is returned as it is, for :func:`id_problem`."""
    return unicodedata.normalize("NFC", value) if isinstance(value, str) and not value.isascii() else value


def id_problem(value: object) -> str | None:
    """Why ``value`` is no valid tenant or user id (see ``ID_RULE``), or ``None``."""
    if not isinstance(value, str) or not value:
        return "not a non-empty string"
    if len(value) > MAX_ID_CHARS:
        return f"{len(value)} characters, more than {MAX_ID_CHARS}"
    if value in (".", "..") or "/" in value or "\\" in value:
        return "holds '/' or '\\' or is '.' or '..'"
    if value != value.strip():
        return "has leading or trailing spaces"
    if any(unicodedata.category(ch).startswith("C") for ch in value):
        return "holds a control, format or surrogate character"
    return None


def id_problems(ids: list[tuple[str, object]]) -> list[tuple[str, str]]:
    """A ``(field, fix)`` for each ``(field, id)`` that is no valid tenant or user id (ids in canonical form)."""
    problems = []
    for field, value in ids:
        if problem := id_problem(value):
            fix = (f"remove the spaces at either end, e.g. {value.strip()!r:.60}" if problem.endswith("spaces")
                   else f"give an id of {ID_RULE}")
            problems.append((field, f"{value!r:.60}: {problem}; {fix}"))
    return problems


def check_stream(tenant: object, user_id: object, *, what: str) -> tuple[str, str]:
    """The (tenant, user id) of a read or operator call in their canonical form (:func:`canonical_id`); an
    invalid one is refused before it reaches a shard."""
    tenant, user_id = canonical_id(tenant), canonical_id(user_id)
    problems = [(name, f"{id_problem(v)} (got {repr(v)[:60]}); fix: give an id of {ID_RULE}")
                for name, v in (("tenant", tenant), ("user_id", user_id)) if id_problem(v)]
    if problems:
        raise InvalidInputError(problems, what=what)
    return tenant, user_id


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
    if len(items) > MAX_MESSAGES_PER_CALL:
        raise InvalidInputError([(label, f"{len(items)} messages, more than {MAX_MESSAGES_PER_CALL} in one call; "
                                          "split them over several calls")], what=f"batch of {len(items)} {label}")
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
