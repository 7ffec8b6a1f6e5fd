"""Builders for memory-graph tests: staged memories with hand-made vectors (dim 4) and folded graph states.

``unit(*xs)`` normalises a 4-d vector; ``at_cosine(c)`` is a unit vector whose
cosine with ``E0`` is exactly ``c`` (up to float32 rounding), so thresholds
such as 0.95 and 0.85 are tested with 0.96, 0.90 and 0.80.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

import numpy as np

from events.graph_events import GraphMemoryStaged
from events.model import Event
from projections.folds.graph import GraphState, fold
from tests.builders import T0, stream

__all__ = ["E0", "E1", "E2", "E3", "T0", "at_cosine", "graph", "memory", "unit"]


def unit(*xs: float) -> np.ndarray:
    v = np.zeros(4, dtype=np.float64)
    v[: len(xs)] = xs
    return (v / np.linalg.norm(v)).astype("<f4")


E0, E1, E2, E3 = unit(1), unit(0, 1), unit(0, 0, 1), unit(0, 0, 0, 1)


def at_cosine(c: float, towards: np.ndarray = E1) -> np.ndarray:
    """A unit vector with cosine ``c`` to E0, leaning towards ``towards`` (orthogonal to E0)."""
    return (c * E0.astype(np.float64) + math.sqrt(1 - c * c) * towards.astype(np.float64)).astype("<f4")


def memory(
    subject: str,
    topic: str,
    obj: str | None = None,
    *,
    memory_type: str = "event",
    topic_vec: np.ndarray | None = None,
    object_vec: np.ndarray | None = None,
    attributes: dict[str, str] | None = None,
    importance: float = 0.5,
    minutes: float = 0.0,
    at: datetime | None = None,
    turn: str | None = None,
) -> GraphMemoryStaged:
    vectors = {}
    if topic_vec is not None:
        vectors[topic] = np.asarray(topic_vec, dtype="<f4").tobytes()
    if object_vec is not None and obj is not None:
        vectors[obj] = np.asarray(object_vec, dtype="<f4").tobytes()
    return GraphMemoryStaged(
        subject=subject, memory_type=memory_type, topic=topic, object=obj, attributes=attributes or {},
        importance=importance, source_message_ids=(f"msg-{turn}",) if turn else (),
        source_turn_ids=(turn,) if turn else (), occurred_at=at or T0 + timedelta(minutes=minutes),
        extractor="tool:create_memory", dim=4 if vectors else 0, vectors=vectors,
    )


def graph(*pairs: tuple[str, Event], user_id: str = "alice", state: GraphState | None = None) -> GraphState:
    """Fold the pairs as one user's stream; with ``state``, continue it (in place) after its last seq."""
    state = state or GraphState()
    return fold(state, stream(*pairs, user_id=user_id, first_seq=state.last_seq + 1))
