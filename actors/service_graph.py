"""The memory-graph commands and queries of a shard (a mixin of :class:`ShardService`): staging,
consolidation jobs and their results, graph-expanded search, links, export."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime

import numpy as np

from actors.consolidation import Job
from actors.deciders import decide_touches, new_event_id
from events.envelope import PendingEvent
from events.errors import InvalidInputError
from events.graph_events import (
    GraphEdgeLinked,
    GraphMemoryStaged,
    GraphMemoryStatusChanged,
    GraphNodesUnmerged,
    GraphProposalRejected,
)
from events.model import Event, LlmCallRecorded
from projections import graph_export, graph_search
from projections.graph import GraphState
from projections.graph_conflicts import note_evidence
from projections.state import UserMemory


def user_clock(memory: UserMemory) -> datetime | None:
    """The user's own "now": the time of their newest message; without messages, of their newest graph memory.

    Decay is measured on this clock by default, not the wall clock: a store of
    conversations imported from last year must not archive them all on import.
    Messages set it, not graph memories: a ``create_memory`` call is dated by
    its reference time (the wall clock unless given), which would drag an
    imported history into the present.
    """
    latest = max((m.occurred_at for m in memory.messages.by_id.values()), default=None)
    return latest or max((m.created_at for m in memory.graph.memories.values()), default=None)


_RECORDS = (LlmCallRecorded, GraphProposalRejected)  # what a model's check leaves besides its decisions


def _applied(state: GraphState, event: Event) -> bool:
    """A status change the memory already has (a retried append, or another round that decided it first)."""
    if not isinstance(event, GraphMemoryStatusChanged):
        return False
    m = state.memories.get(event.memory_id)
    return m is not None and m.status == event.status


class GraphMixin:
    def stage_graph(self, tenant: str, user_id: str, staged: list[GraphMemoryStaged]) -> list[str]:
        """Append memories to the graph's staging area (consolidation comes later); returns their ids."""
        pending = [PendingEvent(tenant, user_id, new_event_id(), event) for event in staged]
        self._commit(pending, followups=False)
        return [p.event_id for p in pending]

    def graph_jobs(self, tenant: str | None = None, user_id: str | None = None, *, decay: bool = True,
                   at: datetime | None = None, idle: bool = False) -> list[Job]:
        """The consolidation work: one :class:`Job` per user with staged memories (``idle``: with any graph memory).

        A job holds a copy of the user's graph, the staged ids, the user's note
        evidence (the conflict check reads it) and, with ``decay``, the time to
        measure decay at: ``at``, else the user's own clock (:func:`user_clock`).
        """
        jobs = []
        for (t, u), memory in sorted(self.state.users.items()):
            if (tenant and t != tenant) or (user_id and u != user_id):
                continue
            staged = [mid for mid, m in memory.graph.memories.items() if m.staged]
            if staged or (idle and memory.graph.memories):
                now = (at or user_clock(memory)) if decay else None
                jobs.append(Job(t, u, memory.graph.copy(), staged, note_evidence(memory.notes), now))
        return jobs

    def append_graph(self, tenant: str, user_id: str, events: list[tuple[str, Event]]) -> int:
        """Append the events a consolidation task returned; returns how many were new.

        Idempotent: keyed ids let a retried append find its merges, links, batch
        and conclusions present, and a status change the memory already has is dropped;
        a model's call record and rejected proposals are appended only beside a new decision.
        """
        memory = self.state.user(tenant, user_id)
        graph = memory.graph if memory else GraphState()
        known = set(graph.merges) | set(graph.edges) | set(graph.conclusions)
        known |= {m.batch_id for m in graph.memories.values() if m.batch_id}
        fresh = [(i, e) for i, e in events if i not in known and not _applied(graph, e)]
        if all(isinstance(e, _RECORDS) for _, e in fresh):
            fresh = []  # a model's call and rejections came with decisions already appended: a retried append
        if fresh:
            self._commit([PendingEvent(tenant, user_id, i, e) for i, e in fresh], followups=False)
        return len(fresh)

    def search_memories(self, tenant: str, user_id: str, query: str, query_vector: np.ndarray, now: datetime, *,
                        mode: str = "auto", expand_depth: int = 1, memory_types=None, time_range=None,
                        max_results: int = 10, relation_filter=None) -> dict:
        """Graph-expanded search (seed 001 ``search_memories``): vector seeds, BFS, five-term score, provenance.

        ``mode`` fast: seeds only; deep: expand to ``expand_depth``; auto: expand
        for causal/relational questions or when the best seed is a weak match.
        """
        memory = self.state.user(tenant, user_id)
        if memory is None:
            return {"depth": 0, "hits": []}
        depth, hits = graph_search.search(
            memory.graph, query, query_vector, now=now, mode=mode, expand_depth=expand_depth,
            relation_filter=relation_filter, memory_types=memory_types, time_range=time_range, max_results=max_results)
        if hits:
            self._commit(decide_touches(tenant, user_id, query, hits, "search_hit"), followups=False)
        return {"depth": depth, "hits": [asdict(h) for h in hits]}

    def link_memories(self, tenant: str, user_id: str, source: np.ndarray, target: np.ndarray, relation_type: str,
                      relation: str, importance: float, now: datetime, reason: str) -> dict:
        """Link the memories best matching two descriptions (their vectors) with a typed edge."""
        memory = self.state.user(tenant, user_id)
        ends = []
        for name, vector in (("source_memory_description", source), ("target_memory_description", target)):
            hits = graph_search.search_graph(memory.graph, vector, now=now, depth=0, max_results=1) if memory else []
            if not hits:
                raise InvalidInputError([(name, "matches no memory of this user; create it first")], what="link_memories")
            ends.append(hits[0])
        if ends[0].memory_id == ends[1].memory_id:
            raise InvalidInputError([("target_memory_description", "matches the same memory as the source")],
                                    what="link_memories")
        event = GraphEdgeLinked(source_id=ends[0].memory_id, target_id=ends[1].memory_id, relation_type=relation_type,
                                relation=relation, importance=importance, occurred_at=now, reason=reason,
                                discovered_by="tool:link_memories")
        [edge_id] = self.stage_graph(tenant, user_id, [event])
        return {"edge_id": edge_id, "source": asdict(ends[0]), "target": asdict(ends[1])}

    def graph_merges(self, tenant: str, user_id: str) -> list[dict]:
        """Every node merge of the user's graph, oldest first: what was kept, what was merged into it, why, undone."""
        memory = self.state.user(tenant, user_id)
        if memory is None:
            return []
        g = memory.graph
        return [{"merge_id": r.merge_id, "kept_node": r.kept_node_id, "kept_label": g.nodes[r.kept_node_id].label,
                 "merged_nodes": list(r.applied), "merged_labels": [g.nodes[n].label for n in r.applied],
                 "similarity": r.similarity, "reason": r.reason, "undone": r.undone, "undo_reason": r.undo_reason}
                for r in sorted(g.merges.values(), key=lambda r: (r.seq, r.merge_id))]

    def unmerge(self, tenant: str, user_id: str, merge_id: str, reason: str) -> dict:
        """Undo a merge with a ``graph_nodes_unmerged`` event: its nodes stand on their own again, and
        de-duplication will not merge that pair again."""
        memory = self.state.user(tenant, user_id)
        record = memory.graph.merges.get(merge_id) if memory is not None else None
        problems = []
        if record is None:
            problems.append(("merge_id", f"{merge_id!r}: no merge of {tenant}/{user_id} has this id; "
                                         "list them with `palimpsest merges`"))
        elif record.undone:
            problems.append(("merge_id", f"{merge_id!r} was already undone ({record.undo_reason}); nothing to restore"))
        if not reason.strip():
            problems.append(("reason", "empty; say why the merge is undone (it is kept in the log)"))
        if problems:
            raise InvalidInputError(problems, what="unmerge")
        event_id = new_event_id()
        self._commit([PendingEvent(tenant, user_id, event_id, GraphNodesUnmerged(merge_id=merge_id, reason=reason))],
                     followups=False)
        return {"event_id": event_id, "merge_id": merge_id, "kept_node": record.kept_node_id,
                "restored_nodes": list(record.applied)}

    def graph_export(self, tenant: str, user_id: str, title: str) -> dict:
        """The user's memory graph as a self-contained HTML page and as GraphML."""
        memory = self.state.user(tenant, user_id)
        state = memory.graph if memory else GraphState()
        return {"html": graph_export.to_html(state, title), "graphml": graph_export.to_graphml(state),
                "memories": len(state.memories), "nodes": len(state.nodes), "edges": len(state.edges)}
