"""Graph consolidation as pure Ray tasks: one task per user's batch, the shard appends what they return.

A task receives one user's :class:`Job`: the user's
:class:`~projections.folds.graph.GraphState`, the ids of the staged memories, the
user's note evidence (:func:`projections.decisions.graph_conflicts.note_evidence`, for
the conflict check) and the time to measure decay at; it runs
:func:`projections.decisions.graph_consolidate.consolidate` and returns the
``(event id, event)`` pairs; it writes nothing. The shard that
owns the user appends them to its log (the only writer) and folds them, so a
task that dies or runs twice costs only time: Ray may retry it freely.

:func:`run_consolidation` submits the jobs of many users, spread over the
cluster's CPUs, with at most ``max_in_flight`` tasks running (``ray.wait``);
with ``parallel=False`` it runs the same function in this process, in order.

With a language model configured (``llm``), a task makes one call after the
offline step, on its worker: which of the pairs its batch linked are causal
(:mod:`actors.llm.causality`). The call record comes back with the events, so
the task stays pure apart from that call and replay never makes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import ray

from actors.consolidation_jobs import Events, Job, consolidate_user
from actors.llm.config import LlmConfig
from actors.ray_init import ensure_ray
from events.errors import InvalidInputError
from projections.decisions.graph_consolidate import DEFAULT_CONSOLIDATION, ConsolidationConfig
from projections.folds.graph import GraphState
from projections.folds.notes import NoteState

__all__ = ["Job", "consolidate_task", "consolidate_user", "run_consolidation"]


@ray.remote(num_cpus=1)
def consolidate_task(tenant: str, user_id: str, state: GraphState, staged_ids: Sequence[str],
                     config: ConsolidationConfig = DEFAULT_CONSOLIDATION, now: datetime | None = None,
                     notes: NoteState | None = None, llm: LlmConfig | None = None) -> Events:
    """:func:`consolidate_user` on a Ray worker. Pure apart from the optional model call (whose record it
    returns), so Ray's retries (``max_retries``) are safe: a rerun keys its events alike."""
    return consolidate_user(tenant, user_id, state, staged_ids, config, now, notes, llm)


def run_consolidation(
    jobs: Sequence[Job | tuple],
    config: ConsolidationConfig = DEFAULT_CONSOLIDATION,
    *,
    max_in_flight: int | None = None,
    parallel: bool = True,
    now: datetime | None = None,
    llm: LlmConfig | None = None,
) -> dict[tuple[str, str], Events]:
    """(tenant, user id) → the events consolidating that user's batch, in the order of ``jobs``.

    With ``parallel``, one Ray task per job, at most ``max_in_flight`` (default:
    the cluster's CPUs) running at a time; each state goes to the object store
    once, when its task is submitted, and leaves it when its result is back.
    Without, the same function runs here, job after job. A job's ``now``
    (decay time) defaults to the run's ``now``; ``None`` for both skips decay.
    With ``llm``, each task also asks the model which of its batch's linked
    pairs are causal (one call per task, made on the worker).

    Parallel equals sequential, event for event: a job reads only its own
    user's state (never another job's, never one changed by another job, since
    no job applies anything), the decisions depend only on that state, and
    event ids are keyed by tenant, user and decision, not drawn from a counter
    or a clock that completion order could shift. One user per job: two
    batches of the same user would each miss the other's events.
    """
    jobs = [Job(*job) for job in jobs]
    seen: set[tuple[str, str]] = set()
    problems = []
    for i, (tenant, user_id, *_) in enumerate(jobs):
        if (tenant, user_id) in seen:
            problems.append((f"jobs[{i}]", f"({tenant!r}, {user_id!r}) has another job already; put all of a user's "
                                            "staged ids in one job"))
        seen.add((tenant, user_id))
    if max_in_flight is not None and max_in_flight < 1:
        problems.append(("max_in_flight", f"{max_in_flight!r}: use at least 1, or None for the cluster's CPUs"))
    if problems:
        raise InvalidInputError(problems, what="consolidation jobs")
    if not parallel:
        return {(j.tenant, j.user_id): consolidate_user(j.tenant, j.user_id, j.state, j.staged_ids, config,
                                                        j.now or now, j.notes, llm) for j in jobs}
    if not jobs:
        return {}
    ensure_ray()
    cap = max_in_flight or max(1, int(ray.cluster_resources().get("CPU", 1)))
    out: dict[tuple[str, str], Events] = {(j.tenant, j.user_id): [] for j in jobs}  # keys in job order
    in_flight: dict[ray.ObjectRef, tuple[str, str]] = {}

    def collect(ready: list[ray.ObjectRef]) -> None:
        for ref, events in zip(ready, ray.get(ready)):
            out[in_flight.pop(ref)] = events

    try:
        for job in jobs:
            if len(in_flight) >= cap:
                ready, _ = ray.wait(list(in_flight), num_returns=1)
                collect(ready)
            # copy(): the same graph without its cached views, which the task would not read
            ref = consolidate_task.remote(job.tenant, job.user_id, ray.put(job.state.copy()), list(job.staged_ids),
                                          config, job.now or now, job.notes, llm)
            in_flight[ref] = (job.tenant, job.user_id)
        collect(list(in_flight))  # one ray.get for the rest
    except BaseException:
        for ref in in_flight:
            ray.cancel(ref)
        raise
    return out
