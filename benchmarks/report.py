"""The documentation's page of the latest benchmark runs: Markdown tables and PNG charts in docs/benchmarks/.

    python -m benchmarks.report                        # the result files of make bench, bench-serve, bench-multinode
    python -m benchmarks.report bench/a.json bench/serve.json --out docs/benchmarks

Reads the result files of ``benchmarks.locomo`` (retrieval), ``benchmarks.serve`` (serving) and
``benchmarks.multinode`` (cluster ingest) and writes ``results.md`` with its charts: recall@10 per category and
system, recall against the context budget, search and context latency, ingest and replay throughput, served
latency and throughput against the offered load, ingest against the number of nodes. Every table and chart
states the command, the date and the machine of its run (``benchmarks.provenance``; a file older than that is
described from its config and its date). A chart an earlier page named and this one does not is removed.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "benchmarks"
PAGE = "results.md"
DEFAULT_FILES = ("bench/locomo_dev.json", "bench/locomo10_dev.json", "bench/realtalk_dev.json",
                 "bench/memdaily_dev.json", "bench/serve.json", "bench/multinode.json")
LATENCY = (("search", "p50"), ("search", "p95"), ("context", "p50"), ("context", "p95"))
IMAGE = re.compile(r"\]\(([^)/\s]+\.png)\)")


def _pct(value) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def _tok(value) -> str:
    return "–" if value is None else f"{value:.0f}"


def kind(result: dict) -> str | None:
    """Which benchmark wrote ``result``: ``retrieval`` (locomo), ``serving`` (serve), ``cluster`` (multinode)."""
    if "systems" in result and "speed" in result:
        return "retrieval"
    if "levels" in result and "same_hits" in result:
        return "serving"
    runs = result.get("runs")
    if isinstance(runs, list) and runs and isinstance(runs[0], dict) and "nodes" in runs[0]:
        return "cluster"
    return None


@dataclass(frozen=True)
class Source:
    """Where one result file came from, as its figures and tables state it."""

    command: str
    date: str
    machine: str
    commit: str | None = None
    rebuilt: bool = False  # a file older than benchmarks.provenance: the command is rebuilt from its config

    def line(self) -> str:
        command = self.command + (" (rebuilt from the file's config)" if self.rebuilt else "")
        return " · ".join(x for x in (command, self.date, self.machine, self.commit and f"commit {self.commit}") if x)

    def markdown(self) -> str:
        rest = " · ".join(x for x in (self.date, self.machine, self.commit and f"commit `{self.commit}`") if x)
        return f"Run: `{self.command}`" + (" (rebuilt from the file's config)" if self.rebuilt else "") + f" · {rest}"


def _machine_text(cores, cpu=None, memory_gb=None, load=None) -> str:
    parts = [f"{cores} cores" + (f" ({cpu})" if cpu else ""), memory_gb and f"{memory_gb:g} GB",
             load is not None and f"load {load:.2f}"]
    return ", ".join(p for p in parts if p)


def _rebuilt_command(result: dict, what: str, path: Path) -> tuple[list[str], object, object]:
    """A file written before results carried their provenance: its command from its config, its cores and load."""
    if what == "retrieval":
        c, host = result.get("config", {}), result.get("host", {})
        args = ["benchmarks.locomo", "--data", c.get("data", "?")]
        args += ["--limit-samples", str(c["limit_samples"])] if c.get("limit_samples") else []
        args += ["--embedder", c["embedder"]] if c.get("embedder", "minilm") != "minilm" else []
        args += ["--store", c["store"]] if c.get("store", "temporary") != "temporary" else []
        args += ["--reuse"] if result["speed"].get("ingest_reused_store") else []
        return args + ["--out", _shown(path)], host.get("cpu_count"), host.get("loadavg_1m_start")
    if what == "serving":
        c = result.get("config", {})
        args = ["benchmarks.serve", "--data", c.get("data", "?")]
        args += ["--quick"] if c.get("quick") else ["--embedder", c.get("embedder", "minilm")]
        args += ["--seconds", f"{c['seconds_per_level']:g}"] if "seconds_per_level" in c else []
        return args + ["--out", _shown(path)], c.get("cpus"), (c.get("load_average_before") or [None])[0]
    args = ["benchmarks.multinode", "--nodes", ",".join(str(r["nodes"]) for r in result["runs"]),
            "--shards", str(result.get("shards")), "--writers", str(result.get("writers")),
            "--messages", str(result.get("messages")), "--batch", str(result.get("batch"))]
    args += [] if result.get("pinned", True) else ["--no-pin"]
    return args + ["--out", _shown(path)], result.get("cores"), (result.get("load_average_at_end") or [None])[0]


def source(result: dict, path: Path) -> Source:
    """The run's own provenance (benchmarks.provenance), or for an older file what its fields and date tell."""
    stamp = result.get("provenance")
    if stamp:
        m = stamp.get("machine", {})
        when = datetime.fromisoformat(stamp["recorded_at"]).astimezone(UTC)
        return Source(stamp["command"], f"{when:%Y-%m-%d %H:%M} UTC",
                      _machine_text(m.get("cores"), m.get("cpu"), m.get("memory_gb"), m.get("load_average_1m")),
                      stamp.get("commit"))
    args, cores, load = _rebuilt_command(result, kind(result), path)
    when = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    return Source(shlex.join(["python", "-m", *args]), f"{when:%Y-%m-%d %H:%M} UTC (date of the file)",
                  _machine_text(cores, load=load), rebuilt=True)


