"""Memory-graph projection (seed 001 §3): nodes, edges and memories as a fold over graph events.

Model

- A **node** is a thing: ``subject``, ``topic``, ``object``, ``attribute`` or
  ``value``. Its id is deterministic, ``"<type>:<normalised label>"``
  (:func:`node_id`: NFKC, case-folded, whitespace collapsed), so every memory
  that mentions "Rice" as an object shares the node ``object:rice``. Topic and
  object nodes carry the first vector recorded for them: with a staged memory,
  or later for its label (``graph_labels_embedded``).
- An **edge** is typed (``memory_type``, ``core_relation``, ``attribute``,
  ``causality``, ``reference``) with a relation name, importance, time and
  source memory. A staged memory contributes its structural edges, with ids
  ``<memory>/type``, ``<memory>/core``, ``<memory>/attr/<key>``, ``<memory>/value/<key>``::

      subject ─memory_type(<memory type>)▶ topic ─core_relation(<name>)▶ object
      (object, else topic) ─attribute(has)▶ attribute(<key>) ─attribute(<key>)▶ value

  Linked edges (``graph_edge_linked``; id = event id) join memories or nodes.
- A **memory** is the subgraph of one ``create_memory`` call, with its type,
  importance, creation time, access count and last access (from
  ``memory_touched`` events naming it), status, staged/consolidated flag and
  provenance (source turn and message ids).

Merges never rewrite nodes or memories. A merge adds an alias from each
merged node (resolved to its canonical node at that time) to the kept node;
readers resolve ids through :meth:`GraphState.resolve` or read the resolved
:class:`GraphView`. An unmerge removes exactly the aliases its merge added, so
the state equals that of the same log without the merge and the unmerge, apart
from the merge history (:meth:`GraphState.canonical` with ``history=False``).
An undone pair is remembered so de-duplication does not propose it again.

One state holds one user's graph: fold only that (tenant, user) stream into it.
Like the other projections, ``evolve`` updates the state's dicts in place and
returns the state; the records themselves are immutable. No clock, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np

from events.envelope import Envelope
from events.graph_events import (
    GraphConclusionRecorded,
    GraphEdgeLinked,
    GraphLabelsEmbedded,
    GraphMemoriesConsolidated,
    GraphMemoryStaged,
    GraphMemoryStatusChanged,
    GraphNodesMerged,
    GraphNodesUnmerged,
)
from events.model import EmbedderSwitched, Event, MemoryTouched
from projections.folds import graph_models
from projections.folds.graph_records import (  # noqa: F401 - the records are part of this module's interface
    GraphConclusion,
    GraphEdge,
    GraphMemory,
    GraphNode,
    GraphView,
    MergeRecord,
    ViewNode,
    node_id,
    normalise_label,
)


@dataclass
class GraphState:
    nodes: dict[str, GraphNode] = field(default_factory=dict)
    memories: dict[str, GraphMemory] = field(default_factory=dict)
    edges: dict[str, GraphEdge] = field(default_factory=dict)
    conclusions: dict[str, GraphConclusion] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)  # merged node → kept node, active merges only
    merges: dict[str, MergeRecord] = field(default_factory=dict)
    last_seq: int = 0
    structure: int = 0  # counts the events that changed nodes, edges or merges (touches do not)
    # Label vectors of other encoders (projections.folds.graph_models): model → node id → vector; and the model
    # the nodes' vectors are of since the user's last switch ("" before any).
    held: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    vector_model: str = ""
    _views: dict = field(default_factory=dict, repr=False, compare=False)  # derived: structure → GraphView

    def view(self) -> GraphView:
        """The merged view, cached until the structure changes: a search reads it on every query."""
        cached = self._views.get("view")
        if cached is None or cached[0] != self.structure:
            cached = self._views["view"] = (self.structure, self._build_view())
        return cached[1]

    def copy(self) -> GraphState:
        """A copy to evolve separately; cheap, because the records are immutable and only the dicts are copied."""
        return GraphState(dict(self.nodes), dict(self.memories), dict(self.edges), dict(self.conclusions),
                          dict(self.aliases), dict(self.merges), self.last_seq, self.structure,
                          {m: dict(v) for m, v in self.held.items()}, self.vector_model)

    def resolve(self, nid: str) -> str:
        while nid in self.aliases:
            nid = self.aliases[nid]
        return nid

    def blocked_pairs(self) -> frozenset[frozenset[str]]:
        """Node pairs whose merge was undone: de-duplication must not merge them again."""
        return frozenset(frozenset((c, r.kept_node_id)) for r in self.merges.values() if r.undone for c in r.applied)

    def current_conclusions(self) -> dict[str, GraphConclusion]:
        """cluster key → its latest conclusion (the one nothing supersedes)."""
        out = {c.cluster_key: c for c in sorted(self.conclusions.values(), key=lambda c: c.seq) if not c.superseded_by}
        return dict(sorted(out.items()))

    def unembedded_labels(self) -> list[str]:
        """The labels of the topic and object nodes with no vector yet, first mention first (embedded in one pass by
        the driver's labels' reactor after the write; until then a graph read brings vectors of its own for them)."""
        return list(dict.fromkeys(n.label for n in sorted(self.nodes.values(), key=lambda n: n.seq)
                                  if n.vector is None and n.node_type in ("topic", "object")))

    def node_matrix(self, dim: int) -> tuple[list[str], np.ndarray]:
        """Canonical node ids with a ``dim``-sized vector, and those vectors L2-normalised (cached like the view)."""
        key = ("matrix", dim)
        cached = self._views.get(key)
        if cached is None or cached[0] != self.structure:
            view = self.view()
            ids = [nid for nid, n in view.nodes.items() if n.vector is not None and n.vector.shape == (dim,)]
            mat = np.stack([view.nodes[nid].vector for nid in ids]).astype(np.float32) if ids else np.zeros((0, dim),
                                                                                                          np.float32)
            norms = np.linalg.norm(mat, axis=1, keepdims=True)
            cached = self._views[key] = (self.structure, ids, np.divide(mat, norms, out=np.zeros_like(mat),
                                                                        where=norms > 0))
        return cached[1], cached[2]

    def _build_view(self) -> GraphView:
        canonical_of = {nid: self.resolve(nid) for nid in self.nodes}
        groups: dict[str, list[str]] = {}
        for nid in sorted(self.nodes, key=lambda n: (self.nodes[n].seq, n)):
            groups.setdefault(canonical_of[nid], []).append(nid)
        order = {mid: m.seq for mid, m in self.memories.items()}
        nodes: dict[str, ViewNode] = {}
        for cid, raw in groups.items():
            own = self.nodes[cid]
            vectors = [v for v in [own.vector, *(self.nodes[r].vector for r in raw)] if v is not None]
            members = {mid for r in raw for mid in self.nodes[r].memory_ids}
            nodes[cid] = ViewNode(cid, own.node_type, own.label, vectors[0] if vectors else None,
                                  tuple(sorted(members, key=lambda m: (order[m], m))), tuple(r for r in raw if r != cid))
        memory_nodes = {mid: tuple(dict.fromkeys(canonical_of[n] for n in m.node_ids)) for mid, m in self.memories.items()}
        edges, adjacency = [], {cid: set() for cid in nodes}
        for e in sorted(self.edges.values(), key=lambda e: (e.seq, e.edge_id)):
            ends = []
            for kind, eid in ((e.source_kind, e.source_id), (e.target_kind, e.target_id)):
                known = eid in canonical_of if kind == "node" else eid in self.memories
                ends.append(canonical_of[eid] if kind == "node" and known else eid if known else None)
            if None in ends:
                continue
            same = ends[0] == e.source_id and ends[1] == e.target_id  # unmerged endpoints: share the record
            edges.append(e if same else replace(e, source_id=ends[0], target_id=ends[1]))
            if e.source_kind == e.target_kind == "node" and ends[0] != ends[1]:
                adjacency[ends[0]].add(ends[1])
                adjacency[ends[1]].add(ends[0])
        return GraphView(nodes, canonical_of, memory_nodes, tuple(edges), {k: frozenset(v) for k, v in adjacency.items()})

    def canonical(self, history: bool = True) -> list:
        """A comparable form of the state; ``history=False`` leaves out the record of merges and unmerges."""
        def iso(t: datetime | None) -> str | None:
            return t.isoformat() if t else None

        out = [
            [(n.node_id, n.node_type, n.label, n.seq, None if n.vector is None else n.vector.tobytes(), n.memory_ids)
             for n in sorted(self.nodes.values(), key=lambda n: n.node_id)],
            [(m.memory_id, m.seq, m.subject, m.memory_type, m.topic, m.object, m.attributes, m.importance,
              iso(m.created_at), m.node_ids, m.edge_ids, m.extractor, m.source_turn_ids, m.source_message_ids,
              m.status, m.superseded_by, m.consolidated, m.batch_id, m.access_count, iso(m.last_accessed))
             for m in sorted(self.memories.values(), key=lambda m: (m.seq, m.memory_id))],
            [(e.edge_id, e.source_id, e.target_id, e.source_kind, e.target_kind, e.edge_type, e.relation, e.importance,
              iso(e.occurred_at), e.memory_id, e.origin, e.discovered_by, e.seq)
             for e in sorted(self.edges.values(), key=lambda e: (e.seq, e.edge_id))],
            [(c.conclusion_id, c.seq, c.cluster_key, c.statement, c.conditions, c.confidence, c.source_memory_ids,
              c.version, c.supersedes, iso(c.recorded_at), c.superseded_by)
             for c in sorted(self.conclusions.values(), key=lambda c: (c.seq, c.conclusion_id))],
            sorted(self.aliases.items()),
        ]
        if history:
            out.append([(r.merge_id, r.seq, r.kept_node_id, r.applied, r.similarity, r.reason, r.undone, r.undo_reason)
                        for r in sorted(self.merges.values(), key=lambda r: (r.seq, r.merge_id))])
        held = graph_models.canonical(self.held, self.vector_model)
        if held:  # only a user that re-embedded has any: the others keep the form they always had
            out.append(held)
        return out


def _add_node(state: GraphState, node_type: str, label: str, seq: int, memory_id: str,
              vector: np.ndarray | None = None) -> str:
    nid = node_id(node_type, label)
    node = state.nodes.get(nid) or GraphNode(nid, node_type, label, seq)
    if (node.vector is None and vector is not None) or memory_id not in node.memory_ids:
        # Positional, not dataclasses.replace: every staged memory adds three to seven nodes in a replay.
        node = GraphNode(nid, node.node_type, node.label, node.seq,
                         vector if node.vector is None else node.vector,  # the first recorded vector wins
                         node.memory_ids if memory_id in node.memory_ids else (*node.memory_ids, memory_id))
    state.nodes[nid] = node
    return nid


def _embed(state: GraphState, e: GraphLabelsEmbedded) -> None:
    """Every topic/object node of a label in ``e`` that has no vector yet takes the recorded one."""
    for label in e.vectors:
        for nid in (node_id("topic", label), node_id("object", label)):
            node = state.nodes.get(nid)
            if node is not None and node.vector is None:
                state.nodes[nid] = replace(node, vector=e.vector(label))


def _stage(state: GraphState, mid: str, e: GraphMemoryStaged, seq: int) -> None:
    edges: list[GraphEdge] = []

    def link(suffix: str, src: str, dst: str, edge_type: str, relation: str) -> None:
        edges.append(GraphEdge(f"{mid}/{suffix}", src, dst, "node", "node", edge_type, relation, e.importance,
                               e.occurred_at, mid, "structure", e.extractor, seq))

    subject = _add_node(state, "subject", e.subject, seq, mid)
    topic = _add_node(state, "topic", e.topic, seq, mid, e.vector(e.topic))
    obj = _add_node(state, "object", e.object, seq, mid, e.vector(e.object)) if e.object else None
    link("type", subject, topic, "memory_type", e.memory_type)
    if obj is not None:
        link("core", topic, obj, "core_relation", e.core_relation)
    nodes = [subject, topic, *([obj] if obj else [])]
    attributes = tuple(sorted(e.attributes.items()))
    for key, value in attributes:
        attr = _add_node(state, "attribute", key, seq, mid)
        val = _add_node(state, "value", value, seq, mid)
        link(f"attr/{key}", obj or topic, attr, "attribute", "has")
        link(f"value/{key}", attr, val, "attribute", key)
        nodes += [attr, val]
    for edge in edges:
        state.edges[edge.edge_id] = edge
    state.memories[mid] = GraphMemory(
        mid, seq, e.subject, e.memory_type, e.topic, e.object, attributes, e.importance, e.occurred_at, subject, topic,
        obj, tuple(dict.fromkeys(nodes)), tuple(x.edge_id for x in edges), e.extractor, e.source_turn_ids,
        e.source_message_ids,
    )


_STRUCTURAL = (GraphMemoryStaged, GraphLabelsEmbedded, GraphMemoriesConsolidated, GraphNodesMerged, GraphNodesUnmerged,
               GraphEdgeLinked, GraphMemoryStatusChanged, GraphConclusionRecorded, EmbedderSwitched)
HANDLES = (*_STRUCTURAL, MemoryTouched)  # what apply reads; the shard fold only calls advance for other events


def advance(state: GraphState, seq: int) -> None:
    """Every event of the stream moves ``last_seq``, even one the graph ignores: consolidation's ids derive from it."""
    state.last_seq = max(state.last_seq, seq)


