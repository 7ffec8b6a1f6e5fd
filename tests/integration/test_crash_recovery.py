"""A shard actor dies mid-stream; nothing acknowledged may be lost or stored twice.

A background thread ingests many small batches (one ``add_messages`` call
each) while the main thread kills the actor that owns the user. Ray restarts
the actor (``max_restarts=-1``), which folds its DuckDB log again and
reconciles LanceDB, and retries the calls in flight (``max_task_retries=-1``),
which the decider turns into no-ops when the append had already happened.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter

import pytest
import ray

from tests.builders import command

pytestmark = pytest.mark.integration

TENANT, USER = "acme", "crash"
BATCHES, PER_BATCH = 60, 10
# (acknowledged batches, then seconds) before each kill. A call takes about 12 ms here and
# its append happens part-way through, so staggered delays make it likely that a kill lands
# after an append but before its acknowledgement, and the retry must be a no-op. Two kills a
# test, early and late in a call, the second on a fresh incarnation (each restart costs seconds);
# the long run of shard kills is `python -m benchmarks.chaos` (`make bench-chaos`).
KILLS = [(10, 0.004), (30, 0.010)]


def batch(b: int) -> list[dict]:
    return [
        command(f"batch {b} message {i}: walked {b * PER_BATCH + i} steps today", b * PER_BATCH + i,
                tenant=TENANT, user_id=USER, client_message_id=f"b{b:02d}-m{i}")
        for i in range(PER_BATCH)
    ]


def ingest_while_killing(mem, kill) -> tuple[dict, list[int]]:
    """Ingest every batch from a thread and ``kill(actor, pid)`` the owning shard at each of KILLS.

    Returns the acknowledged memory ids per batch and the acknowledged count at each kill.
    """
    acked: dict[int, list[str]] = {}  # batch -> memory ids the store acknowledged
    errors: list[BaseException] = []

    def ingest():
        for b in range(BATCHES):
            try:
                acked[b] = mem.add_messages(batch(b)).memory_ids
            except BaseException as exc:  # recorded and asserted on by the test
                errors.append(exc)

    actor = mem.cluster.shards[mem.shards.route([(TENANT, USER)])[0]]
    pids, acked_at_kill = [], []
    worker = threading.Thread(target=ingest, daemon=True)
    worker.start()
    for after, delay in KILLS:
        deadline = time.monotonic() + 120
        while len(acked) < after and worker.is_alive() and time.monotonic() < deadline:
            time.sleep(0.0005)
        pids.append(ray.get(actor.pid.remote()))  # queued behind the call in flight, if any
        time.sleep(delay)
        acked_at_kill.append(len(acked))
        kill(actor, pids[-1])
    worker.join(300)

    assert not worker.is_alive(), "ingest did not finish after the shard was restarted"
    assert errors == []
    assert ray.get(actor.pid.remote()) not in pids, "the shard actor was not restarted"
    assert len(set(pids)) == len(KILLS), "every kill hit a fresh incarnation of the actor"
    return acked, acked_at_kill


def assert_nothing_acknowledged_was_lost(mem, acked: dict[int, list[str]]):
    recorded = mem.events(TENANT, USER, kinds=["message_recorded"])
    by_client_id = Counter(e.event.client_message_id for e in recorded)
    event_id_of = {e.event.client_message_id: e.event_id for e in recorded}
    for b, memory_ids in acked.items():
        for i, memory_id in enumerate(memory_ids):
            client_id = f"b{b:02d}-m{i}"
            assert by_client_id[client_id] == 1, f"{client_id} stored {by_client_id[client_id]} times"
            assert event_id_of[client_id] == memory_id, f"{client_id} acknowledged as another memory"
    assert len(recorded) == BATCHES * PER_BATCH  # every call was acknowledged, so everything is there once

    embedded = mem.events(TENANT, USER, kinds=["message_embedded"])
    assert sorted(e.event.message_event_id for e in embedded) == sorted(event_id_of.values())

    reports = mem.replay()
    assert all(r.equal for r in reports), [(r.shard, r.live, r.rebuilt) for r in reports if not r.equal]
    shard = mem.stats()["shards"][mem.shards.route([(TENANT, USER)])[0]]
    assert shard["vectors_indexed"] == shard["messages"] == BATCHES * PER_BATCH
    hits = mem.search(TENANT, USER, "walked 123 steps", k=3)
    assert hits[0].text == "batch 12 message 3: walked 123 steps today"


def test_ray_kill_of_the_shard_mid_stream_loses_nothing_acknowledged(memory):
    acked, acked_at_kill = ingest_while_killing(memory, lambda actor, pid: ray.kill(actor, no_restart=False))

    assert acked_at_kill[-1] < BATCHES  # every kill really landed mid-stream
    assert sorted(acked) == list(range(BATCHES))
    assert_nothing_acknowledged_was_lost(memory, acked)


def _sigkill(actor, pid: int) -> None:
    os.kill(pid, signal.SIGKILL)  # the worker process dies without any cleanup


def test_sigkill_of_the_shard_process_mid_stream_loses_nothing_acknowledged(memory):
    acked, acked_at_kill = ingest_while_killing(memory, _sigkill)

    assert acked_at_kill[-1] < BATCHES
    assert sorted(acked) == list(range(BATCHES))
    assert_nothing_acknowledged_was_lost(memory, acked)
