"""Memory-graph benchmark (seed 001 §10.2, §12): create_memory and search_memories latency, memory, consolidation.

    python -m benchmarks.graph --out bench/graph.json [--memories 10000]

One run measures, on synthetic but realistic memories (a vocabulary of a few
hundred topics and objects, English and Chinese, Zipf-distributed, a year of
a user's life; label vectors from the model-free hash embedder):

- **create**: constructing one ``graph_memory_staged`` event and appending it
  through the shard core (a ``StageGraphMemories`` command: DuckDB log + fold),
  one call per memory, vectors precomputed (no embedding in the figure); and,
  apart, validating the ``create_memory`` tool call that would precede it.
- **search**: ``search_graph`` on one user's graph of N memories, staged and
  consolidated in batches as the store does, at depth 1 and 2 (query vectors
  are those of random labels).
- **memory**: that graph's own size (tracemalloc, refolded from its events)
  and the process RSS holding it, against seed 001 (< 500 MB for 10k
  memories) and ours (< 200 MB without the model; the hash embedder has none).
- **consolidation**: memories consolidated per second by ``run_consolidation``
  for U users × N/U staged memories: in process, then on a local Ray
  (2 CPUs) with 1 and with 2 tasks in flight, checking the three agree.

It writes the JSON and a Markdown table next to it (same stem, ``.md``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from tqdm import tqdm

from benchmarks.graph_memory import SEED_RSS_MB, TARGET_RSS_MB, graph_memory
from benchmarks.resources import driver_peak_mb, peak_rss
from events.graph_events import GraphMemoryStaged
from events.model import Event
from projections.adapters.embedding import HashEmbedder
from projections.decisions.graph_consolidate import consolidate
from projections.folds.graph import GraphState, apply

TENANT = "bench"
START = datetime(2024, 1, 1, 8, 0, tzinfo=UTC)
SEED_CREATE_MS, SEED_STAGE_MS, SEED_SEARCH_MS = 500.0, 100.0, {1: 2000.0, 2: 5000.0}  # seed §10.2, §12 staging

# The vocabulary: verbs as topics, noun phrases (modifier × head) as objects, in both languages.
VERBS = [*("go visit buy cook read paint play watch join adopt learn try finish start plan bake write build fix "
           "clean sell borrow lend climb hike run swim teach practise attend host celebrate miss lose find order "
           "rent book").split(), "sign up for", "look after", "work on", "talk about", *"去 吃 买 看 学 参加 做 养".split()]
FACT_VERBS = ["like", "love", "hate", "work at", "live in", "own", "collect", "喜欢", "讨厌", "住在"]
OPINION_VERBS = ["think", "feel", "觉得"]
JUDGEMENTS = ["great", "boring", "amazing", "too expensive", "relaxing", "很好", "不错", "太贵了"]
MODIFIERS = ("new old local small big community art yoga pottery music book dance cooking family "
             "summer weekend").split()
HEADS = ("class workshop group club library park museum concert festival market studio cafe garden "
         "trip camp course show game team project painting guitar recipe bike car").split()
ZH_OBJECTS = ("瑜伽课 火锅 图书馆 篮球 电影 小狗 新车 海边 音乐会 画展 咖啡馆 公园 博物馆 跑步 游泳 钢琴 "
              "蛋糕 书店 花园 露营").split()
KIN = ["sister", "brother", "mother", "father", "friend", "colleague", "neighbour", "cousin"]
NAMES = ["Anna", "Ben", "Chloe", "David", "Emma", "Frank", "Grace", "Hugo", "小明", "小红"]
PLACES = ["home", "downtown", "the beach", "the office", "Paris", "Boston", "北京", "上海"]


def objects() -> list[str]:
    return [*HEADS, *(f"{m} {h}" for m in MODIFIERS for h in HEADS), *ZH_OBJECTS]


def zipf(rng: np.random.Generator, n: int, size: int, s: float = 1.1) -> np.ndarray:
    """Indices in [0, n) drawn with probability ∝ 1/(rank+1)^s: a few hot labels, a long tail."""
    p = 1.0 / np.arange(1, n + 1) ** s
    return rng.choice(n, size=size, p=p / p.sum())


def create_args(rng: np.random.Generator, speaker: str, n: int) -> list[tuple[dict, datetime]]:
    """``n`` ``create_memory`` argument dicts of one speaker, with when each was said (about 52 min apart)."""
    objs, verbs = objects(), list(VERBS)
    rng.shuffle(objs)  # which labels are hot differs per speaker
    rng.shuffle(verbs)
    obj_i, verb_i = zipf(rng, len(objs), n), zipf(rng, len(verbs), n)
    kinds = rng.choice(["event", "fact", "opinion", "relation"], size=n, p=[0.6, 0.2, 0.1, 0.1])
    gaps = rng.exponential(52.0, size=n)
    out, at = [], START
    for i in range(n):
        at += timedelta(minutes=float(gaps[i]))
        kind, obj = str(kinds[i]), objs[obj_i[i]]
        importance = float(rng.choice([0.3, 0.5, 0.5, 0.7, 0.8]))
        args: dict = {"subject": speaker, "memory_type": kind, "importance": importance}
        if kind == "event":
            args.update(topic=verbs[verb_i[i]], object=obj, attributes={"time": f"{at:%Y-%m-%d}"})
            if rng.random() < 0.3:
                args["attributes"]["place"] = str(rng.choice(PLACES))
            if rng.random() < 0.2:
                args["attributes"]["with"] = f"{speaker}'s {rng.choice(KIN)}"
            if rng.random() < 0.15:
                args["subject"] = f"{speaker}'s {rng.choice(KIN)}"
        elif kind == "fact":
            args.update(topic=str(rng.choice(FACT_VERBS)), object=obj, attributes={})
        elif kind == "opinion":
            args.update(topic=str(rng.choice(OPINION_VERBS)), object=obj,
                        attributes={"judgement": str(rng.choice(JUDGEMENTS))})
        else:
            args.update(topic=str(rng.choice(KIN)), object=str(rng.choice(NAMES)), attributes={})
        out.append((args, at))
    return out


def label_vectors() -> dict[str, np.ndarray]:
    """The vector of every topic and object label the generator can draw, embedded once."""
    labels = sorted({*objects(), *VERBS, *FACT_VERBS, *OPINION_VERBS, *KIN, *NAMES})
    return dict(zip(labels, HashEmbedder().encode(labels).astype("<f4")))


def staged(args: dict, at: datetime, vectors: dict[str, np.ndarray], turn: int) -> GraphMemoryStaged:
    """The event a validated ``create_memory`` call stages (what the shard service appends)."""
    labels = [x for x in (args["topic"], args.get("object")) if x]
    return GraphMemoryStaged(
        subject=args["subject"], memory_type=args["memory_type"], topic=args["topic"], object=args.get("object"),
        attributes=args["attributes"], importance=args["importance"], source_turn_ids=(f"t{turn}",),
        source_message_ids=(f"m{turn}",), occurred_at=at, extractor="tool:create_memory", dim=HashEmbedder.dim,
        vectors={label: vectors[label].tobytes() for label in labels},
    )


class Stream:
    """One user's graph and its log (as a list), folded with the log's rule: seq = position, at = occurred time."""

    def __init__(self) -> None:
        self.state, self.log = GraphState(), []

    def append(self, pairs: list[tuple[str, Event]], recorded_at: datetime) -> None:
        for event_id, event in pairs:
            self.log.append((event_id, event, event.occurred(recorded_at)))
            apply(self.state, event_id, event, len(self.log), self.log[-1][2])


def keyed_ids(user_id: str):
    """Name-based ids like ``actors.consolidation.keyed_ids``, without importing Ray (its 40 MB stay out of the way)."""
    return lambda key: uuid.uuid5(uuid.NAMESPACE_OID, f"{TENANT}/{user_id}/{key}").hex


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def build_graph(args, vectors, rng) -> tuple[Stream, dict]:
    """One user's N-memory graph, grown as the store grows it: stage a batch, consolidate it, append, repeat."""
    memories = create_args(rng, "Caroline", args.memories)
    s, consolidate_s = Stream(), 0.0
    for lo in tqdm(range(0, len(memories), args.batch), desc="stage + consolidate", unit="batch", mininterval=1.0):
        batch = [(f"mem-{i}", staged(a, at, vectors, i)) for i, (a, at) in enumerate(memories[lo: lo + args.batch], lo)]
        s.append(batch, batch[-1][1].occurred_at)
        started = time.perf_counter()
        events = consolidate(s.state, [mid for mid, _ in batch], new_id=keyed_ids("caroline"))
        consolidate_s += time.perf_counter() - started
        s.append(events, batch[-1][1].occurred_at)
    g = s.state
    return s, {"memories": len(g.memories), "nodes": len(g.nodes), "edges": len(g.edges),
               "linked_edges": sum(e.origin == "linked" for e in g.edges.values()), "merges": len(g.merges),
               "conclusions": len(g.conclusions), "log_events": len(s.log), "consolidate_batch": args.batch,
               "consolidate_in_process_s": consolidate_s,
               "consolidate_in_process_memories_per_s": len(g.memories) / max(1e-9, consolidate_s)}