def _table(head: list[str], rows: list[list]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head),
            *["| " + " | ".join(str(c) for c in row) + " |" for row in rows], ""]


def _ms(value) -> str:
    return "–" if value is None else f"{value:.1f}"


def _label(key: str) -> str:
    return key.replace("budget_recall@", "budget ").replace("recall@", "R@")


def chart_systems(result: dict, wanted: list[str] | None) -> list[str]:
    """The systems drawn: those of ``wanted`` this run has, else Palimpsest's default and the baselines."""
    picked = [name for name in wanted or () if name in result["systems"]]
    return picked or [n for n in result["systems"] if n == "palimpsest" or not n.startswith("palimpsest")]


def _run_name(result: dict) -> str:
    """The data set, its part and the encoder: what tells two retrieval runs apart."""
    config = result.get("config", {})
    part = f", first {config['limit_samples']} conversations" if config.get("limit_samples") else ""
    return f"{result['dataset']}{part} ({config.get('embedder', '?')})"


def _retrieval(result: dict, src: Source, slug: str, out: Path, wanted: list[str] | None) -> tuple[list[str], list]:
    from benchmarks import charts

    systems, names = result["systems"], result.get("category_names", {})
    shown = chart_systems(result, wanted)
    first = systems[shown[0]]
    keys = [k for k in first if k.startswith(("recall@", "budget_recall@"))]
    budgets = sorted(int(k.split("@")[1]) for k in keys if k.startswith("budget_recall@"))
    cats = [c for c, row in first["per_category"].items() if row["questions"]]
    config, dataset = result.get("config", {}), _run_name(result)
    pngs: list[Path] = []
    lines = [f"## Retrieval: {dataset}", "", src.markdown(), "",
             f"{result['questions']} scored questions over {result.get('messages', '?')} turns; encoder "
             f"`{config.get('model_id') or config.get('embedder', '?')}`. Evidence recall in %: R@k over the top k "
             "hits, budget N over the context cut at N tokens.", ""]
    lines += _table(["system", *map(_label, keys), "context tokens"],
                    [[n, *[_pct(systems[n][k]) for k in keys], _tok(systems[n]["context_tokens_mean"])]
                     for n in shown])
    held, middle = result.get("leave_out"), _middle_budget(budgets)
    if held:
        lines += [f"The configuration chosen on the other conversations ({len(held['folds'])} folds; its learned "
                  f"rankers as shipped, fitted on these questions): R@10 {_pct(held['selected'].get('recall@10'))}"
                  + (f", {_label(middle)} {_pct(held['selected'].get(middle))}" if middle else "") + ".", ""]
    refit = result.get("leave_out_refit")
    if refit:
        lines += [f"Leave-conversations-out, the learned rankers refitted per fold on the other conversations "
                  f"({len(refit['folds'])} folds, in process): R@10 {_pct(refit['selected'].get('recall@10'))}"
                  + (f", {_label(middle)} {_pct(refit['selected'].get(middle))}" if middle else "") + ".", ""]
    groups = [f"{names.get(c, 'category ' + c)}\n(n={first['per_category'][c]['questions']})" for c in cats]
    pngs.append(charts.grouped_bars(
        out / f"{slug}-recall-by-category.png", f"Recall@10 per question category — {dataset}", groups,
        {n: [systems[n]["per_category"][c]["recall@10"] for c in cats] for n in shown},
        ylabel="recall@10", source=src.line(), percent=True))
    lines += [f"![Recall@10 per category, {dataset}]({pngs[-1].name})", ""]
    lines += _table(["category", "questions", *shown],
                    [[names.get(c, c), first["per_category"][c]["questions"],
                      *[_pct(systems[n]["per_category"][c]["recall@10"]) for n in shown]] for c in cats])
    if budgets:
        pngs.append(charts.lines(
            out / f"{slug}-recall-vs-budget.png", f"Evidence recall vs context budget — {dataset}", budgets,
            {n: [systems[n][f"budget_recall@{b}"] for b in budgets] for n in shown},
            xlabel="context budget (tokens)", ylabel="evidence recall", source=src.line(), percent=True))
        lines += [f"![Recall vs context budget, {dataset}]({pngs[-1].name})", ""]
    lines += _ablations(systems, shown, middle)
    more, speed_pngs = _speed(result, src, slug, out)
    return lines + more, pngs + speed_pngs


