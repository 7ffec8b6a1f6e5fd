"""Events of the memory graph (seed 001 §3, §12; seed 003 §3): every create, link, merge and status change.

The graph projection (:mod:`projections.folds.graph`) is a fold over these events;
nothing in the graph is written any other way.

- ``graph_memory_staged``: one ``create_memory`` call. The event id is the
  memory id. It names a subject, a memory type, a topic, an optional object,
  attributes (key → value) and the embeddings of the topic and object labels
  (little-endian float32 bytes keyed by the label, recorded once so replay
  never re-embeds). The memory enters the staging pool. The offline rules stage
  theirs without vectors: the labels are embedded later, in one pass.
- ``graph_labels_embedded``: the embeddings of topic and object labels staged
  without one (the driver embeds them before a consolidation or a graph read,
  all of a user's at once); every topic/object node of that label and no vector
  takes it.
- ``graph_memories_consolidated``: a consolidation batch moved staged memories
  into the consolidated graph.
- ``graph_nodes_merged`` / ``graph_nodes_unmerged``: node de-duplication and
  its undo. A merge redirects the merged nodes to the kept node; an unmerge
  names the merge and restores the nodes exactly.
- ``graph_edge_linked``: a relation between two memories or nodes (the
  ``link_memories`` tool, or one found by consolidation).
- ``graph_memory_status_changed``: a memory became active, archived or superseded.
- ``graph_conclusion_recorded``: the abstraction engine's long-term conclusion
  (statement, conditions, confidence, sources, version).
- ``graph_proposal_rejected``: a memory or link a language model proposed that
  was not applied, and why (the fold ignores it; the log keeps the reason).

A staged memory or a linked edge decided by a language model names its
``llm_call_recorded`` event in ``llm_call_id`` (v2 of both events; v1 had no
such field and upcasts to ``None``).

The memory types and relation names are stored in English identifiers
(``event``, ``fact``, ``relation``, ``opinion``); labels keep the user's language.
"""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar, Literal

import numpy as np
from pydantic import AwareDatetime, Field, model_validator

from events.model import Event

GraphMemoryType = Literal["event", "fact", "relation", "opinion"]
GRAPH_MEMORY_TYPES: tuple[str, ...] = ("event", "fact", "relation", "opinion")
NodeType = Literal["subject", "topic", "object", "attribute", "value"]
NODE_TYPES: tuple[str, ...] = ("subject", "topic", "object", "attribute", "value")
EdgeType = Literal["memory_type", "core_relation", "attribute", "causality", "reference"]
EDGE_TYPES: tuple[str, ...] = ("memory_type", "core_relation", "attribute", "causality", "reference")
MemoryStatus = Literal["active", "archived", "superseded"]
EndpointKind = Literal["memory", "node"]


class GraphMemoryStaged(Event):
    """A memory created by the extractor (``create_memory``) and put in the staging pool; event id = memory id.

    ``vectors`` maps the topic label and/or the object label to its embedding
    (``dim`` float32 values, little-endian); other nodes carry no vector.
    """

    kind: ClassVar[str] = "graph_memory_staged"
    schema_version: ClassVar[int] = 2  # v2: llm_call_id, reason

    subject: str = Field(min_length=1)
    memory_type: GraphMemoryType
    topic: str = Field(min_length=1)
    object: str | None = None
    core_relation: str = Field(default="is", min_length=1)  # the topic → object relation name ("is", "does", "has")
    attributes: dict[str, str] = Field(default_factory=dict)
    importance: float = Field(default=0.5, ge=0.0, le=1.0)
    source_message_ids: tuple[str, ...] = ()
    source_turn_ids: tuple[str, ...] = ()
    occurred_at: AwareDatetime
    extractor: str = Field(min_length=1)  # "tool:create_memory", "llm:<model>", "graph-rules-v1"
    dim: int = Field(default=0, ge=0)
    vectors: dict[str, bytes] = Field(default_factory=dict)
    llm_call_id: str | None = None  # the llm_call_recorded event it was read from (or whose failure it replaces)
    reason: str | None = None  # why this extractor staged it, when that needs saying (an offline fallback)

    @model_validator(mode="after")
    def _vectors(self) -> GraphMemoryStaged:
        labels = {self.topic} | ({self.object} if self.object else set())
        stray = sorted(set(self.vectors) - labels)
        if stray:
            raise ValueError(f"vectors are keyed by the topic or object label; {stray} is neither")
        if self.vectors and self.dim == 0:
            raise ValueError("vectors were given without dim (the number of float32 values per vector)")
        for label, blob in self.vectors.items():
            if len(blob) != 4 * self.dim:
                raise ValueError(f"vector of {label!r} has {len(blob) // 4} float32 values, expected dim={self.dim}")
        if any(not key.strip() or not value.strip() for key, value in self.attributes.items()):
            raise ValueError("attribute keys and values must be non-blank")
        return self

    def vector(self, label: str) -> np.ndarray | None:
        blob = self.vectors.get(label)
        return None if blob is None else np.frombuffer(blob, dtype="<f4")

    def occurred(self, recorded_at: datetime) -> datetime:
        return self.occurred_at


