"""The CPU account of ``benchmarks.serve --cpu``: processes named by role, CPU summed by role between two
snapshots of this process's tree."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from benchmarks import serve_cpu


@pytest.mark.parametrize(("cmdline", "expected"), [
    ("ray::ShardActor", "shard"),
    ("ray::ServeReplica:palimpsest:palimpsest", "replica"),
    ("ray::ServeController", "serve controller"),
    ("ray::ProxyActor", "serve proxy"),
    ("/x/ray/core/src/ray/raylet/raylet --raylet_socket_name=/tmp/s", "raylet"),
    ("/x/ray/core/src/ray/gcs/gcs_server --log_dir=/tmp", "gcs"),
    ("python -u /x/ray/_private/log_monitor.py --session-dir=/tmp", "ray log monitor"),
    ("ray::DashboardAgent", "ray dashboard agent"),
    ("ray::IDLE", "ray idle worker"),
    ("ray::SomethingNew", "ray other"),
    ("/usr/bin/sleep 5", "other"),
])
def test_processes_are_named_by_role(cmdline, expected):
    assert serve_cpu.role(cmdline, 42, me=1) == expected


def test_the_measuring_process_is_the_load_generator_whatever_its_command_line():
    assert serve_cpu.role("ray::ShardActor", 7, me=7) == "load generator"


def test_cpu_is_summed_by_role_and_a_process_started_between_counts_from_zero():
    before = {1: ("shard", 1.0), 2: ("shard", 2.0), 3: ("replica", 5.0), 4: ("gcs", 1.0)}
    after = {1: ("shard", 1.5), 2: ("shard", 2.25), 3: ("replica", 5.5), 5: ("shard", 0.25)}  # 4 gone, 5 new
    assert serve_cpu.spent(before, after) == {"shard": 1.0, "replica": 0.5}


def test_a_snapshot_holds_this_process_and_its_children_and_their_cpu():
    child = subprocess.Popen([sys.executable, "-c", "import time\nend = time.time() + 0.3\nwhile time.time() < end: "
                              "pass\ntime.sleep(30)"])
    try:
        time.sleep(0.6)
        tree = serve_cpu.snapshot()
        assert tree[child.pid][0] == "other" and tree[child.pid][1] >= 0.1  # its busy 0.3 s, in clock ticks
        assert tree[serve_cpu.os.getpid()][0] == "load generator"
        assert 1 not in tree  # not a descendant
    finally:
        child.kill()
        child.wait()


def test_the_cpu_modes_arguments_are_checked_and_quick_shortens_its_levels(capsys):
    from benchmarks.serve import parse_args

    base = ["--data", "d.json", "--out", "o.json", "--cpu"]
    for extra, said in ((["--overload"], "two modes"), (["--cpu-seconds", "0"], "give positive numbers"),
                        (["--idle-seconds", "-1"], "give positive numbers"), (["--cpu-rate", "0"], "positive")):
        with pytest.raises(SystemExit) as exc:
            parse_args(base + extra)
        assert exc.value.code == 2 and said in capsys.readouterr().err
    args = parse_args(base)
    assert (args.cpu_rate, args.cpu_seconds, args.idle_seconds) == (30.0, 10.0, 10.0)
    quick = parse_args(base + ["--quick"])
    assert (quick.cpu_seconds, quick.idle_seconds, quick.embedder) == (2.0, 2.0, "hash")
