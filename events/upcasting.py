"""Upcasters: turn a stored payload of an old schema version into the next version.

One function per (kind, from_version). Never edit an existing upcaster: add a
new one for the next version and a fixture test that decodes the old shape.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from events.errors import UnknownEventError
from events.registry import EVENT_TYPES

Payload = dict[str, Any]
Upcaster = Callable[[Payload], Payload]


def _message_recorded_v1_to_v2(payload: Payload) -> Payload:
    # v1 called the conversation `session_id` and had no turn id.
    out = dict(payload)
    out["conversation_id"] = out.pop("session_id")
    out.setdefault("turn_id", None)
    return out


def _graph_memory_staged_v1_to_v2(payload: Payload) -> Payload:
    # v1 had no llm_call_id and no reason: every v1 memory came from rules or a tool call.
    return {**payload, "llm_call_id": None, "reason": None}


def _graph_edge_linked_v1_to_v2(payload: Payload) -> Payload:
    # v1 had no llm_call_id: no v1 edge was confirmed by a language model.
    return {**payload, "llm_call_id": None}


def _message_classified_v1_to_v2(payload: Payload) -> Payload:
    # v1 did not record key terms: the tier fold reads them from the message text, as it did then.
    return {**payload, "key_terms": None}


def _feedback_detected_v1_to_v2(payload: Payload) -> Payload:
    # v1 did not record when the user reacted: its time is when it was recorded (the envelope's).
    return {**payload, "at": None}


def _feedback_detected_v2_to_v3(payload: Payload) -> Payload:
    # v2 did not record the question the judged reply answered.
    return {**payload, "query": None}


def _memory_adjusted_v1_to_v2(payload: Payload) -> Payload:
    # v1 adjustments had no topic: each applied to every query, as it did then.
    return {**payload, "scope": None}


def _graph_labels_embedded_v1_to_v2(payload: Payload) -> Payload:
    # v1 did not name the model: its vectors are of the store's model when they were recorded (the user's first).
    return {**payload, "model_id": "", "ahead": False}


UPCASTERS: dict[tuple[str, int], Upcaster] = {
    ("message_recorded", 1): _message_recorded_v1_to_v2,
    ("graph_memory_staged", 1): _graph_memory_staged_v1_to_v2,
    ("graph_edge_linked", 1): _graph_edge_linked_v1_to_v2,
    ("message_classified", 1): _message_classified_v1_to_v2,
    ("feedback_detected", 1): _feedback_detected_v1_to_v2,
    ("feedback_detected", 2): _feedback_detected_v2_to_v3,
    ("memory_adjusted", 1): _memory_adjusted_v1_to_v2,
    ("graph_labels_embedded", 1): _graph_labels_embedded_v1_to_v2,
}


def upcast(kind: str, version: int, payload: Payload) -> Payload:
    """Apply upcasters until ``payload`` has the current version of ``kind``."""
    cls = EVENT_TYPES.get(kind)
    if cls is None:
        raise UnknownEventError(f"unknown event kind {kind!r}; upgrade palimpsest to read this log")
    if version > cls.schema_version:
        raise UnknownEventError(
            f"{kind} v{version} is newer than this code knows (v{cls.schema_version}); upgrade palimpsest"
        )
    while version < cls.schema_version:
        step = UPCASTERS.get((kind, version))
        if step is None:
            raise UnknownEventError(f"no upcaster from {kind} v{version}; the log needs a migration")
        payload = step(payload)
        version += 1
    return payload