class GraphLabelsEmbedded(Event):
    """Embeddings of node labels staged without one: ``vectors`` maps each label to ``dim`` float32 values
    (little-endian), computed once by the store's encoder, so replay never embeds."""

    kind: ClassVar[str] = "graph_labels_embedded"
    schema_version: ClassVar[int] = 2

    dim: int = Field(ge=1)
    vectors: dict[str, bytes] = Field(min_length=1)
    # v2: the model the vectors are of; "" (every v1 event) is the model of the user's first vectors. A
    # re-embedding records the labels again under the new model (palimpsest.reembed).
    model_id: str = ""
    # v2: recorded ahead of a switch to ``model_id`` (a re-embedding): the nodes keep their vectors until the user's
    # ``embedder_switched`` event, which gives them these.
    ahead: bool = False

    @model_validator(mode="after")
    def _sizes(self) -> GraphLabelsEmbedded:
        for label, blob in self.vectors.items():
            if not label.strip():
                raise ValueError("labels must be non-blank")
            if len(blob) != 4 * self.dim:
                raise ValueError(f"vector of {label!r} has {len(blob) // 4} float32 values, expected dim={self.dim}")
        return self

    def vector(self, label: str) -> np.ndarray | None:
        blob = self.vectors.get(label)
        return None if blob is None else np.frombuffer(blob, dtype="<f4")


class GraphMemoriesConsolidated(Event):
    """A consolidation batch moved these staged memories into the consolidated graph."""

    kind: ClassVar[str] = "graph_memories_consolidated"
    schema_version: ClassVar[int] = 1

    batch_id: str = Field(min_length=1)
    memory_ids: tuple[str, ...] = Field(min_length=1)
    consolidator: str = Field(default="rules-v1", min_length=1)


class GraphNodesMerged(Event):
    """Near-duplicate nodes merged into ``kept_node_id``; undone by a :class:`GraphNodesUnmerged` naming ``merge_id``."""

    kind: ClassVar[str] = "graph_nodes_merged"
    schema_version: ClassVar[int] = 1

    merge_id: str = Field(min_length=1)
    kept_node_id: str = Field(min_length=1)
    merged_node_ids: tuple[str, ...] = Field(min_length=1)
    similarity: float = Field(ge=-1.0, le=1.0)
    reason: str = Field(min_length=1)
    decided_by: str = Field(default="rules-v1", min_length=1)

    @model_validator(mode="after")
    def _distinct(self) -> GraphNodesMerged:
        if self.kept_node_id in self.merged_node_ids:
            raise ValueError("the kept node cannot also be a merged node")
        return self


class GraphNodesUnmerged(Event):
    """A merge was undone: its merged nodes stand on their own again."""

    kind: ClassVar[str] = "graph_nodes_unmerged"
    schema_version: ClassVar[int] = 1

    merge_id: str = Field(min_length=1)
    reason: str = Field(min_length=1)


