"""The tool-calling memory API of seed 001 (§4, appendix A): ``create_memory``, ``link_memories``, ``search_memories``.

An LLM proposes a call as ``(name, arguments)``; :func:`validate_tool_call`
turns it into one frozen model or raises :class:`InvalidInputError` listing
every problem as ``(field, "what is wrong; how to fix it")``, so the model can
repair its call in one round. Relative times ("yesterday 8pm", "上周") are
resolved against the message time by :mod:`projections.rules.timenorm`.

Names. Seed 001 spells its enums in Chinese; we use English values and accept
the seed's spelling as aliases:

* ``memory_type``: event 事件 (something that happened), fact 事实 (a stable
  state), relation 关系 (a relationship between people), opinion 观点 (a
  subjective judgement).
* ``relation_type`` of ``link_memories`` is an edge type of seed §3.3:
  memory_type 记忆类型, core_relation 核心关系, attribute 属性关系, causality
  因果关系, reference 引用关系. Links between two memories are normally
  causality or reference. The seed's appendix A instead offers the labels
  因为 / 所以 / 导致 (→ causality) and 引用 / 基于 / 相关 (→ reference, as the
  seed's relation discoverer files 相关); given as ``relation_type`` they are
  mapped to the edge type and kept as ``relation``, the edge's own name.

Additions to appendix A: ``occurred_at`` / ``time_expression`` on
``create_memory`` and ``mode`` (fast | deep | auto, seed §12.3) on
``search_memories``; ``time_range`` may also be a phrase such as "last week".
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError

from events.errors import InvalidInputError
from projections.rules.tool_arguments import (
    EDGE_TYPE_ALIASES, EDGE_TYPES, MEMORY_TYPE_ALIASES, MEMORY_TYPES, PREPARE, RELATION_LABELS, TIME_KEYS, Problems,
)
from projections.rules.tool_schema import FIELD_HINTS, RANGES, function_schema

MemoryType = Literal["event", "fact", "relation", "opinion"]
EdgeType = Literal["memory_type", "core_relation", "attribute", "causality", "reference"]
SearchMode = Literal["fast", "deep", "auto"]
__all__ = [
    "CreateMemory", "EDGE_TYPES", "EDGE_TYPE_ALIASES", "EdgeType", "LinkMemories", "MEMORY_TYPES",
    "MEMORY_TYPE_ALIASES", "MemoryType", "RELATION_LABELS", "SearchMemories", "SearchMode", "TIME_KEYS", "TOOLS",
    "TimeRange", "ToolCall", "tool_schemas", "validate_tool_call", "write_tool_schemas",
]


def _cross_field(field: str, message: str) -> PydanticCustomError:
    """A check spanning fields, reported against ``field`` (a model validator has no location of its own)."""
    return PydanticCustomError("cross_field", "{message}", {"field": field, "message": message})


class _ToolCall(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)

    tool_name: ClassVar[str]
    tool_description: ClassVar[str]


class CreateMemory(_ToolCall):
    """create_memory: one memory as subject → type → topic → object, with attributes."""

    tool_name: ClassVar[str] = "create_memory"
    tool_description: ClassVar[str] = (
        "Store one memory: who it is about (subject), its kind (memory_type), the action or state (topic), what "
        "it is about (object) and details (attributes such as time, place, with). Relative times such as "
        "'yesterday 8pm' or '昨天晚上' are resolved against the message time. Split a complex sentence into "
        "several memories and connect them with link_memories."
    )

    subject: str = Field(min_length=1, max_length=200,
                         description="Who the memory is about: the speaker's name, 'user', '我', '小明'.")
    memory_type: MemoryType = Field(
        description="event = something that happened (事件); fact = a stable state (事实); relation = a "
                    "relationship between people (关系); opinion = a subjective judgement (观点).")
    topic: str = Field(min_length=1, max_length=200,
                       description="The action or state, ideally a verb: 'adopt', 'go', 'work at', '吃饭', '情绪'.")
    object: str | None = Field(None, min_length=1, max_length=500,
                               description="What the action is about: 'puppy', 'support group', '白米饭', '小明'.")
    attributes: dict[str, str] = Field(
        default_factory=dict,
        description="Extra details as string pairs, e.g. {'time': 'yesterday 8pm', 'place': 'park', 'with': "
                    "'sister'}. Relative times are replaced by ISO dates.")
    importance: float = Field(0.5, ge=0, le=1,
                              description="0.3 routine, 0.5 ordinary, 0.8 important, 1.0 critical.")
    occurred_at: AwareDatetime | None = Field(
        None, description="When it happened, ISO-8601 with an offset. Filled from time_expression or a time "
                          "attribute when left out.")
    time_expression: str | None = Field(None, min_length=1, max_length=200,
                                        description="The time as said: 'yesterday 8pm', 'last Friday', '上周五'.")

    @field_validator("attributes")
    @classmethod
    def _keys_named(cls, value: dict[str, str]) -> dict[str, str]:
        if any(not key.strip() for key in value):
            raise PydanticCustomError("blank_key", "has a blank key; name every attribute, e.g. 'place'")
        return value

    @model_validator(mode="after")
    def _relation_has_a_party(self) -> CreateMemory:
        if self.memory_type == "relation" and not self.object:
            raise _cross_field("object", "a relation memory needs the other party; give object, e.g. '小明' "
                                         "for topic '朋友关系' or 'Anna' for topic 'sister'")
        return self


class LinkMemories(_ToolCall):
    """link_memories: an edge between two stored memories, found by their descriptions."""

    tool_name: ClassVar[str] = "link_memories"
    tool_description: ClassVar[str] = (
        "Link two memories already stored, each described in a few words: causality when one caused the other "
        "(因为 / 所以 / 导致), reference when one quotes or builds on the other (引用 / 基于 / 相关)."
    )

    source_memory_description: str = Field(min_length=1, max_length=500,
                                           description="The first memory in a few words: 'I slept badly'.")
    target_memory_description: str = Field(min_length=1, max_length=500,
                                           description="The second memory in a few words: 'I was unhappy today'.")
    relation_type: EdgeType = Field(
        description="Edge type: causality or reference between memories (memory_type, core_relation and "
                    "attribute are the edges inside one memory). The seed labels 因为, 所以, 导致, 引用, 基于, "
                    "相关 are accepted and kept as relation.")
    relation: str | None = Field(None, min_length=1, max_length=100,
                                 description="The relation's own name as said: 'because', '导致', '基于'.")
    importance: float = Field(0.6, ge=0, le=1, description="0.3 loose association … 1.0 essential link.")

    @model_validator(mode="after")
    def _two_memories(self) -> LinkMemories:
        if self.source_memory_description.casefold() == self.target_memory_description.casefold():
            raise _cross_field("target_memory_description", "is the same as source_memory_description; a link "
                                                            "joins two different memories")
        return self


class TimeRange(BaseModel):
    """A half-open span ``[start, end)``; either end may be open."""

    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)

    start: AwareDatetime | None = None
    end: AwareDatetime | None = None
    expression: str | None = None  # the phrase the range was read from, e.g. "last week"

    @model_validator(mode="after")
    def _ordered(self) -> TimeRange:
        if self.start is None and self.end is None:
            raise _cross_field("start", "time_range has neither start nor end; give at least one, or a phrase "
                                        "such as 'last week'")
        if self.start is not None and self.end is not None and self.end <= self.start:
            raise _cross_field("end", f"{self.end.isoformat()} is not after start {self.start.isoformat()}; "
                                      "swap them or widen the range")
        return self


class SearchMemories(_ToolCall):
    """search_memories: recall memories by meaning, filtered by type and time, expanded along links."""

    tool_name: ClassVar[str] = "search_memories"
    tool_description: ClassVar[str] = (
        "Search stored memories to answer a question or recall the past. Optionally keep only some memory "
        "types or a time range ('last week', '上周', or start/end), and follow links up to expand_depth hops."
    )

    query: str = Field(min_length=1, max_length=2000,
                       description="What to look for, a question or keywords: 'when did I adopt the puppy?'.")
    memory_types: tuple[MemoryType, ...] | None = Field(None, min_length=1,
                                                        description="Keep only these kinds of memory.")
    time_range: TimeRange | None = Field(None, description="Keep only memories in this span.")
    max_results: int = Field(10, ge=1, le=100, description="At most this many memories.")
    expand_depth: int = Field(1, ge=0, le=2, description="0 = direct matches only, 1 or 2 = follow links.")
    mode: SearchMode = Field("auto", description="fast = vector only, deep = vector and graph, auto = decide.")

    @field_validator("memory_types")
    @classmethod
    def _once_each(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return tuple(dict.fromkeys(value)) if value else value


ToolCall = CreateMemory | LinkMemories | SearchMemories
TOOLS: dict[str, type[CreateMemory] | type[LinkMemories] | type[SearchMemories]] = {
    model.tool_name: model for model in (CreateMemory, LinkMemories, SearchMemories)
}

def _where(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


_EXPECTED = (("string", "a string"), ("float", "a number"), ("int", "a whole number"), ("bool", "true or false"),
             ("dict", "an object"), ("model", "an object"), ("list", "a list"), ("tuple", "a list"),
             ("datetime", "an ISO-8601 timestamp with an offset"))


def _problem(error: Mapping[str, Any], model: type[BaseModel]) -> tuple[str, str] | None:
    loc, kind, ctx, given = tuple(error["loc"]), error["type"], error.get("ctx") or {}, error.get("input")
    where, field = _where(loc), str(loc[0]) if loc else ""
    if kind == "cross_field":
        return (f"{where}.{ctx['field']}" if where else ctx["field"]), ctx["message"]
    hint = FIELD_HINTS.get(field, "see the tool's JSON schema")
    if kind == "missing":
        return where, f"is required; {hint}"
    if kind == "extra_forbidden":
        known = TimeRange.model_fields if field == "time_range" and len(loc) > 1 else model.model_fields
        return where, f"unknown field; remove it (known fields: {', '.join(k for k in known if k != 'expression')})"
    if kind == "too_short" and ctx.get("actual_length") != (len(given) if hasattr(given, "__len__") else None):
        return None  # an item was rejected, and that item's own problem says why
    if kind in ("greater_than_equal", "less_than_equal") and field in RANGES:
        low, high = RANGES[field]
        return where, f"{given!r} is outside [{low}, {high}]; {hint}"
    if kind == "literal_error":
        return where, f"{given!r} is not allowed; {hint}"
    if kind in ("string_too_short", "too_short"):
        return where, f"is empty; {hint}"
    if kind == "timezone_aware":
        return where, f"{given!r} has no timezone offset; {hint}"
    shown = repr(given) if len(repr(given)) <= 60 else repr(given)[:57] + "..."
    expected = next((name for prefix, name in _EXPECTED if kind.startswith(prefix)), None)
    if expected:
        return where, f"expected {expected}, got {type(given).__name__} {shown}; {hint}"
    return where, f"{error['msg'].removeprefix('Value error, ')} (got {shown}); {hint}"


def validate_tool_call(name: str, arguments: Mapping[str, Any] | str, *, reference: datetime) -> ToolCall:
    """The validated call, or :class:`InvalidInputError` listing every problem as ``(field, how to fix)``.

    ``arguments`` may be the JSON text an LLM produced. ``reference`` is the
    message time (timezone-aware) that relative times are resolved against.
    """
    if not isinstance(reference, datetime) or reference.utcoffset() is None:
        raise InvalidInputError([("reference", f"must be a timezone-aware datetime (got {reference!r}); pass the "
                                               "message time with its offset")], what="tool call")
    model = TOOLS.get(name) if isinstance(name, str) else None
    if model is None:
        raise InvalidInputError([("name", f"unknown tool {name!r}; use one of: {', '.join(TOOLS)}")],
                                what="tool call")
    what = f"{name} call"
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError as exc:
            raise InvalidInputError([("arguments", f"not valid JSON ({exc.msg} at character {exc.pos}); pass a "
                                                   "JSON object of the tool's parameters")], what=what) from None
    if not isinstance(arguments, Mapping):
        required = ", ".join(f'"{k}": …' for k, f in model.model_fields.items() if f.is_required())
        raise InvalidInputError([("arguments", f"expected an object of parameters, got {type(arguments).__name__}; "
                                               f"pass e.g. {{{required}}}")], what=what)
    problems: Problems = []
    prepared = PREPARE[name](dict(arguments), reference, problems)
    try:
        call = model.model_validate(prepared)
    except ValidationError as exc:
        problems.extend(p for e in exc.errors() if (p := _problem(e, model)) is not None)
    if problems:
        order = {field: i for i, field in enumerate(model.model_fields)}
        problems.sort(key=lambda p: order.get(re.split(r"[.\[]", p[0])[0], len(order)))
        raise InvalidInputError(problems, what=what)
    return call


def tool_schemas() -> list[dict[str, Any]]:
    """OpenAI function-calling schemas of the three tools, self-contained (no ``$ref``)."""
    return [function_schema(model) for model in TOOLS.values()]


def write_tool_schemas(path: str | Path) -> Path:
    """Write ``{"tools": [...]}`` (the shape of seed 001 appendix A) as UTF-8 JSON; return the path."""
    path = Path(path)
    path.write_text(json.dumps({"tools": tool_schemas()}, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return path
