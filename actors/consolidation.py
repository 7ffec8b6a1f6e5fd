"""Graph consolidation as pure Ray tasks: one task per user's batch, the shard appends what they return.

A task receives one user's :class:`~projections.graph.GraphState` and the ids of
that user's staged memories, runs :func:`projections.graph_consolidate.consolidate`
and returns the ``(event id, event)`` pairs; it writes nothing. The shard that
owns the user appends them to its log (the only writer) and folds them, so a
task that dies or runs twice costs only time: Ray may retry it freely.

:func:`run_consolidation` submits the jobs of many users, spread over the
cluster's CPUs, with at most ``max_in_flight`` tasks running (``ray.wait``);
with ``parallel=False`` it runs the same function in this process, in order.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import datetime

import ray

from events.errors import InvalidInputError
from events.model import Event
from projections.graph import GraphState
from projections.graph_consolidate import DEFAULT_CONSOLIDATION, ConsolidationConfig, consolidate

# Fixed forever: consolidation event ids are uuid5(NAMESPACE, "<tenant>/<user>/<decision key>").
NAMESPACE = uuid.UUID("5b0e6a53-9f3c-4c1e-8d6a-2f4b7c9e1a07")

Job = tuple[str, str, GraphState, Sequence[str]]  # tenant, user id, that user's graph, staged memory ids
Events = list[tuple[str, Event]]


def keyed_ids(tenant: str, user_id: str) -> Callable[[str], str]:
    """The ``new_id`` of one user's consolidation: a name-based uuid of the decision, so a rerun names it alike."""
    return lambda key: uuid.uuid5(NAMESPACE, f"{tenant}/{user_id}/{key}").hex


def consolidate_user(tenant: str, user_id: str, state: GraphState, staged_ids: Sequence[str],
                     config: ConsolidationConfig = DEFAULT_CONSOLIDATION, now: datetime | None = None) -> Events:
    """The events consolidating one user's staged memories ([] if none is staged); reads ``state``, never writes it."""
    return consolidate(state, staged_ids, config, keyed_ids(tenant, user_id), now=now)


@ray.remote(num_cpus=1)
def consolidate_task(tenant: str, user_id: str, state: GraphState, staged_ids: Sequence[str],
                     config: ConsolidationConfig = DEFAULT_CONSOLIDATION, now: datetime | None = None) -> Events:
    """:func:`consolidate_user` on a Ray worker. Pure, so Ray's retries (``max_retries``) are safe."""
    return consolidate_user(tenant, user_id, state, staged_ids, config, now)


def run_consolidation(
    jobs: Sequence[Job],
    config: ConsolidationConfig = DEFAULT_CONSOLIDATION,
    *,
    max_in_flight: int | None = None,
    parallel: bool = True,
    now: datetime | None = None,
) -> dict[tuple[str, str], Events]:
    """(tenant, user id) → the events consolidating that user's batch, in the order of ``jobs``.

    With ``parallel``, one Ray task per job, at most ``max_in_flight`` (default:
    the cluster's CPUs) running at a time; each state goes to the object store
    once, when its task is submitted, and leaves it when its result is back.
    Without, the same function runs here, job after job.

    Parallel equals sequential, event for event: a job reads only its own
    user's state (never another job's, never one changed by another job, since
    no job applies anything), the decisions depend only on that state, and
    event ids are keyed by tenant, user and decision, not drawn from a counter
    or a clock that completion order could shift. One user per job: two
    batches of the same user would each miss the other's events.
    """
    seen: set[tuple[str, str]] = set()
    problems = []
    for i, (tenant, user_id, _, _) in enumerate(jobs):
        if (tenant, user_id) in seen:
            problems.append((f"jobs[{i}]", f"({tenant!r}, {user_id!r}) has another job already; put all of a user's "
                                            "staged ids in one job"))
        seen.add((tenant, user_id))
    if max_in_flight is not None and max_in_flight < 1:
        problems.append(("max_in_flight", f"{max_in_flight!r}: use at least 1, or None for the cluster's CPUs"))
    if problems:
        raise InvalidInputError(problems, what="consolidation jobs")
    if not parallel:
        return {(t, u): consolidate_user(t, u, s, ids, config, now) for t, u, s, ids in jobs}
    if not jobs:
        return {}
    if not ray.is_initialized():
        from actors.runtime import ensure_ray  # late: actors.runtime imports the shard actor, which may import us

        ensure_ray()
    cap = max_in_flight or max(1, int(ray.cluster_resources().get("CPU", 1)))
    out: dict[tuple[str, str], Events] = {(t, u): [] for t, u, _, _ in jobs}  # keys in job order
    in_flight: dict[ray.ObjectRef, tuple[str, str]] = {}

    def collect(ready: list[ray.ObjectRef]) -> None:
        for ref, events in zip(ready, ray.get(ready)):
            out[in_flight.pop(ref)] = events

    try:
        for tenant, user_id, state, staged_ids in jobs:
            if len(in_flight) >= cap:
                ready, _ = ray.wait(list(in_flight), num_returns=1)
                collect(ready)
            # copy(): the same graph without its cached views, which the task would not read
            ref = consolidate_task.remote(tenant, user_id, ray.put(state.copy()), list(staged_ids), config, now)
            in_flight[ref] = (tenant, user_id)
        collect(list(in_flight))  # one ray.get for the rest
    except BaseException:
        for ref in in_flight:
            ray.cancel(ref)
        raise
    return out
