"""One table over several benchmark result files: whole-file and leave-conversations-out figures per data set.

    python -m benchmarks.summary bench/locomo10_dev.json bench/realtalk_dev.json bench/memdaily_dev.json --out bench/summary.md
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

KEYS = ("recall@10", "budget_recall@1000")


def _pct(value) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def _row(dataset: str, name: str, whole: dict, held: dict, names: dict) -> str:
    cats = [c for c in ("1", "3") if whole["per_category"].get(c, {}).get("questions")]
    per_cat = " · ".join(f"cat {c} {names.get(c, '')}: {_pct(whole['per_category'][c]['recall@10'])}/"
                         f"{_pct(held['per_category'][c]['recall@10'])}" for c in cats)
    return " | ".join([dataset, name, *[f"{_pct(whole[k])} / {_pct(held[k])}" for k in KEYS], per_cat])


def summarize(results: list[dict]) -> str:
    lines = ["# Retrieval on every dev file: whole file / leave-conversations-out", "",
             "Recall in %. Leave-out: Palimpsest's configuration chosen on the other samples, per fold (its learned "
             "rankers as shipped), and the default with its rankers refitted per fold; a fixed "
             "system's leave-out figure is its whole-file figure. Per category: recall@10 whole/leave-out.", "",
             "| data | system | R@10 | budget 1000 | cat 1 and cat 3 R@10 |", "|---|---|---|---|---|"]
    for result in results:
        names = result.get("category_names", {})
        held = result.get("leave_out") or {}
        for name, whole in result["systems"].items():
            if name.startswith("palimpsest_"):
                continue
            lines.append("| " + _row(result["dataset"], name, whole, whole, names) + " |")
        if held:
            chosen = ", ".join(f["chosen"] for f in held["folds"])
            lines.append("| " + _row(result["dataset"], f"palimpsest, chosen per fold ({chosen}; rankers in-sample)",
                                     result["systems"]["palimpsest"], held["selected"], names) + " |")
        if result.get("leave_out_refit"):
            lines.append("| " + _row(result["dataset"], "palimpsest, rankers refitted per fold",
                                     result["systems"]["palimpsest"], result["leave_out_refit"]["selected"], names)
                         + " |")
        speed, ratios = result["speed"], result.get("ratios", {})
        lines.append(f"| {result['dataset']} | speed | search p95 {speed['search_ms_p95']} ms | context p95 "
                     f"{speed['context_ms_p95']} ms | ingest/encode {_ingest(speed, ratios)}; replay/shard "
                     f"{_rates(speed)} events/s |")
    return "\n".join(lines) + "\n"


def _ingest(speed: dict, ratios: dict) -> str:
    """The ingest ratio (CPU ratio): of the main run, or with ``--speed-runs`` the median and every run's."""
    runs = speed.get("speed_runs") or {}
    if runs.get("runs", 1) < 2:
        return f"{ratios.get('ingest_vs_encode', '–')} (CPU: {ratios.get('ingest_vs_encode_cpu', '–')})"
    each = ", ".join(f"{r:.3f}" for r in runs["ingest_vs_encode_runs"])
    cpu = runs["ingest_vs_encode_cpu_median"]
    return (f"median of {runs['runs']} runs {runs['ingest_vs_encode_median']:.3f} ({each}; CPU median "
            f"{'–' if cpu is None else f'{cpu:.3f}'})")


def _rates(speed: dict) -> str:
    """Each shard's replay in events/s, of wall time (of its thread's CPU time)."""
    wall, cpu = speed.get("replay_events_per_s_per_shard"), speed.get("replay_events_per_cpu_s_per_shard")
    if not wall:
        return "–"
    runs = len(speed.get("replay_runs_seconds_per_shard") or [()])
    rates = ", ".join(f"{w:,.0f}" + (f" ({c:,.0f} CPU)" if c else "") for w, c in zip(wall, cpu or [None] * len(wall)))
    return rates + (f", best of {runs}" if runs > 1 else "")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.summary", description=__doc__.split("\n\n")[0])
    p.add_argument("results", nargs="+", type=Path, help="result JSON files of benchmarks.locomo")
    p.add_argument("--out", type=Path, help="write the Markdown here as well")
    args = p.parse_args(argv)
    missing = [str(r) for r in args.results if not r.is_file()]
    if missing:
        p.error(f"no such result file: {', '.join(missing)}; run python -m benchmarks.locomo --out FILE first")
    md = summarize([json.loads(r.read_text()) for r in args.results])
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(md)
    sys.stdout.write(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
