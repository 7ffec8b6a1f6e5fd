"""The chaos run, short: one cycle, in which the driver is killed while its writers ingest.

The long run is ``python -m benchmarks.chaos`` (``make bench-chaos``: 52 cycles of shard, directory, worker and
driver kills). Here the drivers are subprocesses joining this module's Ray; the driver is killed once every
writer has had a batch acknowledged, its actors die with it, and the next driver opens the store and checks it:
every acknowledged message stored exactly once, no batch half, the replay digests (LanceDB's included) equal to
the live ones. Its writers send their last unacknowledged batch again, as a client would, and must be
acknowledged. A shard killed mid-stream is ``tests/integration/test_crash_recovery.py``.
"""

from __future__ import annotations

import pytest
import ray

from benchmarks.chaos import Chaos

pytestmark = pytest.mark.integration


def test_kill_cycles_lose_and_duplicate_nothing_acknowledged(ray_cluster, tmp_path):
    chaos = Chaos(tmp_path / "chaos", ray.get_runtime_context().gcs_address, seed=3, pause=0.05, warmup=(0.5, 1.0))
    try:
        report = chaos.run(1, ["driver"], final_check=False)
    finally:
        chaos.close()
    assert [c["kind"] for c in report["cycle_records"]] == ["driver"]
    assert all(c["recovery_s"] is not None for c in report["cycle_records"]), report["cycle_records"]
    assert report["checks"] == 2  # at the first driver's open, at the next driver's open
    assert report["acknowledged_messages"] > 0
    assert (report["lost"], report["duplicated"], report["half_batches"], report["wrong_memory_id"]) == (0, 0, 0, 0)
    assert report["replay_equal_every_check"] and report["lancedb_rows_equal_every_check"]
    assert report["checks_failed"] == [] and report["writer_errors"] == 0
