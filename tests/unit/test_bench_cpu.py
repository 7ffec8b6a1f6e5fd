"""The benchmark's CPU accounting: this process and the processes under it, by role."""

from __future__ import annotations

import subprocess
import sys
import time

from benchmarks.resources import cpu_between, cpu_snapshot


def _spin(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_cpu_between_counts_this_process_and_a_child_started_in_between():
    before = cpu_snapshot()
    child = subprocess.Popen([sys.executable, "-c",
                              "import time\nend = time.process_time() + 0.4\nwhile time.process_time() < end: pass\n"
                              "time.sleep(30)"])
    try:
        _spin(0.3)
        deadline = time.monotonic() + 20
        while True:  # the child's own 0.4 s, counted while it still runs (an ended process is not)
            after = cpu_snapshot()
            if after.get(child.pid, ("", 0.0))[1] >= 0.35 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    finally:
        child.kill()
        child.wait()
    used = cpu_between(before, after)  # (a Ray the session started may add its own processes' CPU)
    assert after[child.pid][0] == "ray_infra" and 0.35 <= after[child.pid][1] < 5  # not a ray:: worker
    assert child.pid not in before
    assert used["driver"] >= 0.28 and used["ray_infra"] >= 0.35
    assert abs(used["total"] - (used["driver"] + used["ray_workers"] + used["ray_infra"])) < 0.02