def apply(state: GraphState, event_id: str, event: Event, seq: int, at: datetime) -> GraphState:
    """Apply one event (``at`` = when it occurred). :func:`evolve` calls this; consolidation uses it on a scratch copy."""
    advance(state, seq)
    if isinstance(event, _STRUCTURAL):
        state.structure += 1
    if isinstance(event, GraphMemoryStaged):
        if event_id not in state.memories:
            _stage(state, event_id, event, seq)
    elif isinstance(event, GraphLabelsEmbedded):
        if event.ahead:
            graph_models.hold_ahead(state.held, event)
        else:
            _embed(state, event)
    elif isinstance(event, EmbedderSwitched):
        state.vector_model = graph_models.switch(state.nodes, state.held, state.vector_model, event)
    elif isinstance(event, GraphMemoriesConsolidated):
        for mid in event.memory_ids:
            if mid in state.memories:
                state.memories[mid] = replace(state.memories[mid], consolidated=True, batch_id=event.batch_id)
    elif isinstance(event, GraphNodesMerged):
        if event.merge_id in state.merges or event.kept_node_id not in state.nodes:
            return state
        kept, applied = state.resolve(event.kept_node_id), []
        for nid in event.merged_node_ids:
            c = state.resolve(nid) if nid in state.nodes else kept
            if c != kept:
                state.aliases[c] = kept
                applied.append(c)
        state.merges[event.merge_id] = MergeRecord(event.merge_id, seq, kept, tuple(applied), event.similarity, event.reason)
    elif isinstance(event, GraphNodesUnmerged):
        record = state.merges.get(event.merge_id)
        if record is not None and not record.undone:
            for c in record.applied:
                if state.aliases.get(c) == record.kept_node_id:
                    del state.aliases[c]
            state.merges[event.merge_id] = replace(record, undone=True, undo_reason=event.reason)
    elif isinstance(event, GraphEdgeLinked):
        if event_id not in state.edges:
            state.edges[event_id] = GraphEdge(
                event_id, event.source_id, event.target_id, event.source_kind, event.target_kind, event.relation_type,
                event.relation, event.importance, event.occurred_at,
                event.source_id if event.source_kind == "memory" else None, "linked", event.discovered_by, seq)
    elif isinstance(event, GraphMemoryStatusChanged):
        if event.memory_id in state.memories:
            state.memories[event.memory_id] = replace(
                state.memories[event.memory_id], status=event.status, superseded_by=event.superseded_by)
    elif isinstance(event, GraphConclusionRecorded):
        if event.conclusion_id not in state.conclusions:
            state.conclusions[event.conclusion_id] = GraphConclusion(
                event.conclusion_id, seq, event.cluster_key, event.statement, event.conditions, event.confidence,
                event.source_memory_ids, event.version, event.supersedes, at)
            old = state.conclusions.get(event.supersedes or "")
            if old is not None:
                state.conclusions[old.conclusion_id] = replace(old, superseded_by=event.conclusion_id)
    elif isinstance(event, MemoryTouched):
        for mid in dict.fromkeys(event.memory_ids):  # one access per memory per query
            m = state.memories.get(mid)
            if m is not None:
                last = at if m.last_accessed is None else max(m.last_accessed, at)
                state.memories[mid] = replace(m, access_count=m.access_count + 1, last_accessed=last)
    return state


def evolve(state: GraphState, env: Envelope) -> GraphState:
    return apply(state, env.event_id, env.event, env.seq, env.occurred_at)


def fold(state: GraphState, envelopes: Iterable[Envelope]) -> GraphState:
    for env in envelopes:
        state = evolve(state, env)
    return state
