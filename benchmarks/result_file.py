"""A benchmark run's result file (JSON) and its Markdown summary, written next to it (``benchmarks.locomo``).

The documentation's page of the latest runs is drawn from these files by ``python -m benchmarks.report``.
"""

from __future__ import annotations

import json
from pathlib import Path

SPEED_KEYS = (
    "ingest_messages_per_s",
    "encode_only_messages_per_s",
    "search_ms_p50",
    "search_ms_p95",
    "context_ms_p50",
    "context_ms_p95",
    "replay_events_per_s",
    "peak_rss_mb",
)


def _round(value, digits: int):
    if isinstance(value, float):
        return round(value, digits)
    if isinstance(value, dict):
        return {k: _round(v, digits) for k, v in value.items()}
    if isinstance(value, list):
        return [_round(v, digits) for v in value]
    return value


def build(dataset: str, questions: int, systems: dict, speed: dict, extra: dict) -> dict:
    missing = [k for k in SPEED_KEYS if k not in speed]
    if missing:
        raise ValueError(f"speed figures missing: {missing}")
    return {
        "dataset": dataset,
        "questions": questions,
        "systems": _round(systems, 4),
        "speed": {**{k: _round(speed[k], 2) for k in SPEED_KEYS}, **_round({k: v for k, v in speed.items() if k not in SPEED_KEYS}, 3)},
        **_round(extra, 4),
    }


def _pct(value) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def _tok(value) -> str:
    return "–" if value is None else f"{value:.0f}"


def _recall_table(systems: dict, pick, keys: list[str], title: str) -> list[str]:
    recall_keys = [k for k in keys if k != "context_tokens_mean"]
    head = ["system", *[k.replace("budget_recall@", "budget ").replace("recall@", "R@") for k in recall_keys], "ctx tokens"]
    lines = [f"**{title}**", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, result in systems.items():
        row = pick(result)
        lines.append(
            "| " + " | ".join([name, *[_pct(row[k]) for k in recall_keys], _tok(row["context_tokens_mean"])]) + " |"
        )
    return lines + [""]


def _leave_out(result: dict, keys: list[str], cats: list[str], names: dict) -> list[str]:
    """Held-out figures of the per-fold choice next to each fixed system's (whole-file = leave-out for those)."""
    held = result.get("leave_out")
    if not held:
        return []
    chosen = ", ".join(f"{'+'.join(f['held_out'])} → {f['chosen']}" for f in held["folds"])
    systems = {"palimpsest (chosen per fold)": held["selected"],
               **{n: r for n, r in result["systems"].items() if not n.startswith("palimpsest_")}}
    lines = _recall_table(systems, lambda r: r, keys, f"Configuration chosen per fold ({len(held['folds'])} folds; "
                          f"held out → chosen: {chosen}; learned rankers as shipped, in-sample: the refit below "
                          "is the held-out figure)")
    per_cat = held["selected"]["per_category"]
    lines += ["**Leave-out recall@10 / budget 1000 per category (chosen per fold)**", "",
              "| " + " | ".join(f"cat {c} {names.get(c, '')}" for c in cats) + " |", "|" + "---|" * len(cats),
              "| " + " | ".join(f"{_pct(per_cat[c]['recall@10'])} / {_pct(per_cat[c]['budget_recall@1000'])}"
                                for c in cats) + " |", ""]
    return lines


def _leave_out_refit(result: dict, keys: list[str], cats: list[str], names: dict) -> list[str]:
    """The default with its learned rankers refitted per fold (benchmarks.ranker_refit) next to the shipped ones,
    both scored in process: the held-out figure of a learned stage."""
    refit = result.get("leave_out_refit")
    if not refit:
        return []
    also = f", also trained on {', '.join(refit['also_trained_on'])}" if refit["also_trained_on"] else ""
    systems = {"palimpsest, rankers refitted per fold (leave-out)": refit["selected"],
               "palimpsest, shipped rankers (in-sample)": refit["shipped_in_process"]}
    lines = _recall_table(systems, lambda r: r, keys, f"Leave-conversations-out, learned rankers refitted per fold "
                          f"({len(refit['folds'])} folds{also}; in process on the folded store)")
    per_cat = refit["selected"]["per_category"]
    return lines + ["**Refitted leave-out recall@10 / budget 1000 per category**", "",
                    "| " + " | ".join(f"cat {c} {names.get(c, '')}" for c in cats) + " |", "|" + "---|" * len(cats),
                    "| " + " | ".join(f"{_pct(per_cat[c]['recall@10'])} / {_pct(per_cat[c]['budget_recall@1000'])}"
                                      for c in cats) + " |", ""]


def markdown(result: dict, keys: list[str]) -> str:
    systems = result["systems"]
    first = next(iter(systems.values()))
    lines = [
        f"# LoCoMo retrieval: {result['dataset']}",
        "",
        f"{result['questions']} scored questions ({result.get('skipped_questions', 0)} skipped: no parsable "
        f"evidence), {result.get('messages', '?')} turns. Recall in %, turn level; context tokens at the "
        "largest budget, counted with the embedding model's tokenizer.",
        "",
    ]
    lines += _recall_table(systems, lambda r: r, keys, f"All categories ({first['questions']} questions)")
    lines += _recall_table(systems, lambda r: r["cat1_4"], keys, f"Categories 1-4 ({first['cat1_4']['questions']} questions)")
    names = result.get("category_names", {})
    cats = [c for c in first["per_category"] if first["per_category"][c]["questions"]]
    head = ["system", *[f"cat {c} {names.get(c, '')} (n={first['per_category'][c]['questions']})".replace("  ", " ")
                        for c in cats]]
    for metric in ("recall@10", "budget_recall@1000", "budget_recall@2000"):
        if metric not in keys:
            continue
        lines += [f"**{metric} per category**", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for name, r in systems.items():
            lines.append("| " + " | ".join([name, *[_pct(r["per_category"][c][metric]) for c in cats]]) + " |")
        lines.append("")
    lines += _leave_out(result, keys, cats, names)
    lines += _leave_out_refit(result, keys, cats, names)
    ceiling = result.get("ceiling", {})
    if ceiling:
        lines += [f"Full-context ceiling: recall 100 %, {ceiling['full_context_tokens_mean']:.0f} tokens per question.", ""]
    speed = result["speed"]
    lines += ["**Speed**", "", "| figure | value |", "|---|---|"]
    lines += [f"| {k} | {speed[k]} |" for k in SPEED_KEYS]
    lines += [f"| {k} | {v} |" for k, v in result.get("ratios", {}).items()]
    for name, figures in speed.get("latency_by_system", {}).items():
        lines += [f"| {name} {k} | {v} |" for k, v in figures.items()]
    return "\n".join(lines) + "\n"


def write(result: dict, out: Path, keys: list[str]) -> str:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    md = markdown(result, keys)
    out.with_suffix(".md").write_text(md)
    return md