def _middle_budget(budgets: list[int]) -> str | None:
    """The budget the one-number tables quote (1000 of 500/1000/2000)."""
    return f"budget_recall@{budgets[len(budgets) // 2]}" if budgets else None


def _ablations(systems: dict, shown: list[str], middle: str | None) -> list[str]:
    """Palimpsest with one stage changed, in points against the default (only when the run had them)."""
    if "palimpsest" not in systems:
        return []
    rest = [n for n in systems if n.startswith("palimpsest_") and n not in shown]
    if not rest:
        return []
    keys = ["recall@10", *([middle] if middle else [])]
    base = systems["palimpsest"]

    def delta(name: str, key: str) -> str:
        points = round(100 * (systems[name][key] - base[key]), 1)
        return f"{points:+.1f}" if points else "0.0"

    head = ["variant", *[x for k in keys for x in (_label(k), "vs default")]]
    rows = [[n, *[x for k in keys for x in (_pct(systems[n][k]), delta(n, k))]] for n in rest]
    return ["### Variants", "", "The same store searched with one stage of Palimpsest changed or switched off; "
            "differences in points against the default.", "", *_table(head, rows)]


def _speed(result: dict, src: Source, slug: str, out: Path) -> tuple[list[str], list]:
    from benchmarks import charts

    speed, dataset = result["speed"], _run_name(result)
    by_system = speed.get("latency_by_system") or {
        "palimpsest": {f"{op}_ms_{q}": speed.get(f"{op}_ms_{q}") for op, q in LATENCY}}
    lines = ["### Latency and throughput", "",
             "Search and context latency through Ray, one query at a time, in milliseconds.", ""]
    lines += _table(["system", *[f"{op} {q}" for op, q in LATENCY]],
                    [[n, *[_ms(fig.get(f"{op}_ms_{q}")) for op, q in LATENCY]] for n, fig in by_system.items()])
    pngs = [charts.grouped_bars(
        out / f"{slug}-latency.png", f"Search and context latency (ms) — {dataset}",
        [f"{op} {q}" for op, q in LATENCY],
        {n: [fig.get(f"{op}_ms_{q}") for op, q in LATENCY] for n, fig in by_system.items()},
        ylabel="milliseconds", source=src.line())]
    lines += [f"![Latency percentiles, {dataset}]({pngs[-1].name})", ""]
    shards = speed.get("replay_events_per_s_per_shard") or []
    rows = [["ingest (messages/s)", _tok(speed.get("ingest_messages_per_s"))],
            ["encoder alone on the same texts (messages/s)", _tok(speed.get("encode_only_messages_per_s"))],
            ["replay, whole store (events/s, over the slowest shard)", _tok(speed.get("replay_events_per_s"))],
            *[[f"replay, shard {i} (events/s)", _tok(v)] for i, v in enumerate(shards)],
            ["peak memory (MB)", _tok(speed.get("peak_rss_mb"))]]
    lines += _table(["figure", "value"], rows)
    pngs.append(charts.two_bar_panels(
        out / f"{slug}-throughput.png", f"Ingest and replay throughput — {dataset}",
        ("messages/s", {"ingest": speed.get("ingest_messages_per_s"),
                        "encoder alone": speed.get("encode_only_messages_per_s")}),
        ("replay events/s", {f"shard {i}": v for i, v in enumerate(shards)} or
         {"whole store": speed.get("replay_events_per_s")}),
        source=src.line()))
    lines += [f"![Ingest and replay throughput, {dataset}]({pngs[-1].name})", ""]
    return lines, pngs


