"""The local Ray a store starts: its workers (the shard actors) at the driver's priority, not Ray's nice 15; Ray's
token authentication on as Ray sets it, without Ray's notice that it did so in the store's output."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import os, tempfile
import ray
from palimpsest import Memory
with Memory.open(tempfile.mkdtemp() + "/store", num_shards=1, embedder="hash") as mem:
    pid = ray.get(mem.shards.cluster.shards[0].pid.remote())
    print(os.getpriority(os.PRIO_PROCESS, 0), os.getpriority(os.PRIO_PROCESS, pid))
"""


def test_a_store_s_own_local_ray_runs_its_shards_at_the_driver_s_niceness():
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    env.pop("RAY_ADDRESS", None)
    env.pop("RAY_worker_niceness", None)
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    driver, shard = map(int, done.stdout.split()[-2:])
    assert shard == driver, f"shard actor at nice {shard}, driver at {driver} (Ray's default for workers is 15)"


AUTH_PROBE = """
import tempfile
from palimpsest import Memory
from ray._raylet import AuthenticationMode, get_authentication_mode
with Memory.open(tempfile.mkdtemp() + "/store", num_shards=1, embedder="hash") as mem:
    print("token" if get_authentication_mode() == AuthenticationMode.TOKEN else "off")
"""


def test_a_store_s_own_local_ray_keeps_token_authentication_and_does_not_announce_it():
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    for name in ("RAY_ADDRESS", "RAY_AUTH_MODE"):
        env.pop(name, None)
    done = subprocess.run([sys.executable, "-c", AUTH_PROBE], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-1] == "token"
    assert "Token authentication is enabled" not in done.stderr + done.stdout
