"""Graph consolidation (seed 001 §5.1, §12.4; seed 003 §3) as pure decisions: state in, events out.

Nothing here writes: each function reads a :class:`GraphState` and returns
the events that would change it; the shard appends them to the log and the
fold applies them. Running a decision again on the state that already holds
its events returns nothing.

- :func:`dedup_nodes`: topic/object nodes with cosine similarity
  ``> merge_above`` (0.95) merge whatever their types; in
  ``(candidate_above, merge_above]`` (0.85–0.95) they merge only if their
  types match and the Jaccard index of their neighbourhoods (adjacent
  subject/topic/object nodes, the pair itself left out) is at least
  ``neighbourhood_jaccard``. The node first seen is kept. A pair whose merge
  was undone is never proposed again. Merges are reversible
  (``graph_nodes_unmerged``).
- :func:`discover_relations`: a new memory is linked (``reference``) to its
  neighbours in time among the same subject's active memories when they lie
  within ``temporal_window_seconds`` (``close_in_time``), and to every active
  memory sharing a topic or object node (``related``; at most
  ``shared_link_limit`` per node, the closest in time). No causality is
  inferred: causal edges come from the ``link_memories`` tool.
- :func:`abstract_conclusions`: consolidated active ``event`` memories with the
  same subject and topic node form a cluster; one with at least
  ``abstraction_min_members`` members yields a conclusion (statement,
  conditions = attributes shared by at least ``condition_support`` of the
  members, confidence = n / (n + prior) × agreement on the object, sources,
  version). When the cluster's sources change, a new version supersedes the
  current conclusion.
- :func:`decay_updates`: seed §5.3's decay, importance · e^(−λ·days) · (1 + ln(1 + accesses)),
  with λ by memory type; consolidated memories below ``archive_below`` at ``now``
  are archived. Decay itself is never stored: it is a function of ``now``.

:func:`consolidate` runs them in that order on one batch of staged memories,
each step seeing the previous steps' events (applied to a scratch copy),
after the conflict check against the notes
(:func:`projections.decisions.graph_conflicts.note_conflicts`), so no new link or
conclusion rests on a memory the notes have withdrawn.
Event ids come from ``new_id(key)``, where ``key`` names the decision
(``<batch digest>/merge/<kept>/<merged>`` …), never from a counter or a clock.

Parallel safety: every function reads only the state it is given, which is
one user's graph, and never mutates it; ids depend only on that user's
decisions. So consolidating disjoint users' batches concurrently yields the
same events, user by user, as consolidating them one after the other.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Callable, Collection
from dataclasses import dataclass, replace
from datetime import datetime

import numpy as np

from events.errors import InvalidInputError
from events.graph_events import (
    GraphConclusionRecorded,
    GraphEdgeLinked,
    GraphMemoriesConsolidated,
    GraphMemoryStatusChanged,
    GraphNodesMerged,
)
from events.model import Event
from projections.adapters.embedding import E5_ID
from projections.decisions.graph_conflicts import note_conflicts
from projections.folds.graph import GraphMemory, GraphState, GraphView, apply
from projections.folds.notes import NoteState

NewId = Callable[[str], str]


@dataclass(frozen=True, slots=True)
class ConsolidationConfig:
    merge_above: float = 0.95
    candidate_above: float = 0.85
    neighbourhood_jaccard: float = 0.5
    dedup_node_types: tuple[str, ...] = ("topic", "object")
    neighbourhood_node_types: tuple[str, ...] = ("subject", "topic", "object")
    temporal_window_seconds: float = 3600.0  # seed §12.4.3: one hour
    temporal_importance: float = 0.3
    shared_node_types: tuple[str, ...] = ("topic", "object")  # subjects and attribute keys are hubs, not relations
    shared_importance: float = 0.4
    shared_link_limit: int = 10  # per memory and node: the closest in time, so a popular topic is no hub of links
    abstraction_memory_types: tuple[str, ...] = ("event",)
    abstraction_min_members: int = 3
    confidence_prior: float = 2.0
    condition_support: float = 0.5
    decay_rates: tuple[tuple[str, float], ...] = (("event", 0.05), ("fact", 0.01), ("relation", 0.005), ("opinion", 0.03))
    archive_below: float = 0.05
    consolidator: str = "rules-v1"

    def __post_init__(self) -> None:
        checks = [
            ("merge_above", -1.0 <= self.candidate_above <= self.merge_above <= 1.0, "-1 <= candidate_above <= merge_above <= 1"),
            ("neighbourhood_jaccard", 0.0 <= self.neighbourhood_jaccard <= 1.0, "a Jaccard index in [0, 1]"),
            ("temporal_window_seconds", self.temporal_window_seconds >= 0, "a non-negative number of seconds"),
            ("shared_link_limit", self.shared_link_limit >= 0, "a non-negative number of links"),
            ("abstraction_min_members", self.abstraction_min_members >= 2, "at least 2 memories"),
            ("confidence_prior", self.confidence_prior >= 0, "a non-negative pseudo-count"),
            ("condition_support", 0.0 < self.condition_support <= 1.0, "a share in (0, 1]"),
        ]
        problems = [(name, f"{getattr(self, name)!r}: use {want}") for name, ok, want in checks if not ok]
        if problems:
            raise InvalidInputError(problems, what="consolidation config")


DEFAULT_CONSOLIDATION = ConsolidationConfig()
# The node-merge thresholds on another encoder's cosine scale: the same upper quantiles of the label-pair cosines
# of the LoCoMo dev labels as MiniLM's 0.85 / 0.95 (``python -m benchmarks.similarity_scale``); e5's cosines of
# unrelated short labels sit around 0.84, where MiniLM's sit around 0.19.
_MERGE_THRESHOLDS = {E5_ID: (0.967, 0.982)}


def consolidation_for(model_id: str) -> ConsolidationConfig:
    """The consolidation of a store whose label vectors ``model_id`` made (the default for MiniLM and any encoder
    not measured)."""
    thresholds = _MERGE_THRESHOLDS.get(model_id)
    if thresholds is None:
        return DEFAULT_CONSOLIDATION
    return replace(DEFAULT_CONSOLIDATION, candidate_above=thresholds[0], merge_above=thresholds[1])


def _same(key: str) -> str:
    return key


def _unit(v: np.ndarray) -> np.ndarray:
    v = v.astype(np.float64)
    norm = np.linalg.norm(v)
    return v / norm if norm > 0 else v


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


def _dedup(state: GraphState, view: GraphView, config: ConsolidationConfig, focus_ids: Collection[str] | None,
           new_id: NewId) -> list[GraphNodesMerged]:
    nodes = {nid: n for nid, n in view.nodes.items() if n.node_type in config.dedup_node_types and n.vector is not None}
    focus = sorted(nodes if focus_ids is None else {view.canonical_of.get(n, n) for n in focus_ids} & nodes.keys())
    units = {nid: _unit(n.vector) for nid, n in nodes.items()}
    blocked = state.blocked_pairs()

    def nbhd(a: str, b: str) -> set[str]:
        return {x for x in view.adjacency[a] if x != b and view.nodes[x].node_type in config.neighbourhood_node_types}

    pairs, seen = [], set()
    for a in focus:
        for b in sorted(nodes):
            pair = frozenset((a, b))
            if a == b or pair in seen or pair in blocked or units[a].shape != units[b].shape:
                continue
            seen.add(pair)
            sim = float(units[a] @ units[b])
            if sim > config.merge_above:
                reason = f"cosine {sim:.4f} > {config.merge_above:g}"
            elif sim > config.candidate_above and nodes[a].node_type == nodes[b].node_type:
                j = _jaccard(nbhd(a, b), nbhd(b, a))
                if j < config.neighbourhood_jaccard:
                    continue
                reason = (f"cosine {sim:.4f} in ({config.candidate_above:g}, {config.merge_above:g}], same type "
                          f"{nodes[a].node_type}, neighbourhood Jaccard {j:.3f} >= {config.neighbourhood_jaccard:g}")
            else:
                continue
            kept, gone = sorted((a, b), key=lambda n: (state.nodes[n].seq, n))
            pairs.append((-sim, kept, gone, sim, reason))
    out, kept_nodes, gone_nodes = [], set(), set()
    for _, kept, gone, sim, reason in sorted(pairs):
        if kept in gone_nodes or gone in gone_nodes or gone in kept_nodes:  # one merge per node per pass: no chains
            continue
        kept_nodes.add(kept)
        gone_nodes.add(gone)
        out.append(GraphNodesMerged(merge_id=new_id(f"merge/{kept}/{gone}"), kept_node_id=kept, merged_node_ids=(gone,),
                                    similarity=max(-1.0, min(1.0, sim)), reason=reason, decided_by=config.consolidator))
    return out


def dedup_nodes(state: GraphState, config: ConsolidationConfig = DEFAULT_CONSOLIDATION, *,
                node_ids: Collection[str] | None = None, new_id: NewId = _same) -> list[GraphNodesMerged]:
    """Merges of near-duplicate nodes; with ``node_ids``, only pairs involving those nodes (a batch's new nodes)."""
    return _dedup(state, state.view(), config, node_ids, new_id)


def _order(m: GraphMemory) -> tuple:
    return (m.created_at, m.seq, m.memory_id)


def discover_relations(state: GraphState, memory_ids: Collection[str],
                       config: ConsolidationConfig = DEFAULT_CONSOLIDATION) -> list[GraphEdgeLinked]:
    """Reference edges from the given memories to temporally close and node-sharing active memories."""
    view = state.view()
    active = sorted((m for m in state.memories.values() if m.status == "active"), key=_order)
    by_subject: dict[str, list[GraphMemory]] = {}
    for m in active:
        by_subject.setdefault(view.canonical_of[m.subject_node], []).append(m)
    linked = {(frozenset((e.source_id, e.target_id)), e.relation) for e in view.edges
              if e.origin == "linked" and e.source_kind == e.target_kind == "memory"}
    out: list[GraphEdgeLinked] = []

    def add(a: GraphMemory, b: GraphMemory, relation: str, importance: float, reason: str) -> None:
        key = (frozenset((a.memory_id, b.memory_id)), relation)
        if key in linked:
            return
        linked.add(key)
        first, second = sorted((a, b), key=_order)
        out.append(GraphEdgeLinked(source_id=first.memory_id, target_id=second.memory_id, relation_type="reference",
                                   relation=relation, importance=importance, occurred_at=second.created_at,
                                   reason=reason, discovered_by=f"consolidate:{config.consolidator}"))

    batch = sorted((state.memories[m] for m in set(memory_ids)
                    if m in state.memories and state.memories[m].status == "active"), key=_order)
    for m in batch:
        peers = by_subject[view.canonical_of[m.subject_node]]
        i = peers.index(m)
        for other in [peers[j] for j in (i - 1, i + 1) if 0 <= j < len(peers)]:
            gap = abs((other.created_at - m.created_at).total_seconds())
            if gap <= config.temporal_window_seconds:
                add(m, other, "close_in_time", config.temporal_importance,
                    f"same subject, {gap:.0f} s apart (window {config.temporal_window_seconds:g} s)")
        for nid in view.memory_nodes[m.memory_id]:
            node = view.nodes[nid]
            if node.node_type not in config.shared_node_types:
                continue
            others = [state.memories[o] for o in node.memory_ids if o != m.memory_id]
            others = sorted((o for o in others if o.status == "active"),
                            key=lambda o: (abs((o.created_at - m.created_at).total_seconds()), _order(o)))
            for other in others[: config.shared_link_limit]:
                add(m, other, "related", config.shared_importance, f"share the {node.node_type} {node.label!r}")
    return out


def abstract_conclusions(state: GraphState, config: ConsolidationConfig = DEFAULT_CONSOLIDATION, *,
                         new_id: NewId = _same) -> list[GraphConclusionRecorded]:
    """A conclusion (or a new version of one) for every dense cluster whose sources changed."""
    view = state.view()
    clusters: dict[tuple[str, str], list[GraphMemory]] = {}
    for m in sorted(state.memories.values(), key=_order):
        if m.status == "active" and m.consolidated and m.memory_type in config.abstraction_memory_types:
            clusters.setdefault((view.canonical_of[m.subject_node], view.canonical_of[m.topic_node]), []).append(m)
    current = state.current_conclusions()
    out = []
    for (subject_id, topic_id), members in sorted(clusters.items()):
        key, n, sources = f"{subject_id}|{topic_id}", len(members), tuple(m.memory_id for m in members)
        previous = current.get(key)
        if n < config.abstraction_min_members or (previous is not None and set(previous.source_memory_ids) == set(sources)):
            continue
        subject, topic = view.nodes[subject_id].label, view.nodes[topic_id].label
        objects = Counter(view.nodes[view.canonical_of[m.object_node]].label for m in members if m.object_node)
        top, top_count = objects.most_common(1)[0] if objects else (None, 0)
        agreement = top_count / n if objects else 1.0
        attrs = Counter(pair for m in members for pair in m.attributes)
        conditions = tuple(f"{k} = {v}" for (k, v), c in sorted(attrs.items()) if c / n >= config.condition_support)
        what = f"{subject} · {topic}" + (f" · {top}" if top is not None and agreement >= config.condition_support else "")
        span = f"{members[0].created_at:%Y-%m-%d} to {members[-1].created_at:%Y-%m-%d}"
        version = previous.version + 1 if previous else 1
        out.append(GraphConclusionRecorded(
            conclusion_id=new_id(f"conclusion/{key}/v{version}"), cluster_key=key,
            statement=f"{what} (recurring: {n} events, {span})", conditions=conditions,
            confidence=round(n / (n + config.confidence_prior) * agreement, 6), source_memory_ids=sources,
            version=version, supersedes=previous.conclusion_id if previous else None, abstractor=config.consolidator))
    return out


def decay_value(memory: GraphMemory, now: datetime, config: ConsolidationConfig = DEFAULT_CONSOLIDATION) -> float:
    """Seed §5.3: importance · e^(−λ·days since creation) · (1 + ln(1 + access count)), λ by memory type."""
    days = max(0.0, (now - memory.created_at).total_seconds() / 86_400.0)
    rate = dict(config.decay_rates).get(memory.memory_type, 0.05)
    return memory.importance * math.exp(-rate * days) * (1.0 + math.log1p(memory.access_count))


def decay_updates(state: GraphState, now: datetime, config: ConsolidationConfig = DEFAULT_CONSOLIDATION
                  ) -> list[GraphMemoryStatusChanged]:
    """Archive consolidated active memories whose decayed importance at ``now`` fell below ``archive_below``."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware (e.g. datetime.now(UTC)); naive times are ambiguous")
    out = []
    for m in sorted(state.memories.values(), key=_order):
        value = decay_value(m, now, config)
        if m.status == "active" and m.consolidated and value < config.archive_below:
            out.append(GraphMemoryStatusChanged(memory_id=m.memory_id, status="archived",
                                                reason=f"decayed importance {value:.4g} < {config.archive_below:g}"))
    return out


def _edge_key(e: GraphEdgeLinked) -> str:
    return f"link/{e.source_id}/{e.target_id}/{e.relation}"


def consolidate(state: GraphState, staged_ids: Collection[str], config: ConsolidationConfig = DEFAULT_CONSOLIDATION,
                new_id: NewId = _same, *, now: datetime | None = None,
                notes: NoteState | None = None) -> list[tuple[str, Event]]:
    """(event id, event) pairs consolidating the staged memories among ``staged_ids``.

    Steps: with ``notes`` (the user's :class:`NoteState`, or its
    :func:`~projections.decisions.graph_conflicts.note_evidence`), mark the active
    memories that rest on superseded or deleted notes ``superseded``; then
    de-duplicate the batch's nodes, discover relations, mark the batch
    consolidated, abstract conclusions; and, with ``now``, archive the memories
    decayed at ``now``. The note check and decay read the whole graph, so they
    run even when nothing is staged; with nothing staged, no ``notes`` and no
    ``now``, the result is []. Every step decides nothing twice: run again on
    the state that holds its events, it returns [].

    ``new_id`` receives ``"<batch digest>/<decision>"`` (with nothing staged, the
    digest of the state's last seq); a shard passes e.g.
    ``lambda key: str(uuid5(NAMESPACE, f"{tenant}/{user}/{key}"))``.
    """
    batch = sorted((mid for mid in set(staged_ids) if mid in state.memories and state.memories[mid].staged),
                   key=lambda mid: state.memories[mid].seq)
    if not batch and notes is None and now is None:
        return []
    digest = hashlib.sha256(("\n".join(batch) if batch else f"@{state.last_seq}").encode()).hexdigest()[:16]

    def ids(key: str) -> str:
        return new_id(f"{digest}/{key}")

    scratch, out = state.copy(), []
    at = max((state.memories[mid].created_at for mid in batch), default=now)

    def emit(event_id: str, event: Event) -> None:
        out.append((event_id, event))
        apply(scratch, event_id, event, scratch.last_seq + 1, at)

    if notes is not None:
        for change in note_conflicts(scratch, notes):
            emit(ids(f"supersede/{change.memory_id}"), change)
    if batch:
        batch_nodes = {n for mid in batch for n in state.memories[mid].node_ids}
        for merge in _dedup(scratch, scratch.view(), config, batch_nodes, ids):
            emit(merge.merge_id, merge)
        for link in discover_relations(scratch, batch, config):
            emit(ids(_edge_key(link)), link)
        batch_id = ids("batch")
        emit(batch_id, GraphMemoriesConsolidated(batch_id=batch_id, memory_ids=tuple(batch),
                                                 consolidator=config.consolidator))
        for conclusion in abstract_conclusions(scratch, config, new_id=ids):
            emit(conclusion.conclusion_id, conclusion)
    if now is not None:
        for change in decay_updates(scratch, now, config):
            emit(ids(f"archive/{change.memory_id}"), change)
    return out
