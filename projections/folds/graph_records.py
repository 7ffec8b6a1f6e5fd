"""The records of the memory graph (:mod:`projections.folds.graph`): nodes, edges, memories, merges,
conclusions, and the merged view. All immutable; the fold replaces them, never changes them."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np


def normalise_label(label: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", label).casefold().split())


def node_id(node_type: str, label: str) -> str:
    """The deterministic id of the node of this type and label."""
    return f"{node_type}:{normalise_label(label)}"


@dataclass(frozen=True, slots=True)
class GraphNode:
    node_id: str
    node_type: str
    label: str  # as first written
    seq: int  # first mention
    vector: np.ndarray | None = field(default=None, compare=False)
    memory_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class GraphEdge:
    edge_id: str
    source_id: str
    target_id: str
    source_kind: str  # "node" or "memory"
    target_kind: str
    edge_type: str
    relation: str
    importance: float
    occurred_at: datetime
    memory_id: str | None  # the memory the edge belongs to or starts from
    origin: str  # "structure" (part of a staged memory) or "linked"
    discovered_by: str
    seq: int


@dataclass(frozen=True, slots=True)
class GraphMemory:
    memory_id: str
    seq: int
    subject: str
    memory_type: str
    topic: str
    object: str | None
    attributes: tuple[tuple[str, str], ...]
    importance: float
    created_at: datetime
    subject_node: str
    topic_node: str
    object_node: str | None
    node_ids: tuple[str, ...]  # raw ids, as staged; resolve before use
    edge_ids: tuple[str, ...]
    extractor: str
    source_turn_ids: tuple[str, ...] = ()
    source_message_ids: tuple[str, ...] = ()
    status: str = "active"
    superseded_by: str | None = None
    consolidated: bool = False
    batch_id: str | None = None
    access_count: int = 0
    last_accessed: datetime | None = None

    @property
    def staged(self) -> bool:
        return not self.consolidated


@dataclass(frozen=True, slots=True)
class MergeRecord:
    merge_id: str
    seq: int
    kept_node_id: str
    applied: tuple[str, ...]  # the canonical nodes this merge aliased to the kept node
    similarity: float
    reason: str
    undone: bool = False
    undo_reason: str | None = None


@dataclass(frozen=True, slots=True)
class GraphConclusion:
    conclusion_id: str
    seq: int
    cluster_key: str
    statement: str
    conditions: tuple[str, ...]
    confidence: float
    source_memory_ids: tuple[str, ...]
    version: int
    supersedes: str | None
    recorded_at: datetime
    superseded_by: str | None = None


@dataclass(frozen=True, slots=True)
class ViewNode:
    """A canonical node: its own record plus every memory of the nodes merged into it."""

    node_id: str
    node_type: str
    label: str
    vector: np.ndarray | None
    memory_ids: tuple[str, ...]
    merged_ids: tuple[str, ...]


@dataclass(frozen=True)
class GraphView:
    """The graph with merges applied: canonical nodes, memories' resolved nodes, edges with resolved endpoints."""

    nodes: dict[str, ViewNode]
    canonical_of: dict[str, str]
    memory_nodes: dict[str, tuple[str, ...]]
    edges: tuple[GraphEdge, ...]  # endpoints resolved; edges to unknown endpoints left out
    adjacency: dict[str, frozenset[str]]  # node → neighbouring nodes over any node-to-node edge
