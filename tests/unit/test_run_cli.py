"""The in-process CLI runner reports the CLI's own stderr, not log lines Ray forwards from actors meanwhile."""

from __future__ import annotations

from benchmarks.fuzz_cases import RAY_FORWARDED, run_cli


def test_lines_ray_forwards_from_actors_are_left_out_and_the_cli_own_are_kept():
    forwarded = ("\x1b[36m(ShardActor pid=25595)\x1b[0m 2026-11-24 15:03:07 [info     ] user_erased shard=0\n"
                 "(ShardActor pid=7, ip=10.0.0.2) shard_replayed equal=True\n(raylet, ip=10.0.0.1) spilled\n")
    own = "error: --store: no store at /x; create one with `palimpsest init`\n(note) kept as the CLI printed it\n"
    assert RAY_FORWARDED.sub("", forwarded + own) == own


def test_run_cli_returns_the_exit_code_and_the_error_it_printed(tmp_path):
    rc, err = run_cli(["--store", str(tmp_path / "missing"), "stats"])
    assert rc == 2 and err.startswith("error:") and "Traceback" not in err
