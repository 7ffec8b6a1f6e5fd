"""The local Ray a store starts: its workers (the shard actors) at the driver's priority, not Ray's nice 15; Ray's
token authentication on as Ray sets it, without Ray's notice that it did so in the store's output; the environment
``ensure_ray`` is given is in every process of that Ray and no longer in the driver's; none of its processes in the
driver's process group (a signal sent to that group reaches the driver alone)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]

# one store on a local Ray of its own (the test process's shared Ray is not passed on) answers both tests
PROBE = """
import os, tempfile
import ray
from actors.ray_init import ensure_ray, local_env
from palimpsest import Memory
from palimpsest.server.guard import descendants
from ray._raylet import AuthenticationMode, get_authentication_mode
ensure_ray(env={"PALIMPSEST_PROBE_VAR": "inherited"})
seen = ray.get(ray.remote(lambda: os.environ.get("PALIMPSEST_PROBE_VAR")).remote())
print("env", seen, os.environ.get("PALIMPSEST_PROBE_VAR"), local_env())
with Memory.open(tempfile.mkdtemp() + "/store", num_shards=1, embedder="hash") as mem:
    pid = ray.get(mem.shards.cluster.shards[0].pid.remote())
    auth = "token" if get_authentication_mode() == AuthenticationMode.TOKEN else "off"
    groups = []
    for child in descendants(os.getpid()):
        try:
            groups.append(os.getpgid(child))
        except ProcessLookupError:  # ended meanwhile
            pass
    print("groups", len(groups), sum(g == os.getpgrp() for g in groups))
    print(os.getpriority(os.PRIO_PROCESS, 0), os.getpriority(os.PRIO_PROCESS, pid), auth)
"""


@pytest.fixture(scope="module")
def own_ray() -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    for name in ("RAY_ADDRESS", "RAY_worker_niceness", "RAY_AUTH_MODE"):
        env.pop(name, None)
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def test_a_store_s_own_local_ray_runs_its_shards_at_the_driver_s_niceness(own_ray):
    driver, shard = map(int, own_ray.stdout.split()[-3:-1])
    assert shard == driver, f"shard actor at nice {shard}, driver at {driver} (Ray's default for workers is 15)"


def test_a_store_s_own_local_ray_keeps_token_authentication_and_does_not_announce_it(own_ray):
    assert own_ray.stdout.split()[-1] == "token"
    assert "Token authentication is enabled" not in own_ray.stderr + own_ray.stdout


def test_the_environment_a_local_ray_is_started_with_is_in_its_workers_and_not_left_in_the_driver(own_ray):
    line = next(x for x in own_ray.stdout.splitlines() if x.startswith("env "))
    assert line == "env inherited None {'PALIMPSEST_PROBE_VAR': 'inherited'}"


def test_no_process_of_a_store_s_own_local_ray_is_in_the_driver_s_process_group(own_ray):
    line = next(x for x in own_ray.stdout.splitlines() if x.startswith("groups "))
    started, in_drivers_group = map(int, line.split()[1:])
    assert started >= 5 and in_drivers_group == 0, line  # GCS, raylet, agents, workers


def test_ray_still_starts_its_processes_where_the_store_sets_their_process_group():
    from actors.ray_init import ray_starts_processes_through

    assert ray_starts_processes_through(), "ray._private.services.ConsolePopen changed: see actors.ray_init"