def _serving(result: dict, src: Source, slug: str, out: Path) -> tuple[list[str], list]:
    from benchmarks import charts

    levels, hits, once = result["levels"], result["same_hits"], result.get("exactly_once", {})
    config = result.get("config", {})
    data = f"{Path(config.get('data', '?')).name} ({config.get('embedder', '?')})"
    recall = hits.get("recall@10", {})
    lines = [f"## Serving: {data}", "", src.markdown(), "",
             f"One served store ({config.get('replicas', '?')} replica, {config.get('ingress', '?')} ingress, "
             f"{config.get('tenants', '?')} tenants, encoder `{config.get('embedder', '?')}`) under a mixed open-loop "
             "load; a request's latency runs from its scheduled start.", ""]
    lines += _table(["figure", "value"], [
        ["same hits served and in-process", f"{hits['same_hits']} / {hits['questions']} questions"],
        ["recall@10 served / in-process", f"{_pct(recall.get('served'))} / {_pct(recall.get('in_process'))}"],
        ["one client, search p50", f"{_ms(hits['served_search']['p50_ms'])} ms served, "
                                   f"{_ms(hits['in_process_search']['p50_ms'])} ms in-process"],
        ["ingest over HTTP (messages/s)", result.get("load", {}).get("messages_per_s", "–")],
        ["errors", result.get("errors_total", "–")],
        ["acknowledged / lost / duplicated messages",
         f"{once.get('acknowledged', '–')} / {once.get('lost', '–')} / {once.get('duplicated', '–')}"]])
    endpoints = list(levels[0]["endpoints"])
    lines += _table(["clients", "offered req/s", "done req/s", "errors", "search p50 / p95 / p99 ms",
                     *[f"{e} p95 ms" for e in endpoints if e != "search"]],
                    [[lv["clients"], f"{lv['target_rate_per_s']:g}", lv["achieved_rate_per_s"], lv["errors"],
                      " / ".join(_ms(lv["endpoints"]["search"][f"p{q}_ms"]) for q in (50, 95, 99)),
                      *[_ms(lv["endpoints"][e]["p95_ms"]) for e in endpoints if e != "search"]] for lv in levels])
    offered = [lv["target_rate_per_s"] for lv in levels]
    ticks = [f"{lv['target_rate_per_s']:g}/s\n{lv['clients']} client{'s' * (lv['clients'] != 1)}" for lv in levels]
    series = {f"search p{q}": [lv["endpoints"]["search"][f"p{q}_ms"] for lv in levels] for q in (50, 95, 99)}
    others = {f"{e} p95": [lv["endpoints"][e]["p95_ms"] for lv in levels] for e in endpoints if e != "search"}
    pngs = [charts.lines(out / f"{slug}-latency-vs-load.png", f"Served latency vs offered load — {data}", offered,
                         {**series, **others}, xlabel="offered load", ylabel="milliseconds (log)",
                         source=src.line(), log_y=True, x_labels=ticks, dashed=list(others))]
    lines += [f"![Served latency vs offered load, {data}]({pngs[-1].name})", ""]
    pngs.append(charts.lines(out / f"{slug}-throughput.png", f"Served throughput vs offered load — {data}", offered,
                             {"done": [lv["achieved_rate_per_s"] for lv in levels], "offered": offered},
                             xlabel="offered load", ylabel="requests/s", source=src.line(), x_labels=ticks,
                             dashed=["offered"]))
    lines += [f"![Served throughput vs offered load, {data}]({pngs[-1].name})", ""]
    return lines, pngs


