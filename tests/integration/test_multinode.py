"""A real multi-node Ray cluster on this machine: shards spread over 3 nodes, one node removed mid-ingest.

``ray.cluster_utils.Cluster`` runs three raylets (one CPU each) sharing the store's directory. The node
holding a shard is removed without warning while writers ingest; Ray restarts that shard on a survivor,
which reopens its DuckDB log from the shared path; every acknowledged message is stored exactly once.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections import Counter

import pytest
import ray

from benchmarks.multinode import messages
from benchmarks.ray_local import start_cluster
from palimpsest import Memory

pytestmark = pytest.mark.integration

WRITERS, BATCHES, PER_BATCH = 3, 16, 5


@pytest.fixture(scope="module")
def cluster():
    ray.shutdown()  # the local Ray the other modules share (conftest.py): this module needs a cluster of its own
    before = os.environ.get("RAY_TMPDIR")
    c = start_cluster(3)
    yield c
    ray.shutdown()
    c.shutdown()
    shutil.rmtree(os.environ["RAY_TMPDIR"], ignore_errors=True)
    os.environ.pop("RAY_TMPDIR") if before is None else os.environ.update(RAY_TMPDIR=before)


def spread_store(path) -> tuple[Memory, list[dict]]:
    """The store opened with its shards on at least two nodes. Placement is soft (a shard whose node dies must
    restart on a survivor), and a raylet whose view of the other nodes lags may still start every shard on one
    node: the store is opened again then, three times at most, before the test fails."""
    for _ in range(3):
        mem = Memory.open(path, num_shards=3, embedder="hash")
        placed = ray.get([s.where.remote() for s in mem.cluster.shards])
        if len({p["node_id"] for p in placed}) >= 2:
            return mem, placed
        mem.close()
        time.sleep(1.0)
    raise AssertionError(f"three opens placed every shard on one node: {placed}")


def test_a_node_removed_mid_ingest_loses_nothing(cluster, tmp_path):
    mem, placed = spread_store(tmp_path / "store")
    with mem:
        doomed = next(n for n in cluster.worker_nodes if n.node_id in {p["node_id"] for p in placed})
        acked, errors = {}, []

        def write(w: int) -> None:
            items = messages(w, BATCHES * PER_BATCH)
            for b in range(BATCHES):
                try:
                    out = mem.add_messages(items[b * PER_BATCH:(b + 1) * PER_BATCH], tenant="acme",
                                           user_id=f"user-{w}", extract_graph=False)
                except BaseException as exc:  # asserted on below
                    errors.append(exc)
                    return
                acked[(w, b)] = out.memory_ids
                time.sleep(0.05)

        threads = [threading.Thread(target=write, args=(w,)) for w in range(WRITERS)]
        for t in threads:
            t.start()
        while len(acked) < WRITERS * 3:
            time.sleep(0.01)
        at_removal = len(acked)
        cluster.remove_node(doomed, allow_graceful=False)
        for t in threads:
            t.join(300)

        assert errors == [] and at_removal < WRITERS * BATCHES
        assert len(acked) == WRITERS * BATCHES
        moved = ray.get([s.where.remote() for s in mem.cluster.shards])
        assert doomed.node_id not in {p["node_id"] for p in moved}  # restarted on the survivors
        for w in range(WRITERS):
            stored = Counter(e.event.client_message_id for e in mem.events("acme", f"user-{w}",
                                                                        kinds=["message_recorded"]))
            assert stored == Counter({f"w{w}-{i}": 1 for i in range(BATCHES * PER_BATCH)})
        assert all(r.equal for r in mem.replay())
