"""The chaos run, short: one driver takes a shard kill, then is killed itself.

The long run is ``python -m benchmarks.chaos`` (``make bench-chaos``). Here the drivers are subprocesses
joining this module's Ray; every acknowledged message must be stored exactly once, no batch half, and
the replay digests (LanceDB's included) must equal the live ones when the next driver opens the store.
"""

from __future__ import annotations

import pytest
import ray

from benchmarks.chaos import Chaos

pytestmark = pytest.mark.integration


def test_kill_cycles_lose_and_duplicate_nothing_acknowledged(ray_cluster, tmp_path):
    chaos = Chaos(tmp_path / "chaos", ray.get_runtime_context().gcs_address, seed=3, pause=0.05, warmup=(0.5, 1.0))
    try:
        report = chaos.run(2, ["shard", "driver"], final_check=False)
    finally:
        chaos.close()
    assert [c["kind"] for c in report["cycle_records"]] == ["shard", "driver"]
    assert all(c["recovery_s"] is not None for c in report["cycle_records"]), report["cycle_records"]
    assert report["checks"] == 3  # at the first driver's open, after the shard kill, at the next driver's open
    assert report["acknowledged_messages"] > 0
    assert (report["lost"], report["duplicated"], report["half_batches"], report["wrong_memory_id"]) == (0, 0, 0, 0)
    assert report["replay_equal_every_check"] and report["lancedb_rows_equal_every_check"]
    assert report["checks_failed"] == [] and report["writer_errors"] == 0
