"""The memory-graph commands and queries of a shard (a mixin of :class:`ShardService`): staging,
consolidation jobs and their results, graph-expanded search, links, export."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime

import numpy as np

from actors.deciders import decide_touches, new_event_id
from events.envelope import PendingEvent
from events.errors import InvalidInputError
from events.graph_events import GraphEdgeLinked, GraphMemoryStaged
from events.model import Event
from projections import graph_export, graph_search
from projections.graph import GraphState


class GraphMixin:
    def stage_graph(self, tenant: str, user_id: str, staged: list[GraphMemoryStaged]) -> list[str]:
        """Append memories to the graph's staging area (consolidation comes later); returns their ids."""
        pending = [PendingEvent(tenant, user_id, new_event_id(), event) for event in staged]
        self._commit(pending, followups=False)
        return [p.event_id for p in pending]

    def graph_jobs(self, tenant: str | None = None, user_id: str | None = None) -> list[tuple]:
        """(tenant, user, graph state, staged ids) for every user with staged memories: the consolidation work."""
        jobs = []
        for (t, u), memory in sorted(self.state.users.items()):
            if (tenant and t != tenant) or (user_id and u != user_id):
                continue
            staged = [mid for mid, m in memory.graph.memories.items() if m.staged]
            if staged:
                jobs.append((t, u, memory.graph.copy(), staged))
        return jobs

    def append_graph(self, tenant: str, user_id: str, events: list[tuple[str, Event]]) -> int:
        """Append the events a consolidation task returned (keyed ids: a retried append finds them present)."""
        memory = self.state.user(tenant, user_id)
        known = set(memory.graph.merges) | set(memory.graph.edges) | set(memory.graph.conclusions) if memory else set()
        fresh = [(i, e) for i, e in events if i not in known]
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

    def graph_export(self, tenant: str, user_id: str, title: str) -> dict:
        """The user's memory graph as a self-contained HTML page and as GraphML."""
        memory = self.state.user(tenant, user_id)
        state = memory.graph if memory else GraphState()
        return {"html": graph_export.to_html(state, title), "graphml": graph_export.to_graphml(state),
                "memories": len(state.memories), "nodes": len(state.nodes), "edges": len(state.edges)}
