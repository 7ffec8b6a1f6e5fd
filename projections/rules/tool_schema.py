"""JSON schemas and fix hints for :mod:`projections.rules.tool_calls`.

The function-calling schemas are generated from the pydantic models, then
made self-contained for LLM providers: ``$ref`` inlined, titles dropped,
``X | None`` shown as plain ``X`` (leaving a parameter out is how a model
says "none"). Where a parameter accepts more than its validated type, the
schema shows what the LLM may send (``time_range`` as a phrase or an object).
"""

from __future__ import annotations

import copy
from typing import Any

# How to fix each field, the second half of every problem message.
FIELD_HINTS: dict[str, str] = {
    "subject": "give who the memory is about as a non-empty string, e.g. 'Caroline' or '我'",
    "memory_type": "use one of: event, fact, relation, opinion (or the seed's 事件, 事实, 关系, 观点)",
    "topic": "give the action or state as a non-empty string, e.g. 'adopt' or '吃饭'",
    "object": "give what the memory is about as a non-empty string, or leave it out",
    "attributes": "give an object of string keys to string values, e.g. {'time': 'yesterday 8pm', 'place': 'park'}",
    "importance": "give a number between 0 and 1",
    "occurred_at": "use an ISO-8601 timestamp with an offset such as 2023-05-09T20:00:00+08:00, or put a phrase "
                   "like 'yesterday 8pm' in time_expression",
    "time_expression": "give the time as said, e.g. 'yesterday 8pm', 'last Friday' or '上周五', or leave it out",
    "source_memory_description": "describe the first memory in a few words, e.g. 'I slept badly'",
    "target_memory_description": "describe the second memory in a few words, e.g. 'I was unhappy today'",
    "relation_type": "use one of: memory_type, core_relation, attribute, causality, reference (the seed's 因为, "
                     "所以, 导致, 引用, 基于, 相关 are accepted too)",
    "relation": "give the relation's name as a short string, e.g. 'because' or '导致', or leave it out",
    "query": "give what to look for as a non-empty string",
    "memory_types": "give a non-empty list drawn from: event, fact, relation, opinion",
    "time_range": "give a phrase such as 'last week' or '上周', or an object {'start': …, 'end': …} of ISO-8601 "
                  "timestamps with offsets, dates or phrases",
    "max_results": "give a whole number between 1 and 100",
    "expand_depth": "give 0 (direct matches only), 1 or 2",
    "mode": "use one of: fast, deep, auto",
}
# Numeric bounds, for "1.7 is outside [0, 1]".
RANGES: dict[str, tuple[int, int]] = {"importance": (0, 1), "max_results": (1, 100), "expand_depth": (0, 2)}

_BOUND = {"type": "string", "description": "An ISO-8601 timestamp with an offset, a date (2023-05-07) or a phrase "
                                           "('last Monday', '上周一'); a day given as end is included."}
# The input shapes that differ from the validated types.
_OVERRIDES: dict[str, dict[str, Any]] = {
    "time_range": {
        "description": "Keep only memories in this span: a phrase resolved against the message time ('last "
                       "week', 'yesterday', 'May 2023', '上周', '上个月'), or an object with start and/or end.",
        "anyOf": [
            {"type": "string"},
            {"type": "object", "properties": {"start": _BOUND, "end": _BOUND}, "additionalProperties": False},
        ],
    },
}


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    """``node`` with every ``$ref`` replaced by the definition it points to, titles removed."""
    if isinstance(node, list):
        return [_inline(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = defs[node["$ref"].rsplit("/", 1)[-1]]
        merged = {**copy.deepcopy(target), **{k: v for k, v in node.items() if k != "$ref"}}
        return _inline(merged, defs)
    out = {key: _inline(value, defs) for key, value in node.items() if key not in ("title", "$defs")}
    options = out.get("anyOf")
    if isinstance(options, list) and {"type": "null"} in options:  # X | None: optional already says it
        rest = [option for option in options if option != {"type": "null"}]
        del out["anyOf"]
        out = {**rest[0], **out} if len(rest) == 1 else {**out, "anyOf": rest}
        if out.get("default", 0) is None:
            del out["default"]
    return out


def function_schema(model: Any) -> dict[str, Any]:
    """``{"type": "function", "function": {name, description, parameters}}`` for one tool model."""
    schema = model.model_json_schema()
    parameters = _inline(schema, schema.get("$defs", {}))
    parameters.pop("description", None)  # the tool's description says it better
    for name, override in _OVERRIDES.items():
        if name in parameters["properties"]:
            parameters["properties"][name] = copy.deepcopy(override)
    parameters.setdefault("required", [])
    return {"type": "function",
            "function": {"name": model.tool_name, "description": model.tool_description, "parameters": parameters}}
