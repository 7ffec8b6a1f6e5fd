"""One user's graph consolidation, Ray-free: the job, its keyed event ids, and the function a task runs.

:mod:`actors.consolidation` runs :func:`consolidate_user` as Ray tasks; the
shard builds the jobs (:func:`graph_jobs`) and appends what the tasks return
(:class:`actors.commands.ApplyConsolidation`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import NamedTuple

from actors.commands import GraphJobs
from actors.decide_archive import selected
from actors.decision import Answer
from actors.llm.causality import llm_causal_links
from actors.llm.client import LlmClient
from actors.llm.config import LlmConfig
from events.model import Event
from projections.decisions.graph_conflicts import note_evidence
from projections.decisions.graph_consolidate import DEFAULT_CONSOLIDATION, ConsolidationConfig, consolidate
from projections.folds.graph import GraphState
from projections.folds.notes import NoteState
from projections.folds.state import UserMemory

# Fixed forever: consolidation event ids are uuid5(NAMESPACE, "<tenant>/<user>/<decision key>").
NAMESPACE = uuid.UUID("5b0e6a53-9f3c-4c1e-8d6a-2f4b7c9e1a07")

Events = list[tuple[str, Event]]


class Job(NamedTuple):
    """One user's consolidation work; a plain ``(tenant, user_id, state, staged_ids)`` tuple is one too."""

    tenant: str
    user_id: str
    state: GraphState  # that user's graph (a copy: the task only reads it)
    staged_ids: Sequence[str]
    notes: NoteState | None = None  # that user's note evidence; None skips the conflict check
    now: datetime | None = None  # when to measure decay for that user; None: the run's ``now``


def keyed_ids(tenant: str, user_id: str) -> Callable[[str], str]:
    """The ``new_id`` of one user's consolidation: a name-based uuid of the decision, so a rerun names it alike."""
    return lambda key: uuid.uuid5(NAMESPACE, f"{tenant}/{user_id}/{key}").hex


def consolidate_user(tenant: str, user_id: str, state: GraphState, staged_ids: Sequence[str],
                     config: ConsolidationConfig = DEFAULT_CONSOLIDATION, now: datetime | None = None,
                     notes: NoteState | None = None, llm: LlmConfig | None = None) -> Events:
    """The events consolidating one user's graph (see :func:`consolidate`); reads ``state``, never writes it.

    With ``llm``, a language model then checks which pairs the batch linked are
    causal (:func:`actors.llm.causality.llm_causal_links`; its call is among the events).
    """
    new_id = keyed_ids(tenant, user_id)
    events = consolidate(state, staged_ids, config, new_id, now=now, notes=notes)
    if llm is not None and events:
        events += llm_causal_links(LlmClient(llm), state, events, new_id)
    return events




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


def graph_jobs(core, q: GraphJobs) -> Answer:
    """The consolidation work: one :class:`Job` per user with staged memories (``idle``: with any graph memory).

    A job holds a copy of the user's graph, the staged ids, the user's note
    evidence (the conflict check reads it) and, with ``decay``, the time to
    measure decay at: ``at``, else the user's own clock (:func:`user_clock`).
    """
    jobs = []
    for t, u, memory in selected(core.state, q.tenant, q.user_id):
        staged = [mid for mid, m in memory.graph.memories.items() if m.staged]
        if staged or (q.idle and memory.graph.memories):
            now = (q.at or user_clock(memory)) if q.decay else None
            jobs.append(Job(t, u, memory.graph.copy(), staged, note_evidence(memory.notes), now))
    return Answer(jobs)
