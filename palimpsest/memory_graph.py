"""The memory-graph part of the public API (a mixin of :class:`palimpsest.Memory`): tool calls, the
graph memories staged at ingest, parallel consolidation on Ray, and the export."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import numpy as np
import structlog

from actors import commands as c
from actors.consolidation import run_consolidation
from events.commands import RecordMessage
from events.graph_events import GraphMemoryStatusChanged
from projections.rules.tool_calls import CreateMemory, LinkMemories, validate_tool_call
from palimpsest.remote import aware as _aware
from palimpsest.remote import get as _get
from projections.adapters.embedding import encode_labels
from projections.decisions.graph_consolidate import consolidation_for
from projections.decisions.graph_staging import candidates_for, staged_event

log = structlog.get_logger("palimpsest")


class GraphApiMixin:
    def _label_vectors(self, labels: list[str]) -> dict[str, np.ndarray]:
        missing = [label for label in dict.fromkeys(labels) if label not in self._labels]
        if missing:
            if len(self._labels) > 100_000:
                self._labels.clear()
            self._labels.update(zip(missing, encode_labels(self.embedder, missing)))
        return {label: self._labels[label] for label in labels}

    def _graph_memories(self, commands: list[RecordMessage]) -> tuple[list[tuple], list[tuple]]:
        """Per command, the graph memories its text states, staged without label vectors (no source ids yet: the
        labels' reactor embeds them after the write, all at once, :meth:`_labels_staged`); and per command the
        rules' reading they came from (the shard's note rules reuse it)."""
        candidates = candidates_for(commands)
        staged = [tuple(staged_event(c, {}, occurred_at=cmd.occurred_at, extractor=c.extractor) for c in group)
                  for cmd, group in zip(commands, candidates)]
        return staged, candidates

    def _labels_staged(self, commands: list[RecordMessage]) -> None:
        """The shards acknowledged ``commands`` with their graph memories: their users' labels are due for the
        labels' reactor (told after the write, so its pass finds them committed). Every user of the commands:
        with a language model configured, the shard may stage memories the rules did not."""
        self._label_reactor.staged((cmd.tenant, cmd.user_id) for cmd in commands)

    def embed_labels(self, tenant: str | None = None, user_id: str | None = None) -> int:
        """Embed the graph labels staged without a vector (every user's, or one tenant's or user's) in one pass of
        the encoder, and record them (``graph_labels_embedded``, one event per user); returns how many labels
        were recorded. The labels' reactor (:mod:`palimpsest.label_reactor`) calls it once an ingest pauses, so an
        ingest leaves the encoder to the turns; a consolidation and ``link_memories`` (writes that compare the labels'
        vectors) wait for it to have caught up with their user. A graph read (``search_memories``) records nothing:
        it encodes the labels not embedded yet for itself (:meth:`_graph_read`)."""
        return self._label_reactor.caught_up(tenant, user_id)

    def _embed_labels_now(self, tenant: str | None, user_id: str | None) -> int:
        """One pass of the encoder over the labels without a vector, recorded (the reactor's step)."""
        found = [x for part in self.shards.ask_each(c.UnembeddedLabels(tenant=tenant, user_id=user_id), tenant,
                                                    user_id) for x in part]
        vectors = self._label_vectors([label for _, _, labels in found for label in labels]) if found else {}
        by_shard: dict[int, list] = {}
        for t, u, labels in found:
            by_shard.setdefault(self.shards.index_of(t, u), []).append(c.RecordLabelVectors(
                tenant=t, user_id=u, labels=tuple(labels), vectors=np.stack([vectors[x] for x in labels]),
                model_id=self.embedder.model_id))
        return sum(n for out in _get([self.shards.submit(i, cmds) for i, cmds in by_shard.items()]) for n in out)

    def tool_call(self, tenant: str, user_id: str, name: str, arguments: Mapping[str, Any] | str,
                  *, reference: datetime | None = None) -> dict:
        """Run one memory-graph tool call (``create_memory``, ``link_memories``, ``search_memories``) as an LLM would.

        ``arguments`` is the JSON object (or text) of the call; relative times
        ("yesterday 8pm", "上周五") are resolved against ``reference`` (default now).
        Invalid calls raise :class:`InvalidInputError` naming each field and its fix.
        """
        reference = _aware(reference, name if isinstance(name, str) else "tool call")
        call = validate_tool_call(name, arguments, reference=reference)
        if isinstance(call, CreateMemory):
            labels = [x for x in (call.topic, call.object) if x]
            event = staged_event(call.model_dump(), self._label_vectors(labels), extractor="tool:create_memory",
                                 occurred_at=call.occurred_at or reference)
            [memory_id] = self.shards.send(tenant, user_id, c.StageGraphMemories(tenant=tenant, user_id=user_id,
                                                                           memories=(event,)))
            self._since_consolidation += 1
            if self.consolidate_every and self._since_consolidation >= self.consolidate_every:
                self.consolidate()
            return {"memory_id": memory_id, "staged": True}
        if isinstance(call, LinkMemories):
            self._label_reactor.caught_up(tenant, user_id)  # a write: its endpoints are found by the labels' vectors
            source, target = self.embedder.encode([call.source_memory_description, call.target_memory_description])
            return self.shards.send(tenant, user_id, c.LinkMemories(
                tenant=tenant, user_id=user_id, source_vector=source, target_vector=target,
                relation_type=call.relation_type, relation=call.relation or call.relation_type,
                importance=call.importance, now=reference, reason="link_memories tool call"))
        time_range = (call.time_range.start, call.time_range.end) if call.time_range else None
        query = c.SearchMemories(
            tenant=tenant, user_id=user_id, query=call.query, query_vector=self._query_vector(call.query),
            now=reference, mode=call.mode, expand_depth=call.expand_depth,
            memory_types=tuple(call.memory_types) if call.memory_types else None, time_range=time_range,
            max_results=call.max_results)
        return self._graph_read(query)

    def _graph_read(self, query: c.SearchMemories) -> dict:
        """Ask a graph search. A read records nothing: labels the labels' reactor has not embedded yet are named
        by the shard, encoded here for this read only, and the search asked again with their vectors."""
        answer = self.shards.ask(query.tenant, query.user_id, query)
        if "unembedded" not in answer:
            return answer
        labels = answer["unembedded"]
        vectors = self._label_vectors(labels)
        return self.shards.ask(query.tenant, query.user_id, query.model_copy(update={
            "pending_labels": tuple(labels), "pending_vectors": np.stack([vectors[x] for x in labels])}))

    def create_memory(self, tenant: str, user_id: str, **arguments) -> dict:
        """``create_memory(subject, memory_type, topic, object?, attributes?, importance?)``: staged at once."""
        return self.tool_call(tenant, user_id, "create_memory", arguments)

    def link_memories(self, tenant: str, user_id: str, **arguments) -> dict:
        """``link_memories(source_memory_description, target_memory_description, relation_type, importance?)``."""
        return self.tool_call(tenant, user_id, "link_memories", arguments)

    def search_memories(self, tenant: str, user_id: str, **arguments) -> dict:
        """``search_memories(query, memory_types?, time_range?, max_results?, expand_depth?, mode?)``."""
        return self.tool_call(tenant, user_id, "search_memories", arguments)

    def consolidate(self, *, tenant: str | None = None, user_id: str | None = None,
                    max_in_flight: int | None = None, parallel: bool = True, decay: bool = False,
                    at: datetime | None = None, idle: bool = False) -> dict:
        """Consolidate every staged graph memory: one pure Ray task per user, in parallel across shards.

        Each task returns events (status changes, merges, links, conclusions); the user's shard appends them.
        A task first marks ``superseded`` the active memories resting on notes that were since superseded or
        deleted, then consolidates the staged batch, then (only with ``decay``: a deliberate sweep, like
        ``archive sweep`` for turns) archives the memories whose decayed importance fell below the floor. Without
        it the decay stays what the graph's design makes it, a factor graph search computes at query time (the δ
        term); archiving by default would take half the LoCoMo dev graph out of the retrieval's expansion. Decay is measured at ``at`` when given (time travel), else at each
        user's latest message time (``actors.consolidation_jobs.user_clock``): the user's own timeline, so importing
        old conversations does not archive them against the wall clock. Users with nothing staged are left alone
        unless ``idle`` (then their note check and decay run too). The automatic rounds (every
        ``consolidate_every`` staged memories, :meth:`schedule_consolidation`) call this with the defaults.
        With a language model configured (``PALIMPSEST_LLM_*``), each task also asks it which of the pairs its
        batch linked are causal, and the confirmed ones become ``causality`` edges (:mod:`actors.llm.causality`).
        """
        started = time.perf_counter()
        at = _aware(at, "consolidate") if at is not None else None
        self._label_reactor.caught_up(tenant, user_id)  # de-duplication compares the labels' vectors
        query = c.GraphJobs(tenant=tenant, user_id=user_id, decay=decay, at=at, idle=idle)
        jobs = [job for part in self.shards.ask_each(query, tenant, user_id) for job in part]
        self._since_consolidation = 0
        results = run_consolidation(jobs, consolidation_for(self.config.model_id), max_in_flight=max_in_flight,
                                    parallel=parallel, llm=self.llm_config)
        appended = _get([
            self.shards.submit(self.shards.index_of(t, u), [c.ApplyConsolidation(tenant=t, user_id=u,
                                                                                 events=tuple(events))])
            for (t, u), events in results.items() if events
        ])
        appended = [n for [n] in appended]
        changes = Counter(e.status for events in results.values() for _, e in events
                          if isinstance(e, GraphMemoryStatusChanged))
        return {"users": len(jobs), "staged": sum(len(j.staged_ids) for j in jobs), "events": sum(appended),
                "superseded": changes["superseded"], "archived": changes["archived"],
                "seconds": time.perf_counter() - started}

    def schedule_consolidation(self, every_s: float | None, *, decay: bool = False) -> None:
        """Consolidate every ``every_s`` seconds in a background thread (None stops it), besides every
        ``consolidate_every`` staged graph memories and on demand. Each round is :meth:`consolidate`: the note check and
        the staged batch; with ``decay`` also the decay sweep of every user, on each user's own clock."""
        if self._scheduler is not None:
            self._scheduler.cancel()
            self._scheduler = None
        if every_s:
            def tick() -> None:
                try:
                    self.consolidate(decay=decay, idle=decay)
                except Exception as exc:  # noqa: BLE001 - a failed round is logged; the next one retries
                    log.warning("consolidation_failed", error=str(exc))
                self.schedule_consolidation(every_s, decay=decay)

            self._scheduler = threading.Timer(every_s, tick)
            self._scheduler.daemon = True
            self._scheduler.start()

    def graph_merges(self, tenant: str, user_id: str) -> list[dict]:
        """The user's node merges, oldest first (id, kept and merged nodes with labels, similarity, reason, undone)."""
        return self.shards.ask(tenant, user_id, c.GraphMerges(tenant=tenant, user_id=user_id))

    def unmerge(self, tenant: str, user_id: str, merge_id: str, *, reason: str = "undone by the user") -> dict:
        """Undo a node merge (an event; the merge stays in the history). Unknown or already undone ids raise
        :class:`InvalidInputError`."""
        return self.shards.send(tenant, user_id, c.Unmerge(tenant=tenant, user_id=user_id, merge_id=merge_id, reason=reason))

    def graph_export(self, tenant: str, user_id: str, *, title: str | None = None) -> dict:
        """The user's memory graph as ``html`` (self-contained, interactive) and ``graphml`` text."""
        return self.shards.ask(tenant, user_id, c.GraphExport(tenant=tenant, user_id=user_id,
                                                        title=title or f"{tenant}/{user_id}"))
