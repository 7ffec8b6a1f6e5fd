"""``python -m benchmarks.truth --quick`` end to end on Ray with the packaged MiniLM encoder: the report's shape,
its counts, every rate in [0, 1] and the provenance stamp (not the figures: those are what the benchmark measures)."""

from __future__ import annotations

import json

import pytest

from benchmarks import truth
from benchmarks.truth_metrics import METRICS

pytestmark = [pytest.mark.integration, pytest.mark.model]


def test_the_quick_run_writes_a_report_of_rates_per_language_and_kind(ray_cluster, tmp_path, capsys):
    out = tmp_path / "truth.json"
    argv = ["--quick", "--out", str(out), "--num-shards", "1"]
    truth.execute(truth.parse_args(argv), argv)

    result = json.loads(out.read_text(encoding="utf-8"))
    counts = result["counts"]
    assert counts["users"] == 2 and counts["facts"] == 28 and counts["reads"] > 0
    assert set(result["by_language"]) == {"en", "zh"}
    assert set(result["by_kind"]) == {"preference", "decision", "constraint", "multi_clause"}
    assert sum(g["facts"] for g in result["by_language"].values()) == counts["facts"]
    overall = result["overall"]
    assert overall["n_current@1"] == counts["facts"] and overall["n_stale_in_context"] == counts["changed"]
    assert overall["n_constraint_recall"] == counts["constraints"] > 0
    for group in [overall, *result["by_language"].values(), *result["by_kind"].values()]:
        for metric in METRICS:
            assert group[metric] is None or 0.0 <= group[metric] <= 1.0, metric
    assert result["sweep"]["dry_run"] and result["sweep"]["constraint_statements_total"] > 0
    by_source = result["stale_in_context_by_source"]
    stale = round(overall["stale_in_context"] * counts["changed"])
    assert 0 <= by_source["only_replies"] <= by_source["with_reply"] <= stale
    assert max(by_source["with_user_turn"], by_source["with_note"]) <= stale
    assert set(result["provenance"]) >= {"command", "recorded_at", "machine", "commit"}
    assert result["provenance"]["command"].startswith("python -m benchmarks.truth --quick")
    printed = capsys.readouterr().out
    assert all(f"\n{row} " in printed for row in ("overall", "en", "zh", "constraint"))
