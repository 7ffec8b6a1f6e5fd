"""From dialogue turns and tool calls to ``graph_memory_staged`` events.

The driver extracts candidate graph memories from each new turn (offline
EN/ZH subject–verb–object rules, :mod:`projections.rules.graph_extract`), and
the shard records them in the same batch as the turn, without label vectors:
the driver embeds every pending topic and object label later, in one pass,
and records the vectors (``graph_labels_embedded``,
:meth:`palimpsest.memory_graph.GraphApiMixin.embed_labels`). A
``create_memory`` call stages its memory with its labels' vectors at once.
Replay reads the recorded vectors and never embeds again. With a language
model configured, the shard asks it for the turn's memories instead and
stages these only as its fallback (:mod:`actors.llm.graph_ops`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

import numpy as np

from events.commands import RecordMessage
from events.graph_events import GraphMemoryStaged
from projections.rules.graph_extract import CandidateGraphMemory, extract_graph_memories

STAGED_ROLES = ("user",)  # whose turns state memories about a subject (LoCoMo speakers are both "user")


def candidates_for(commands: Sequence[RecordMessage]) -> list[tuple[CandidateGraphMemory, ...]]:
    """The candidate graph memories of each command (empty for roles that state none)."""
    return [
        extract_graph_memories(c.text, speaker=c.speaker, occurred_at=c.occurred_at) if c.role in STAGED_ROLES else ()
        for c in commands
    ]


def labels_of(candidates: Sequence[Sequence[CandidateGraphMemory]]) -> list[str]:
    """Every topic/object label to embed, once each, in first-seen order."""
    seen: dict[str, None] = {}
    for group in candidates:
        for c in group:
            seen.setdefault(c.topic)
            if c.object:
                seen.setdefault(c.object)
    return list(seen)


def staged_event(
    candidate: CandidateGraphMemory | Mapping,
    vectors: Mapping[str, np.ndarray],
    *,
    occurred_at: datetime,
    extractor: str,
    source_message_ids: tuple[str, ...] = (),
    source_turn_ids: tuple[str, ...] = (),
) -> GraphMemoryStaged:
    """A staged memory from an extracted candidate (or validated ``create_memory`` arguments) and label vectors."""
    c = candidate if isinstance(candidate, Mapping) else {
        "subject": candidate.subject, "memory_type": candidate.memory_type, "topic": candidate.topic,
        "object": candidate.object, "attributes": dict(candidate.attributes), "importance": candidate.importance,
    }
    labels = [label for label in (c["topic"], c.get("object")) if label and label in vectors]
    dim = int(np.asarray(vectors[labels[0]]).shape[0]) if labels else 0
    when = candidate.when.start if not isinstance(candidate, Mapping) and candidate.when else occurred_at
    return GraphMemoryStaged(
        subject=c["subject"], memory_type=c["memory_type"], topic=c["topic"], object=c.get("object"),
        attributes={k: str(v) for k, v in (c.get("attributes") or {}).items()},
        importance=c.get("importance", 0.5), source_message_ids=source_message_ids, source_turn_ids=source_turn_ids,
        occurred_at=when, extractor=extractor, dim=dim,
        vectors={label: np.asarray(vectors[label], dtype="<f4").tobytes() for label in labels},
    )
