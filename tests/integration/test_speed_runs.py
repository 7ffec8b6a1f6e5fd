"""benchmarks.locomo's extra ingest sandwiches (``--speed-runs``): a fresh store each, removed after, and the
median over every run's ratio."""

from __future__ import annotations

import glob
import tempfile

import pytest

from benchmarks.speed_runs import figures, sandwich, summary
from tests.builders import command

pytestmark = pytest.mark.integration


def test_a_sandwich_ingests_into_a_fresh_store_and_leaves_nothing_behind(ray_cluster):
    messages = [command(f"Turn {i}: I went hiking near lake {i} with my sister.", i, user_id=f"u{i % 2}")
                for i in range(40)]
    texts = [m["text"] for m in messages]
    before = set(glob.glob(f"{tempfile.gettempdir()}/palimpsest-speed-*"))
    run = sandwich(messages, texts, tenant="acme", languages=("en",), num_shards=1, embedder="hash")
    assert set(glob.glob(f"{tempfile.gettempdir()}/palimpsest-speed-*")) == before
    assert run["ingest_seconds"] > 0 and len(run["encode_only_seconds_before_after"]) == 2
    assert run["ingest_vs_encode"] > 0  # the CPU ratio of so short a run may be None: /proc counts 10 ms ticks
    assert run["ingest_vs_encode_cpu"] is None or run["ingest_vs_encode_cpu"] >= 0


def test_the_median_is_over_every_run_and_each_run_is_kept():
    runs = [figures(10.0, {"total": 20.0}, [8.0, 10.0], [{"total": 17.0}, {"total": 19.0}]),
            figures(10.0, {"total": 20.0}, [6.0, 6.0], [{"total": 12.0}, {"total": 12.0}]),
            figures(10.0, {"total": 20.0}, [9.5, 9.5], [{"total": 19.0}, {"total": 19.0}])]
    out = summary(runs)
    assert out["runs"] == 3 and out["ingest_vs_encode_runs"] == pytest.approx([0.9, 0.6, 0.95])
    assert out["ingest_vs_encode_median"] == pytest.approx(0.9)
    assert out["ingest_vs_encode_cpu_median"] == pytest.approx(0.9)


def test_a_run_too_short_for_a_cpu_figure_is_left_out_of_the_cpu_median():
    runs = [figures(1.0, {"total": 0.0}, [1.0, 1.0], [{"total": 0.0}, {"total": 0.0}]),
            figures(10.0, {"total": 20.0}, [9.0, 9.0], [{"total": 18.0}, {"total": 18.0}])]
    out = summary(runs)
    assert out["ingest_vs_encode_cpu_runs"] == [None, pytest.approx(0.9)]
    assert out["ingest_vs_encode_cpu_median"] == pytest.approx(0.9)