def bench_search(state: GraphState, vectors, rng, queries: int) -> dict:
    """search_graph latency at depth 1 and 2 for the vectors of random labels; the view is built before timing."""
    from projections.queries.graph_search import search_graph

    now = max(m.created_at for m in state.memories.values()) + timedelta(days=1)
    labels = sorted(vectors)
    picked = [labels[i] for i in rng.integers(0, len(labels), size=queries)]
    started = time.perf_counter()
    search_graph(state, vectors[picked[0]], now=now, depth=0)  # builds the cached view and node matrix
    out = {"queries": queries, "view_build_ms": 1000 * (time.perf_counter() - started)}
    for depth in (1, 2):
        ms = []
        for label in tqdm(picked, desc=f"search depth {depth}", unit="query", mininterval=1.0):
            started = time.perf_counter()
            search_graph(state, vectors[label], now=now, depth=depth)
            ms.append(1000 * (time.perf_counter() - started))
        out.update({f"depth{depth}_ms_p50": pct(ms, 50), f"depth{depth}_ms_p95": pct(ms, 95),
                    f"depth{depth}_ms_max": max(ms), f"depth{depth}_seed_target_ms": SEED_SEARCH_MS[depth]})
    return out


def bench_create(args, vectors, rng, tmp: Path) -> dict:
    """One ``StageGraphMemories`` command per memory through a real shard core; tool-call validation timed apart."""
    from actors.commands import StageGraphMemories
    from actors.core import ShardCore
    from actors.spec import ShardSpec
    from projections.rules.tool_calls import validate_tool_call

    svc = ShardCore(ShardSpec(index=0, log_path=tmp / "shard-000.duckdb", lance_dir=tmp / "vectors",
                              model_id=HashEmbedder.model_id, dim=HashEmbedder.dim))
    try:
        memories = create_args(rng, "Melanie", args.creates + 20)
        for i, (a, at) in enumerate(memories[:20]):  # warm-up: first appends open tables and fill caches
            svc.handle([StageGraphMemories(tenant=TENANT, user_id="melanie", memories=(staged(a, at, vectors, i),))])
        create_ms, validate_ms = [], []
        for i, (a, at) in enumerate(tqdm(memories[20:], desc="create_memory", unit="call", mininterval=1.0), 20):
            started = time.perf_counter()
            svc.handle([StageGraphMemories(tenant=TENANT, user_id="melanie", memories=(staged(a, at, vectors, i),))])
            create_ms.append(1000 * (time.perf_counter() - started))
            started = time.perf_counter()
            validate_tool_call("create_memory", a, reference=at)
            validate_ms.append(1000 * (time.perf_counter() - started))
    finally:
        svc.close()
    return {"calls": len(create_ms), "create_ms_p50": pct(create_ms, 50), "create_ms_p95": pct(create_ms, 95),
            "validate_ms_p50": pct(validate_ms, 50), "validate_ms_p95": pct(validate_ms, 95),
            "seed_create_target_ms": SEED_CREATE_MS, "seed_staging_target_ms": SEED_STAGE_MS,
            "covers": "GraphMemoryStaged construction + ShardCore.handle(StageGraphMemories) (DuckDB append with the command "
                      "record, fold); "
                      "no embedding (vectors precomputed), no tool-call validation (validate_ms)"}


