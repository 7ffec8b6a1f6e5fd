"""Memory-graph deciders: staging (``create_memory``), links (``link_memories``), the events of a
consolidation task, and undoing a merge. None of them calls for follow-ups (tiers and profile read messages
and touches, not the graph)."""

from __future__ import annotations

from dataclasses import asdict

import numpy as np

from actors.commands import ApplyConsolidation, LinkMemories, RecordLabelVectors, StageGraphMemories, Unmerge
from actors.decide_reembed import user_model
from actors.decision import Decision, Deps, new_event_id
from events.envelope import PendingEvent
from events.errors import InvalidInputError
from events.graph_events import (GraphEdgeLinked, GraphLabelsEmbedded, GraphMemoryStatusChanged, GraphNodesUnmerged,
                                 GraphProposalRejected)
from events.model import Event, LlmCallRecorded
from projections.folds.graph import GraphState
from projections.folds.state import ShardState
from projections.queries import graph_search

_RECORDS = (LlmCallRecorded, GraphProposalRejected)  # what a model's check leaves besides its decisions


def decide_stage(state: ShardState, cmd: StageGraphMemories, deps: Deps) -> Decision:
    """Stage memories in the user's graph; the outcome is their ids."""
    pending = [PendingEvent(cmd.tenant, cmd.user_id, new_event_id(), event) for event in cmd.memories]
    return Decision(pending, [p.event_id for p in pending], react=False)


def decide_label_vectors(state: ShardState, cmd: RecordLabelVectors, deps: Deps) -> Decision:
    """One ``graph_labels_embedded`` event with the vectors of the labels the user's graph still lacks (none
    when another call recorded them first); the outcome is how many labels were recorded."""
    vectors = np.asarray(cmd.vectors)
    problems = []
    memory = state.user(cmd.tenant, cmd.user_id)
    expected = user_model(memory, deps)
    if cmd.model_id != expected:
        problems.append(("model_id", f"{cmd.model_id!r} differs from {expected!r}, the model the user is searched "
                                     "by; embed with the store's model"))
    if vectors.shape != (len(cmd.labels), deps.dim):
        problems.append(("vectors", f"shape {vectors.shape}, expected ({len(cmd.labels)}, {deps.dim}): a row per label"))
    if problems:
        raise InvalidInputError(problems, what="record label vectors")
    wanted = set(memory.graph.unembedded_labels()) if memory else set()
    fresh = {label: np.asarray(v, dtype="<f4").tobytes() for label, v in zip(cmd.labels, vectors) if label in wanted}
    if not fresh:
        return Decision([], 0, react=False)
    event = GraphLabelsEmbedded(dim=deps.dim, vectors=fresh, model_id=cmd.model_id)
    return Decision([PendingEvent(cmd.tenant, cmd.user_id, new_event_id(), event)], len(fresh), react=False)


def decide_link(state: ShardState, cmd: LinkMemories, deps: Deps) -> Decision:
    """Link the memories best matching two descriptions (their vectors) with a typed edge."""
    memory = state.user(cmd.tenant, cmd.user_id)
    ends = []
    for name, vector in (("source_memory_description", cmd.source_vector),
                         ("target_memory_description", cmd.target_vector)):
        hits = graph_search.search_graph(memory.graph, vector, now=cmd.now, depth=0, max_results=1) if memory else []
        if not hits:
            raise InvalidInputError([(name, "matches no memory of this user; create it first")], what="link_memories")
        ends.append(hits[0])
    if ends[0].memory_id == ends[1].memory_id:
        raise InvalidInputError([("target_memory_description", "matches the same memory as the source")],
                                what="link_memories")
    event = GraphEdgeLinked(source_id=ends[0].memory_id, target_id=ends[1].memory_id, relation_type=cmd.relation_type,
                            relation=cmd.relation, importance=cmd.importance, occurred_at=cmd.now, reason=cmd.reason,
                            discovered_by="tool:link_memories")
    edge_id = new_event_id()
    return Decision([PendingEvent(cmd.tenant, cmd.user_id, edge_id, event)],
                    {"edge_id": edge_id, "source": asdict(ends[0]), "target": asdict(ends[1])}, react=False)


def _applied(state: GraphState, event: Event) -> bool:
    """A status change the memory already has (another round that decided it first)."""
    if not isinstance(event, GraphMemoryStatusChanged):
        return False
    m = state.memories.get(event.memory_id)
    return m is not None and m.status == event.status


def decide_consolidation(state: ShardState, cmd: ApplyConsolidation, deps: Deps) -> Decision:
    """The events of a consolidation task not already in the log; the outcome is how many are new.

    Keyed ids let a rerun of the task find its merges, links, batch and
    conclusions present; a status change the memory already has is dropped; a
    model's call record and rejected proposals are kept only beside a new decision.
    """
    memory = state.user(cmd.tenant, cmd.user_id)
    graph = memory.graph if memory else GraphState()
    known = set(graph.merges) | set(graph.edges) | set(graph.conclusions)
    known |= {m.batch_id for m in graph.memories.values() if m.batch_id}
    fresh = [(i, e) for i, e in cmd.events if i not in known and not _applied(graph, e)]
    if all(isinstance(e, _RECORDS) for _, e in fresh):
        fresh = []
    return Decision([PendingEvent(cmd.tenant, cmd.user_id, i, e) for i, e in fresh], len(fresh), react=False)


def decide_unmerge(state: ShardState, cmd: Unmerge, deps: Deps) -> Decision:
    """Undo a merge with a ``graph_nodes_unmerged`` event: its nodes stand on their own again, and
    de-duplication will not merge that pair again."""
    memory = state.user(cmd.tenant, cmd.user_id)
    record = memory.graph.merges.get(cmd.merge_id) if memory is not None else None
    problems = []
    if record is None:
        problems.append(("merge_id", f"{cmd.merge_id!r}: no merge of {cmd.tenant}/{cmd.user_id} has this id; "
                                     "list them with `palimpsest merges`"))
    elif record.undone:
        problems.append(("merge_id", f"{cmd.merge_id!r} was already undone ({record.undo_reason}); nothing to restore"))
    if not cmd.reason.strip():
        problems.append(("reason", "empty; say why the merge is undone (it is kept in the log)"))
    if problems:
        raise InvalidInputError(problems, what="unmerge")
    event_id = new_event_id()
    event = GraphNodesUnmerged(merge_id=cmd.merge_id, reason=cmd.reason)
    return Decision([PendingEvent(cmd.tenant, cmd.user_id, event_id, event)],
                    {"event_id": event_id, "merge_id": cmd.merge_id, "kept_node": record.kept_node_id,
                     "restored_nodes": list(record.applied)}, react=False)