class GraphEdgeLinked(Event):
    """A relation between two memories (or nodes); the event id is the edge id.

    ``relation_type`` is the seed's edge type (``causality``, ``reference``, …);
    ``relation`` is its name ("caused", "because", "related", "close_in_time").
    """

    kind: ClassVar[str] = "graph_edge_linked"
    schema_version: ClassVar[int] = 2  # v2: llm_call_id

    source_id: str = Field(min_length=1)
    target_id: str = Field(min_length=1)
    source_kind: EndpointKind = "memory"
    target_kind: EndpointKind = "memory"
    relation_type: EdgeType
    relation: str = Field(min_length=1)
    importance: float = Field(default=0.6, ge=0.0, le=1.0)
    occurred_at: AwareDatetime
    reason: str = Field(min_length=1)
    discovered_by: str = Field(min_length=1)  # "tool:link_memories", "consolidate:rules-v1", "consolidate:llm:<model>"
    llm_call_id: str | None = None  # the llm_call_recorded event that confirmed it, if a model did

    @model_validator(mode="after")
    def _no_loop(self) -> GraphEdgeLinked:
        if (self.source_kind, self.source_id) == (self.target_kind, self.target_id):
            raise ValueError("an edge must join two different endpoints")
        return self

    def occurred(self, recorded_at: datetime) -> datetime:
        return self.occurred_at


class GraphMemoryStatusChanged(Event):
    """A memory became active, archived or superseded (by ``superseded_by``)."""

    kind: ClassVar[str] = "graph_memory_status_changed"
    schema_version: ClassVar[int] = 1

    memory_id: str = Field(min_length=1)
    status: MemoryStatus
    reason: str = Field(min_length=1)
    superseded_by: str | None = None

    @model_validator(mode="after")
    def _supersession(self) -> GraphMemoryStatusChanged:
        if self.superseded_by is not None and self.status != "superseded":
            raise ValueError("superseded_by only goes with status 'superseded'")
        return self


class GraphConclusionRecorded(Event):
    """A long-term conclusion abstracted from a dense cluster of episodic memories.

    ``cluster_key`` names the cluster (subject and topic nodes); a new version
    for the same key supersedes the previous conclusion (``supersedes``).
    """

    kind: ClassVar[str] = "graph_conclusion_recorded"
    schema_version: ClassVar[int] = 1

    conclusion_id: str = Field(min_length=1)
    cluster_key: str = Field(min_length=1)
    statement: str = Field(min_length=1)
    conditions: tuple[str, ...] = ()
    confidence: float = Field(ge=0.0, le=1.0)
    source_memory_ids: tuple[str, ...] = Field(min_length=1)
    version: int = Field(ge=1)
    supersedes: str | None = None
    abstractor: str = Field(default="rules-v1", min_length=1)

    @model_validator(mode="after")
    def _versioning(self) -> GraphConclusionRecorded:
        if (self.version == 1) != (self.supersedes is None):
            raise ValueError("version 1 supersedes nothing; every later version names the conclusion it supersedes")
        return self


class GraphProposalRejected(Event):
    """A language model's proposal that was not applied: what was proposed, by which call, and why not.

    ``proposed`` names the proposal's kind (``create_memory``, ``causal_link``);
    ``proposal`` is its JSON as given (cut to a bounded length). No projection
    folds it: it is the audit trail of a decision not taken.
    """

    kind: ClassVar[str] = "graph_proposal_rejected"
    schema_version: ClassVar[int] = 1

    llm_call_id: str = Field(min_length=1)
    proposed: str = Field(min_length=1)
    proposal: str
    reason: str = Field(min_length=1)
    decider: str = Field(min_length=1)  # "llm:<model>"
    source_message_ids: tuple[str, ...] = ()


GRAPH_EVENT_TYPES: dict[str, type[Event]] = {
    cls.kind: cls
    for cls in (
        GraphMemoryStaged,
        GraphLabelsEmbedded,
        GraphMemoriesConsolidated,
        GraphNodesMerged,
        GraphNodesUnmerged,
        GraphEdgeLinked,
        GraphMemoryStatusChanged,
        GraphConclusionRecorded,
        GraphProposalRejected,
    )
}
