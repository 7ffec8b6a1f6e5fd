"""Raw tool-call arguments made ready for validation (:mod:`projections.rules.tool_calls`).

An LLM writes the seed's Chinese enum names, relative times and dates where
timestamps belong; these functions turn them into what the models accept and
record what cannot be read as ``(field, how to fix)`` problems. Nothing here
decides whether a call is valid: the models do.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from projections.rules.timenorm import TimeMention, resolve_time_phrase
from projections.rules.tool_schema import FIELD_HINTS

MEMORY_TYPES: tuple[str, ...] = ("event", "fact", "relation", "opinion")
EDGE_TYPES: tuple[str, ...] = ("memory_type", "core_relation", "attribute", "causality", "reference")

# Seed 001's Chinese names, accepted as aliases.
MEMORY_TYPE_ALIASES: dict[str, str] = {"事件": "event", "事实": "fact", "关系": "relation", "观点": "opinion"}
EDGE_TYPE_ALIASES: dict[str, str] = {"记忆类型": "memory_type", "核心关系": "core_relation", "属性关系": "attribute",
                                     "因果关系": "causality", "引用关系": "reference"}
# Relation labels (appendix A's link_memories enum and English equivalents) → edge type.
RELATION_LABELS: dict[str, str] = {
    "因为": "causality", "所以": "causality", "导致": "causality", "引用": "reference", "基于": "reference",
    "相关": "reference", "because": "causality", "so": "causality", "therefore": "causality", "causes": "causality",
    "leads_to": "causality", "quotes": "reference", "cites": "reference", "based_on": "reference",
    "related": "reference", "related_to": "reference",
}
# Attribute keys whose value says when the memory happened: it also fills ``occurred_at``.
TIME_KEYS = frozenset({"time", "date", "when", "时间", "日期"})
_ISO_DATETIME = re.compile(r"^\s*\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")  # anything shorter goes through timenorm

Problems = list[tuple[str, str]]


def _phrase(value: Any, reference: datetime) -> TimeMention | None:
    if not isinstance(value, str) or _ISO_DATETIME.match(value):
        return None
    try:
        return resolve_time_phrase(value, reference)
    except ValueError:
        return None


def _aware(value: Any) -> datetime | None:
    """``value`` as a timezone-aware datetime when it is one (or ISO text of one), else None."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip())
        except ValueError:
            return None
    return value if isinstance(value, datetime) and value.utcoffset() is not None else None


def _alias(value: Any, aliases: Mapping[str, str]) -> Any:
    if not isinstance(value, str):
        return value
    return aliases.get(value.strip(), value.strip().lower())


def _prepare_create(args: dict[str, Any], reference: datetime, problems: Problems) -> dict[str, Any]:
    if "memory_type" in args:
        args["memory_type"] = _alias(args["memory_type"], MEMORY_TYPE_ALIASES)
    said: tuple[TimeMention, str] | None = None
    if isinstance(attributes := args.get("attributes"), Mapping):
        resolved = {}
        for key, value in attributes.items():
            mention = _phrase(value, reference)
            resolved[key] = mention.iso if mention else value
            if mention and said is None and isinstance(key, str) and key.strip().lower() in TIME_KEYS:
                said = (mention, value.strip())
        args["attributes"] = resolved
    if isinstance(expression := args.get("time_expression"), str) and expression.strip():
        try:
            said = (resolve_time_phrase(expression, reference), expression.strip())
        except ValueError as exc:
            problems.append(("time_expression", str(exc)))
    occurred = args.get("occurred_at")
    if isinstance(occurred, str) and not _ISO_DATETIME.match(occurred):
        if (mention := _phrase(occurred, reference)) is None:
            problems.append(("occurred_at", f"could not read {occurred!r} as a time; {FIELD_HINTS['occurred_at']}"))
            del args["occurred_at"]
        else:  # a date or a phrase where a timestamp belongs: resolve it, keep the words
            args["occurred_at"] = mention.start
            args.setdefault("time_expression", occurred.strip())
    elif occurred is None and said is not None:
        args["occurred_at"] = said[0].start
        args.setdefault("time_expression", said[1])
    elif (stated := _aware(occurred)) is not None and said is not None:
        mention, words = said
        occurred = stated
        if not mention.start <= occurred < mention.end:
            problems.append(("occurred_at", f"{occurred.isoformat()} is not within {words!r} ({mention.iso}); "
                                            "correct one of them, or leave occurred_at out"))
    return args


def _prepare_link(args: dict[str, Any], reference: datetime, problems: Problems) -> dict[str, Any]:
    given = args.get("relation_type")
    if isinstance(given, str):
        word, key = given.strip(), given.strip().lower().replace(" ", "_")
        if key in EDGE_TYPES or word in EDGE_TYPE_ALIASES:
            args["relation_type"] = EDGE_TYPE_ALIASES.get(word, key)
        elif word in RELATION_LABELS or key in RELATION_LABELS:
            args["relation_type"] = RELATION_LABELS.get(word) or RELATION_LABELS[key]
            args.setdefault("relation", word)
    return args


def _range_end(value: Any, reference: datetime, which: str, problems: Problems) -> Any:
    if not isinstance(value, str) or _ISO_DATETIME.match(value):
        return value
    try:
        mention = resolve_time_phrase(value, reference)
    except ValueError as exc:
        problems.append((f"time_range.{which}", str(exc)))
        return None
    return mention.start if which == "start" else mention.end  # a day given as end is included


def _prepare_search(args: dict[str, Any], reference: datetime, problems: Problems) -> dict[str, Any]:
    kinds = args.get("memory_types")
    if isinstance(kinds, str):
        kinds = [kinds]  # one kind given bare
    if isinstance(kinds, list | tuple):
        args["memory_types"] = [_alias(kind, MEMORY_TYPE_ALIASES) for kind in kinds]
    if isinstance(args.get("mode"), str):
        args["mode"] = args["mode"].strip().lower()
    span, before = args.get("time_range"), len(problems)
    if isinstance(span, str):
        try:
            mention = resolve_time_phrase(span, reference)
            args["time_range"] = {"start": mention.start, "end": mention.end, "expression": span.strip()}
        except ValueError as exc:
            problems.append(("time_range", str(exc)))
    elif isinstance(span, Mapping):
        args["time_range"] = {key: _range_end(value, reference, key, problems) if key in ("start", "end") else value
                              for key, value in span.items()}
    if len(problems) > before:
        del args["time_range"]  # already reported; validating it again would only repeat the problem
    return args


PREPARE: dict[str, Callable[[dict[str, Any], datetime, Problems], dict[str, Any]]] = {
    "create_memory": _prepare_create, "link_memories": _prepare_link, "search_memories": _prepare_search,
}