def _cluster(result: dict, src: Source, slug: str, out: Path) -> tuple[list[str], list]:
    from benchmarks import charts

    runs = result["runs"]
    nodes = [r["nodes"] for r in runs]
    base = runs[0]["messages_per_s"] / runs[0]["nodes"]
    lines = ["## Ingest on a Ray cluster", "", src.markdown(), "",
             f"Local Ray clusters of one-CPU nodes, {result.get('shards', '?')} shards, {result.get('writers', '?')} "
             f"writers, {result.get('messages', '?')} messages per run.", ""]
    lines += _table(["nodes", "messages/s", "speed-up", "shards per node"],
                    [[r["nodes"], r["messages_per_s"], r.get("speedup", "–"), r.get("shards_per_node", "–")]
                     for r in runs])
    png = charts.lines(out / f"{slug}-ingest.png", "Ingest throughput vs Ray nodes", nodes,
                       {"messages/s": [r["messages_per_s"] for r in runs],
                        "linear from 1 node": [base * n for n in nodes]},
                       xlabel="nodes (one CPU each)", ylabel="messages/s", source=src.line(),
                       dashed=["linear from 1 node"])
    return lines + [f"![Ingest throughput vs nodes]({png.name})", ""], [png]


def _summary(retrievals: list[dict]) -> list[str]:
    """One row per retrieval file: Palimpsest on the whole file and on held-out conversations (the learned rankers
    refitted per fold when the run did that, else the configuration chosen per fold), the best baseline, the
    ingest rate and the latency."""
    rows = []
    for result in retrievals:
        systems, speed = result["systems"], result["speed"]
        baselines = {n: r for n, r in systems.items() if not n.startswith("palimpsest")}
        best = max(baselines, key=lambda n: baselines[n]["recall@10"] or 0) if baselines else None
        mid = next((k for k in ("budget_recall@1000",) if k in systems.get("palimpsest", {})), None)
        held = (result.get("leave_out_refit") or result.get("leave_out") or {}).get("selected")

        def pair(r: dict) -> str:
            return f"{_pct(r.get('recall@10'))}" + (f" / {_pct(r.get(mid))}" if mid else "")

        ingest = speed.get("ingest_messages_per_s")
        rows.append([_run_name(result), pair(systems["palimpsest"]) if "palimpsest" in systems else "–",
                     pair(held) if held else "–", f"{best} {pair(baselines[best])}" if best else "–",
                     f"{ingest:.1f}" if isinstance(ingest, (int, float)) else "–",
                     f"{_ms(speed.get('search_ms_p50'))} / {_ms(speed.get('search_ms_p95'))} ms",
                     f"{_ms(speed.get('context_ms_p50'))} / {_ms(speed.get('context_ms_p95'))} ms"])
    return ["## Retrieval at a glance", "",
            "Recall@10 / budget recall at 1000 tokens, in %: on the whole file, and on conversations held out of "
            "the choices (leave-conversations-out, the learned rankers refitted without them when the run did "
            "that). Ingest in messages per second.", "",
            *_table(["data", "Palimpsest", "held out", "best baseline", "ingest msg/s", "search p50 / p95",
                     "context p50 / p95"], rows)]


