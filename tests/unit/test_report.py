"""The benchmarks' documentation page: ``python -m benchmarks.report`` turns result files into one Markdown page
of tables and PNG charts, each naming the command, the date and the machine of its run."""

from __future__ import annotations

import json
import os
import re
import struct

import pytest

pytest.importorskip("matplotlib", reason="the charts need matplotlib: pip install matplotlib")

from benchmarks import report  # noqa: E402

CATEGORIES = {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop", "5": "adversarial"}
PROVENANCE = {"command": "python -m benchmarks.locomo --data dev.json --out bench/locomo_dev.json",
              "recorded_at": "2026-11-28T21:14:05+00:00", "commit": "0a9b4aa",
              "machine": {"cpu": "Test CPU 3000", "cores": 2, "memory_gb": 23.4, "system": "Linux x86_64",
                          "python": "3.11.7", "load_average_1m": 0.31}}


def system(recall: float) -> dict:
    row = {"recall@5": recall - 0.1, "recall@10": recall, "budget_recall@500": recall,
           "budget_recall@1000": recall + 0.05, "budget_recall@2000": recall + 0.08, "context_tokens_mean": 1990.0}
    per_category = {c: {**row, "recall@10": recall - 0.02 * int(c), "questions": 10} for c in CATEGORIES}
    return {**row, "questions": 50, "per_category": per_category, "cat1_4": {**row, "questions": 40}}


def retrieval(provenance: dict | None) -> dict:
    latency = {"search_ms_p50": 11.3, "search_ms_p95": 15.3, "context_ms_p50": 8.8, "context_ms_p95": 11.3}
    result = {
        "dataset": "locomo10_dev.json", "questions": 50, "messages": 400, "category_names": CATEGORIES,
        "systems": {"palimpsest": system(0.8), "palimpsest_no_episodes": system(0.78), "bm25": system(0.55),
                    "dense": system(0.52), "rrf": system(0.57)},
        "speed": {**latency, "ingest_messages_per_s": 95.0, "encode_only_messages_per_s": 110.0,
                  "replay_events_per_s": 30000.0, "peak_rss_mb": 2100.0,
                  "replay_events_per_s_per_shard": [31000.0, 29000.0],
                  "latency_by_system": {"palimpsest": latency, "palimpsest_prf": latency}},
        "leave_out": {"folds": [{"held_out": ["a"], "chosen": "palimpsest"}] * 2,
                      "selected": {"recall@10": 0.79, "budget_recall@1000": 0.84}},
        "leave_out_refit": {"folds": [{"held_out": ["a"]}] * 2, "also_trained_on": [],
                            "selected": {"recall@10": 0.77, "budget_recall@1000": 0.83}},
        "config": {"data": "../shared/data/locomo/locomo10_dev.json", "limit_samples": None, "embedder": "minilm",
                   "model_id": "sentence-transformers/all-MiniLM-L6-v2", "store": "temporary"},
        "host": {"cpu_count": 2, "loadavg_1m_start": 0.4, "loadavg_1m_end": 1.1},
    }
    return {**result, "provenance": provenance} if provenance else result


def serving() -> dict:
    def level(clients: int, rate: float, p50: float) -> dict:
        endpoint = {"n": 10, "p50_ms": p50, "p95_ms": 3 * p50, "p99_ms": 6 * p50, "throughput_per_s": rate / 5,
                    "errors": {}}
        return {"clients": clients, "target_rate_per_s": rate, "seconds": 20.0, "requests": int(20 * rate),
                "achieved_rate_per_s": rate * 0.98, "errors": 0,
                "endpoints": {e: endpoint for e in ("search", "context", "notes", "ingest", "mcp")}}

    return {"load": {"messages": 400, "seconds": 4.0, "messages_per_s": 100.0, "errors": 0},
            "same_hits": {"questions": 20, "same_hits": 20, "recall@10": {"served": 0.8, "in_process": 0.8},
                          "served_search": {"p50_ms": 21.7}, "in_process_search": {"p50_ms": 17.7}},
            "levels": [level(1, 2, 20.0), level(8, 8, 21.0), level(32, 16, 35.0), level(64, 32, 90.0)],
            "errors_total": 0, "exactly_once": {"acknowledged": 560, "lost": 0, "duplicated": 0},
            "config": {"data": "../shared/data/locomo/locomo10_dev.json", "embedder": "minilm", "tenants": 3,
                       "replicas": 1, "ingress": "direct", "seconds_per_level": 20.0, "quick": False, "cpus": 2,
                       "load_average_before": [0.5, 0.4, 0.3]}}


def cluster() -> dict:
    return {"cores": 2, "load_average_at_end": [1.2, 1.0, 0.9], "shards": 3, "writers": 6, "messages": 6000,
            "batch": 50, "pinned": True,
            "runs": [{"nodes": n, "messages_per_s": 400.0 * n ** 0.8, "speedup": round(n ** 0.8, 2),
                      "shards_per_node": [3 // n] * n} for n in (1, 2, 3)]}


def is_png(path) -> tuple[int, int]:
    """(width, height) from the PNG header; fails unless the file is a PNG."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    return struct.unpack(">II", data[16:24])


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("results")
    files = {"locomo_dev.json": retrieval(PROVENANCE), "realtalk_dev.json": retrieval(None),
             "serve.json": serving(), "multinode.json": cluster()}
    for name, result in files.items():
        (tmp_path / name).write_text(json.dumps(result), encoding="utf-8")
    os.utime(tmp_path / "realtalk_dev.json", (1_764_000_000, 1_764_000_000))  # 2025-11-24 16:00 UTC
    return [tmp_path / name for name in files]


@pytest.fixture(scope="module")
def written(results, tmp_path_factory):
    """The page and charts of every kind of result file, drawn once for the tests that only read them."""
    out = tmp_path_factory.mktemp("docs") / "benchmarks"
    assert report.main([*map(str, results), "--out", str(out)]) == 0
    return out


def test_the_report_writes_one_page_whose_every_chart_exists_and_is_a_png(written):
    out = written
    page = (out / "results.md").read_text(encoding="utf-8")
    images = re.findall(r"!\[[^\]]+\]\(([^)]+)\)", page)
    assert len(images) == 4 + 4 + 2 + 1  # two retrieval runs, the serving run, the cluster run
    assert sorted(images) == sorted(p.name for p in out.glob("*.png"))
    for name in images:
        width, height = is_png(out / name)
        assert width >= 600 and height >= 300
    for heading in ("## Retrieval at a glance", "## Retrieval: locomo10_dev.json (minilm)", "## Serving:",
                    "## Ingest on a Ray cluster", "### Variants", "### Latency and throughput"):
        assert heading in page
    assert "| palimpsest | 70.0 | 80.0 | 80.0 | 85.0 | 88.0 | 1990 |" in page
    assert "| palimpsest_no_episodes | 78.0 | -2.0 | 83.0 | -2.0 |" in page  # variants in points vs the default
    assert "| 64 | 32 | 31.36 | 0 | 90.0 / 270.0 / 540.0 |" in page
    assert "rankers refitted per fold on the other conversations (2 folds, in process): R@10 77.0" in page
    # at a glance: whole file, held out (the refit's figures when the run refitted), best baseline, ingest, latency
    assert ("| locomo10_dev.json (minilm) | 80.0 / 85.0 | 77.0 / 83.0 | rrf 57.0 / 62.0 | 95.0 | 11.3 / 15.3 ms | "
            "8.8 / 11.3 ms |") in page


def test_at_a_glance_a_run_without_a_refit_shows_its_chosen_configurations_held_out_figures(tmp_path):
    result = retrieval(PROVENANCE)
    del result["leave_out_refit"]
    result["speed"]["ingest_messages_per_s"] = None  # a run on a reused store measures no ingest
    (tmp_path / "r.json").write_text(json.dumps(result), encoding="utf-8")
    assert report.main([str(tmp_path / "r.json"), "--out", str(tmp_path / "out")]) == 0
    page = (tmp_path / "out" / "results.md").read_text(encoding="utf-8")
    assert "| locomo10_dev.json (minilm) | 80.0 / 85.0 | 79.0 / 84.0 | rrf 57.0 / 62.0 | – | 11.3 / 15.3 ms |" in page


def test_every_run_states_its_command_date_and_machine(written):
    page = (written / "results.md").read_text(encoding="utf-8")
    runs = [line for line in page.splitlines() if line.startswith("Run:")]
    assert len(runs) == 4
    assert runs[0] == ("Run: `python -m benchmarks.locomo --data dev.json --out bench/locomo_dev.json` · "
                       "2026-11-28 21:14 UTC · 2 cores (Test CPU 3000), 23.4 GB, load 0.31 · commit `0a9b4aa`")
    # a file older than the provenance stamp: the command rebuilt from its config, the file's own date
    assert runs[1].startswith("Run: `python -m benchmarks.locomo --data ../shared/data/locomo/locomo10_dev.json "
                              "--out ")
    assert ("(rebuilt from the file's config) · 2025-11-24 16:00 UTC (date of the file) · 2 cores, load 0.40"
            in runs[1])
    assert runs[2].startswith("Run: `python -m benchmarks.serve --data ../shared/data/locomo/locomo10_dev.json")
    assert runs[3].startswith("Run: `python -m benchmarks.multinode --nodes 1,2,3 --shards 3")


def test_a_second_run_removes_the_charts_the_first_one_drew_and_this_one_does_not(results, tmp_path):
    out = tmp_path / "out"
    report.main([str(results[2]), str(results[3]), "--out", str(out)])
    stray = out / "hand-made.png"
    stray.write_bytes(b"not the report's")
    report.main([str(results[3]), "--out", str(out)])
    assert sorted(p.name for p in out.glob("*.png")) == sorted(
        [stray.name, *re.findall(r"\]\(([^)]+\.png)\)", (out / "results.md").read_text(encoding="utf-8"))])
    assert "## Serving" not in (out / "results.md").read_text(encoding="utf-8")


def test_a_file_no_benchmark_wrote_is_refused_with_what_to_pass(tmp_path, capsys):
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"hello": 1}), encoding="utf-8")
    with pytest.raises(SystemExit):
        report.main([str(other), "--out", str(tmp_path / "out")])
    assert "not a result of benchmarks.locomo, benchmarks.serve or benchmarks.multinode" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_systems_to_chart_must_be_in_the_files(results, tmp_path, capsys):
    with pytest.raises(SystemExit):
        report.main([str(results[0]), "--systems", "palimpsest,nonesuch", "--out", str(tmp_path / "out")])
    assert "nonesuch" in capsys.readouterr().err
