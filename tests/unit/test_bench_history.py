"""``benchmarks.history_scale`` on a short history: a row per size, with what an ingest, a search and a context cost."""

from __future__ import annotations

import json

import pytest

from benchmarks import history_scale


def test_a_short_run_reports_each_size_and_writes_its_summary(tmp_path):
    out = tmp_path / "history.json"
    assert history_scale.main(["--sizes", "40,80", "--queries", "3", "--window", "20", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert [r["messages"] for r in report["sizes"]] == [40, 80]
    for row in report["sizes"]:
        assert 0 < row["ingest"]["p50_ms"] <= row["ingest"]["p95_ms"]
        assert 0 < row["search"]["p50_ms"] and 0 < row["context"]["p50_ms"]
    assert report["sizes"][-1]["active_notes"] + report["sizes"][-1]["closed_notes"] > 0
    assert "| 80 |" in out.with_suffix(".md").read_text()


def test_sizes_must_be_message_counts():
    with pytest.raises(SystemExit):
        history_scale.parse_args(["--sizes", "0"])