def _slugs(paths: list[Path]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for path in paths:
        slug = re.sub(r"[^a-z0-9]+", "-", path.stem.lower()).strip("-") or "result"
        seen[slug] = seen.get(slug, 0) + 1
        out.append(slug if seen[slug] == 1 else f"{slug}-{seen[slug]}")
    return out


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def write_page(results: list[tuple[Path, dict]], out: Path, systems: list[str] | None = None) -> tuple[Path, list]:
    """``out/results.md`` and its charts from ``(path, result)`` pairs; charts an earlier page named and this one
    does not are removed. Returns the page and the charts written."""
    out.mkdir(parents=True, exist_ok=True)
    page = out / PAGE
    before = set(IMAGE.findall(page.read_text(encoding="utf-8"))) if page.is_file() else set()
    sections = {"retrieval": _retrieval, "serving": _serving, "cluster": _cluster}
    files = ", ".join(_shown(p) for p, _ in results)
    lines = [f"<!-- Generated by `python -m benchmarks.report` from {files}; do not edit: rerun it. -->", "",
             "# Latest results", "",
             "The latest run of each benchmark, drawn from its result file; every table and chart names the command, "
             "the date and the machine of its run. Timings move with the machine's load: compare runs made on the "
             "same machine, back to back.", ""]
    retrievals = [r for _, r in results if kind(r) == "retrieval"]
    if retrievals:
        lines += _summary(retrievals)
    pngs: list[Path] = []
    for (path, result), slug in zip(results, _slugs([p for p, _ in results])):
        what = kind(result)
        args = (result, source(result, path), f"{what}-{slug}", out)
        more, drawn = _retrieval(*args, systems) if what == "retrieval" else sections[what](*args)
        lines += more
        pngs += drawn
    page.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")
    for stale in before - {p.name for p in pngs}:
        (out / stale).unlink(missing_ok=True)
    return page, pngs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.report",
        description="The benchmarks' documentation page: Markdown tables and PNG charts of the latest result files "
                    "(benchmarks.locomo, benchmarks.serve, benchmarks.multinode), written into docs/benchmarks/.")
    p.add_argument("results", nargs="*", type=Path,
                   help=f"result JSON files (default: those of {', '.join(DEFAULT_FILES)} that exist)")
    p.add_argument("--out", type=Path, default=OUT, help=f"the page's folder (default {_shown(OUT)})")
    p.add_argument("--systems", help="comma-separated retrieval systems to chart (default: palimpsest and the "
                                     "baselines; the other variants are tabulated)")
    args = p.parse_args(argv)
    paths = args.results or [ROOT / f for f in DEFAULT_FILES if (ROOT / f).is_file()]
    if not paths:
        p.error(f"no result file given and none of {', '.join(DEFAULT_FILES)} exists: run `make bench` (and "
                "`make bench-serve`, `make bench-multinode`) first, or pass the result files")
    missing = [str(x) for x in paths if not x.is_file()]
    if missing:
        p.error(f"no such result file: {', '.join(missing)}")
    results = []
    for path in paths:
        try:
            result = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            p.error(f"{path}: not JSON ({exc}); pass the --out file a benchmark wrote")
        if not isinstance(result, dict) or kind(result) is None:
            p.error(f"{path}: not a result of benchmarks.locomo, benchmarks.serve or benchmarks.multinode")
        results.append((path, result))
    wanted = [s.strip() for s in args.systems.split(",") if s.strip()] if args.systems else None
    if wanted:
        known = {n for _, r in results if kind(r) == "retrieval" for n in r["systems"]}
        unknown = [s for s in wanted if s not in known]
        if unknown:
            p.error(f"--systems: {', '.join(unknown)} not in the result files; they hold {', '.join(sorted(known))}")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        p.error("the charts need matplotlib: pip install matplotlib")
    page, pngs = write_page(results, args.out, wanted)
    print(f"wrote {_shown(page)} and {len(pngs)} charts", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