def bench_consolidation(args, vectors, rng) -> tuple[dict, dict]:
    """U users × N/U staged memories, one job per user: in process, then Ray with 1 and 2 tasks in flight."""
    from actors.consolidation import run_consolidation
    from actors.ray_init import ensure_ray, shutdown_ray

    per_user = max(1, args.memories // args.users)
    jobs = []
    for u in tqdm(range(args.users), desc="stage users", unit="user", mininterval=1.0):
        s = Stream()
        s.append([(f"u{u}-{i}", staged(a, at, vectors, i))
                  for i, (a, at) in enumerate(create_args(rng, f"User{u}", per_user))], START)
        jobs.append((TENANT, f"u{u}", s.state, list(s.state.memories)))
    total = per_user * args.users

    ensure_ray(num_cpus=2)
    try:
        warm = [(TENANT, f"warm{i}", j[2], j[3][:20]) for i, j in enumerate(jobs[:2])]
        run_consolidation(warm, max_in_flight=2)  # start both workers and import the projections there
        runs, results = {}, {}
        for name, kwargs in tqdm([("in_process", {"parallel": False}), ("ray_1_in_flight", {"max_in_flight": 1}),
                                  ("ray_2_in_flight", {"max_in_flight": 2})], desc="consolidation", unit="run"):
            started = time.perf_counter()
            results[name] = run_consolidation(jobs, **kwargs)
            runs[name] = time.perf_counter() - started
        resources = peak_rss()
    finally:
        shutdown_ray()
    same = [[(i, e.model_dump()) for i, e in events] for events in results["in_process"].values()]
    equal = all([[(i, e.model_dump()) for i, e in events] for events in r.values()] == same for r in results.values())
    out = {"users": args.users, "memories_per_user": per_user, "memories": total,
           "events": sum(len(v) for v in results["in_process"].values()), "results_equal": equal}
    for name, seconds in runs.items():
        out[f"{name}_s"], out[f"{name}_memories_per_s"] = seconds, total / seconds
    out["speedup_2_vs_1"] = runs["ray_1_in_flight"] / runs["ray_2_in_flight"]
    out["ray_1_vs_in_process"] = runs["in_process"] / runs["ray_1_in_flight"]
    return out, resources


def run(args: argparse.Namespace) -> dict:
    rng = np.random.default_rng(args.seed)
    load_start = os.getloadavg()
    started = time.perf_counter()
    vectors = label_vectors()
    result: dict = {"benchmark": "graph", "memories": args.memories}
    tmp = Path(tempfile.mkdtemp(prefix="palimpsest-graph-bench-"))
    phases, mark = {}, time.perf_counter()

    def phase(name: str) -> None:
        nonlocal mark
        phases[name], mark = time.perf_counter() - mark, time.perf_counter()

    try:
        stream, result["graph"] = build_graph(args, vectors, rng)
        phase("build")
        result["memory"] = graph_memory(stream, tmp, START)
        phase("memory")
        state = stream.state
        del stream  # the log lives in DuckDB, not in the shard's memory
        result["search"] = bench_search(state, vectors, rng, args.queries)
        phase("search")
        del state
        # Ray before the shard service: its workers are forked before DuckDB and LanceDB are loaded.
        result["consolidation"], resources = bench_consolidation(args, vectors, rng)
        phase("consolidation")
        result["create"] = bench_create(args, vectors, rng, tmp)
        phase("create")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    load_end = os.getloadavg()
    result["resources"] = {**resources, "driver_peak_mb": driver_peak_mb()}
    result["config"] = {"memories": args.memories, "users": args.users, "creates": args.creates,
                        "queries": args.queries, "batch": args.batch, "seed": args.seed,
                        "embedder": HashEmbedder.model_id, "dim": HashEmbedder.dim, "labels": len(vectors)}
    result["host"] = {"cpu_count": os.cpu_count(), "loadavg_1m_start": load_start[0], "loadavg_1m_end": load_end[0],
                      "seconds": time.perf_counter() - started, "phase_seconds": phases}
    return result


def _fmt(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 10 else f"{value:,.0f}"
    return str(value)


def markdown(r: dict) -> str:
    c, s, m, k = r["create"], r["search"], r["memory"], r["consolidation"]
    rows = [
        ("create_memory p50 / p95 (stage + append, no embedding)",
         f"{_fmt(c['create_ms_p50'])} / {_fmt(c['create_ms_p95'])} ms",
         f"< {SEED_STAGE_MS:g} ms staged (seed §12), < {SEED_CREATE_MS:g} ms (§10.2)"),
        ("create_memory validation p50 / p95", f"{_fmt(c['validate_ms_p50'])} / {_fmt(c['validate_ms_p95'])} ms", ""),
        ("search_memories depth 1 p50 / p95", f"{_fmt(s['depth1_ms_p50'])} / {_fmt(s['depth1_ms_p95'])} ms",
         f"< {SEED_SEARCH_MS[1]:g} ms"),
        ("search_memories depth 2 p50 / p95", f"{_fmt(s['depth2_ms_p50'])} / {_fmt(s['depth2_ms_p95'])} ms",
         f"< {SEED_SEARCH_MS[2]:g} ms"),
        ("merged view build (first query after a change)", f"{_fmt(s['view_build_ms'])} ms", ""),
        (f"graph state, {r['graph']['memories']:,} memories (tracemalloc)",
         f"{_fmt(m['graph_state_mb'])} MB + search caches {_fmt(m['graph_views_mb'])} MB", ""),
        ("RSS of a process holding it (no model)", f"{_fmt(m['process_rss_mb'])} MB "
         f"({_fmt(m['process_rss_imports_mb'])} MB before the fold, peak {_fmt(m['process_rss_peak_mb'])} MB)",
         f"< {SEED_RSS_MB:g} MB seed: {_fmt(m['meets_seed'])}; < {TARGET_RSS_MB:g} MB ours: {_fmt(m['meets_ours'])}"),
        ("consolidation in process", f"{_fmt(k['in_process_memories_per_s'])} memories/s", ""),
        ("consolidation, Ray, 1 task in flight", f"{_fmt(k['ray_1_in_flight_memories_per_s'])} memories/s", ""),
        ("consolidation, Ray, 2 tasks in flight", f"{_fmt(k['ray_2_in_flight_memories_per_s'])} memories/s",
         f"{_fmt(k['speedup_2_vs_1'])}× 1 worker; same events: {_fmt(k['results_equal'])}"),
    ]
    g = r["graph"]
    lines = [f"# Memory graph, {r['memories']:,} memories", "",
             f"Graph: {g['nodes']:,} nodes, {g['edges']:,} edges ({g['linked_edges']:,} linked), {g['merges']} merges, "
             f"{g['conclusions']} conclusions, {g['log_events']:,} events; replay equal: {_fmt(m['replay_equal'])}. "
             f"Consolidation: {k['users']} users × {k['memories_per_user']:,} memories. Host: {r['host']['cpu_count']} "
             f"CPUs, load {r['host']['loadavg_1m_start']:.2f} → {r['host']['loadavg_1m_end']:.2f}.", "",
             "| figure | value | target |", "|---|---|---|", *(f"| {a} | {b} | {t} |" for a, b, t in rows)]
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.graph", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, type=Path, help="result JSON; the Markdown summary goes next to it (.md)")
    p.add_argument("--memories", type=int, default=10_000, help="memories in the searched graph and in the "
                                                                "consolidation run (default: 10000)")
    p.add_argument("--users", type=int, default=8, help="users the consolidation run splits the memories over")
    p.add_argument("--creates", type=int, default=500, help="timed create_memory calls")
    p.add_argument("--queries", type=int, default=20, help="timed queries per depth")
    p.add_argument("--batch", type=int, default=1000, help="staged memories per consolidation of the searched graph")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    for name in ("memories", "users", "creates", "queries", "batch"):
        if getattr(args, name) < 1:
            p.error(f"--{name} must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    result = run(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    md = markdown(result)
    args.out.with_suffix(".md").write_text(md)
    print(md)
    print(f"wrote {args.out} and {args.out.with_suffix('.md')}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
