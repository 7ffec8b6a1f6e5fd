"""Request bodies of the HTTP API (frozen, unknown fields refused). The tenant is never among them: it is the key's."""

from __future__ import annotations

from typing import Any

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field


class Body(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class AddMessages(Body):
    """Messages in the format of :class:`palimpsest.RecordMessage`, without ``tenant`` and ``user_id``.

    Give each a ``client_message_id``: sending it again is a no-op that returns the same memory id.
    """

    messages: list[dict[str, Any]] = Field(min_length=1, max_length=5000)
    extract_graph: bool = True


class ToolCall(Body):
    """The JSON arguments of a memory-graph tool call, as an LLM would send them."""

    arguments: dict[str, Any] = Field(default_factory=dict)
    reference: AwareDatetime | None = None
