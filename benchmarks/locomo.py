"""LoCoMo retrieval benchmark: Palimpsest against BM25, dense and RRF baselines in one run.

    python -m benchmarks.locomo --data ../shared/data/locomo/locomo10_dev.json --out bench/locomo_dev.json

Ingests every turn through the real system into a fresh store, scores every
question with parsable evidence (recall@k, budget recall, context tokens,
overall / per category / categories 1-4), measures speed (ingest vs
encode-only, search and context latency, replay, peak RSS), and writes the
JSON plus a Markdown summary next to it (same stem, ``.md``).

Encode-only (the store's encoder over the same texts in the same batches,
nothing else) is timed twice, right before the ingest and right after it
(and the consolidation); the ratio is the ingest's messages/s over the
encode-only messages/s of the two runs' mean time. The speed of this shared
2-core VM drifts by more than the ratio's margin within minutes (the same
encode work took 41.7 to 54.5 CPU seconds in one afternoon): a baseline on
both sides of the ingest cancels a drift across it. Both times are reported.

Replay (every projection rebuilt from event 0, digests compared) runs
``--replays`` times (default 3), each one checked; a shard's figure is its
best run (the usual minimum of repeated timings: the VM's noise only ever
slows a run down), and every run's seconds are kept in the result.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from benchmarks import dataset as ds
from benchmarks import question_overlay, ranker_refit, result_file
from benchmarks.baselines import baseline_systems, build_corpora, index_text
from benchmarks.leaveout import leave_out, per_sample
from benchmarks.metrics import aggregate, metric_keys, percentile, score
from benchmarks.provenance import stamp
from benchmarks.resources import cpu_between, cpu_snapshot, peak_rss
from benchmarks.speed_runs import BATCH_SIZE, encode_batched, figures, sandwich
from benchmarks.speed_runs import summary as speed_summary
from benchmarks.systems import PalimpsestSystem, select
from benchmarks.variants import for_encoder
from palimpsest.locomo import TENANT

K_VALUES = (5, 10)
BUDGETS = (500, 1000, 2000)
EMBEDDER = "minilm"
TIMED = ("palimpsest_before_keys", "palimpsest_no_conversation", "palimpsest_prf")  # timed too


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.locomo", description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, type=Path, help="a LoCoMo JSON file (list of samples)")
    p.add_argument("--out", required=True, type=Path, help="result JSON; the Markdown summary goes next to it (.md)")
    p.add_argument("--questions", type=Path, metavar="FILE",
                   help="score only the questions this file lists, with its text (benchmarks.question_overlay: "
                        "e.g. English questions over a Chinese file)")
    p.add_argument("--store", type=Path, help="a new or empty directory for the store (default: a temp dir, removed after)")
    p.add_argument("--limit-samples", type=int, metavar="N", help="only the first N samples (conversations)")
    p.add_argument("--num-shards", type=int, help="shards of the new store (default: CPU count)")
    p.add_argument("--systems", help="comma-separated subset of systems (default: all)")
    p.add_argument("--reuse", action="store_true",
                   help="--store already holds this file's turns (a store an earlier run kept): skip the ingest and "
                        "score it through Ray as it stands (no ingest speed then)")
    p.add_argument("--replays", type=int, default=3, metavar="N",
                   help="replays of the whole store after the questions (each checked; each shard's best is its "
                        "figure; default 3)")
    p.add_argument("--embedder", default=EMBEDDER, metavar="KIND",
                   help="the encoder of the store and of the baselines' dense list: minilm (default), "
                        "multilingual-e5-small, sentence-transformers:<name-or-path>, openai:<model>")
    p.add_argument("--ranker-extra", action="append", default=[], metavar="DATA=STORE",
                   help="another data file and a store of it (same encoder) the leave-out refit also trains each "
                        "fold's rankers on (as benchmarks.train_ranker --set does: the English rankers were fitted "
                        "on LoCoMo and REALTALK together)")
    p.add_argument("--no-refit", action="store_true",
                   help="skip the leave-out refit of the learned rankers (benchmarks.ranker_refit)")
    p.add_argument("--speed-runs", type=int, default=1, metavar="N",
                   help="ingest sandwiches (encode-only, ingest, encode-only): the main run and N-1 more in fresh "
                        "stores after it; every ratio is kept and their median reported (default 1)")
    args = p.parse_args(argv)
    if args.replays < 1:
        p.error("--replays must be at least 1")
    from projections.adapters.encoder_kinds import parse
    from events.errors import EncoderError

    try:
        parse(args.embedder, "--embedder")
    except EncoderError as exc:
        p.error(str(exc))
    if args.speed_runs < 1:
        p.error("--speed-runs must be at least 1 (the main run)")
    if not args.data.is_file():
        p.error(
            f"--data {args.data}: no such file. Pass the path of a LoCoMo JSON file, e.g. "
            "--data ../shared/data/locomo/locomo10_dev.json (from the repo root)"
        )
    for item in args.ranker_extra:
        data, sep, store = item.partition("=")
        if not sep or not Path(data).is_file() or not (Path(store) / "store.json").is_file():
            p.error(f"--ranker-extra {item}: give DATA=STORE, a data file and a store a run of it kept (--store)")
    if args.limit_samples is not None and args.limit_samples < 1:
        p.error("--limit-samples must be at least 1")
    if args.reuse and not (args.store and (args.store / "store.json").is_file()):
        p.error(f"--reuse needs --store DIR holding a store (DIR/store.json); got {args.store}")
    if not args.reuse and args.store and args.store.exists() and any(args.store.iterdir()):
        p.error(f"--store {args.store}: not empty; the benchmark needs a fresh store (remove it or pick a new path)")
    return args


def best_replays(runs: list) -> list:
    """Per shard, the report of its fastest replay among ``runs`` (lists of every shard's reports)."""
    return [min(reports, key=lambda r: r.seconds) for reports in zip(*runs, strict=True)]


def check_replay(reports) -> None:
    bad = [r for r in reports if not r.equal]
    if bad:
        lines = []
        for r in bad:
            keys = sorted(k for k in set(r.live) | set(r.rebuilt) if r.live.get(k) != r.rebuilt.get(k))
            lines.append(f"shard {r.shard}: live and rebuilt digests differ in {keys}")
        raise SystemExit("replay FAILED, projections are not reproducible from the log:\n  " + "\n  ".join(lines))


def reuse(mem, expected: int) -> tuple[float, dict]:
    """A kept store instead of an ingest: it must hold exactly the file's turns; nothing is timed."""
    held = mem.stats()["messages"]
    if held != expected:
        raise SystemExit(f"--reuse: the store holds {held} messages, the data file {expected} turns; "
                         "pass the store a run of this same file kept (--store), or drop --reuse")
    return 0.0, {"seconds": 0.0, "events": 0, "staged": 0}


def run(args: argparse.Namespace) -> tuple[dict, list[str]]:
    from palimpsest.memory import Memory  # imported late: --help and argument errors stay instant
    from projections.adapters.embedding import encode_queries, encode_whole_queries
    from projections.adapters.tokens import default_counter
    from projections.rules.text import has_cjk

    load_start = os.getloadavg()
    data = ds.load(args.data, args.limit_samples)
    if args.questions:
        data = question_overlay.apply(data, args.questions)
    messages, questions = data.messages, data.questions
    print(f"{data.name}: {len(data.samples)} samples, {len(messages)} turns, {len(questions)} scored questions "
          f"({len(data.skipped)} skipped)", file=sys.stderr)
    store = args.store or Path(tempfile.mkdtemp(prefix="palimpsest-locomo-"))
    mem = Memory.open(store, num_shards=args.num_shards, embedder=args.embedder)
    closed = False
    try:
        # One-off loads stay out of both timings (steady-state throughput is measured): the model and its first
        # run, and for a Chinese file jieba's dictionary in every process that segments (Memory.warm_up).
        languages = ("en", "zh") if any(has_cjk(m["text"]) for m in messages) else ("en",)
        warm_up = mem.warm_up(languages)
        model_load_s = warm_up["encoder_s"]

        texts = [index_text(m) for m in messages]
        encode_cpu: list[dict] = []  # CPU seconds of every process of the run during each encode-only pass
        ingest_cpu = None
        if args.reuse:
            ingest_s, consolidation = reuse(mem, len(messages))
            encode_before_s = None
        else:
            _, encode_before_s = encode_batched(mem.embedder, texts, encode_cpu)
            started, cpu_before = time.perf_counter(), cpu_snapshot()
            mem.consolidate_every = 0  # consolidation is timed on its own, right after ingest
            ingest = mem.add_messages(messages, tenant=TENANT, batch_size=BATCH_SIZE, progress=True)
            ingest_s = time.perf_counter() - started
            ingest_cpu = cpu_between(cpu_before, cpu_snapshot())
            consolidation = mem.consolidate()
            if ingest.created != len(messages):
                print(f"warning: {ingest.duplicates} of {len(messages)} turns were duplicates (repeated dia_id?)",
                      file=sys.stderr)

        # The shards' idle-time work (snapshots, warm-ups of the users the ingest changed) waits for the end of an
        # ingest and then runs: done before encode-only is timed again, it does not slow that one down. A kept store
        # (--reuse) was just opened: its users' read indexes are built the same way before any question is timed
        # (else each user's first question builds them: on MemDaily dev, 15 slow questions of 600, enough to set
        # the search p95).
        settle_s = mem.wait_idle()
        vectors, encode_after_s = encode_batched(mem.embedder, texts, encode_cpu)
        encode_s = encode_after_s if encode_before_s is None else (encode_before_s + encode_after_s) / 2
        qvecs = encode_whole_queries(mem.embedder, [q.question for q in questions])
        query_vectors = {(q.sample_id, q.index): v for q, v in zip(questions, qvecs)}
        corpora = build_corpora(messages, vectors, lambda m: m["user_id"], default_counter())

        # The default and its ablations around the store's encoder's own fusion defaults (encoder_fusion)
        variants = for_encoder(mem.embedder.model_id)
        palimpsest = PalimpsestSystem(mem, k=max(K_VALUES), budgets=BUDGETS, fusion=variants["palimpsest"])
        # Ablations (benchmarks.variants): the same store with one stage switched off, and the configuration
        # before the generalisation work. Questions are asked "right after the conversation" (Question.asked_at),
        # before any touch the benchmark records, so systems and questions do not influence each other through
        # reinforcement. They reuse the question vectors encoded above (their latencies are not reported).
        # (the baselines read the whole question; Palimpsest's query vectors are cut as Memory cuts them)
        texts = [q.question for q in questions]
        by_text = dict(zip(texts, encode_queries(mem.embedder, texts)))
        # The ablations named in TIMED also go through the public API, so their latency is comparable with the
        # default's (the same run, the same load): the cost of a stage is the difference.
        ablations = [
            PalimpsestSystem(mem, k=max(K_VALUES), budgets=BUDGETS, name=name, fusion=fusion,
                             query_vectors=None if name in TIMED else by_text)
            for name, fusion in variants.items() if name != "palimpsest"
        ]
        systems = select(
            [palimpsest.as_system(), *(a.as_system() for a in ablations),
             *baseline_systems(corpora, query_vectors, max(K_VALUES), BUDGETS)],
            args.systems.split(",") if args.systems else None,
        )
        rows = {s.name: [] for s in systems}
        elapsed = {s.name: 0.0 for s in systems}
        for q in tqdm(questions, desc="questions", unit="q", mininterval=1.0):
            for s in systems:
                t0 = time.perf_counter()
                r = s.retrieve(q)
                elapsed[s.name] += time.perf_counter() - t0
                rows[s.name].append(score(q, r, K_VALUES, BUDGETS, max(BUDGETS)))

        runs = []
        for _ in range(args.replays):
            runs.append(mem.replay())
            check_replay(runs[-1])
        replays = best_replays(runs)
        events = sum(r.events for r in replays)
        stats = mem.stats()
        if stats["touch_flush_failures"]:
            raise SystemExit(f"{stats['touch_flush_failures']} background touch flushes failed in the shards during "
                             "the run, so the figures are not reported; PALIMPSEST_RAY_LOGS=1 shows the shards' log")
        memory = peak_rss()
        load_end = os.getloadavg()
        mem.close()  # its shards leave the cores to the speed runs' own
        closed = True
        # the honest leave-out of the learned rankers: refitted per fold, scored in process on the folded store
        refit = None if args.no_refit else ranker_refit.run(
            store, data.name, questions, by_text, variants["palimpsest"], mem.embedder.model_id,
            [tuple(Path(p) for p in item.partition("=")[::2]) for item in args.ranker_extra],
            lambda texts: encode_queries(mem.embedder, texts), K_VALUES, BUDGETS, metric_keys(K_VALUES, BUDGETS))
        extra_runs = [sandwich(messages, [index_text(m) for m in messages], tenant=TENANT, languages=languages,
                               num_shards=args.num_shards, embedder=args.embedder)
                      for _ in tqdm(range(args.speed_runs - 1), desc="speed runs", disable=args.speed_runs < 2)]
    finally:
        if not closed:
            mem.close()
        from actors.ray_init import shutdown_ray

        shutdown_ray()
        if args.store is None:
            shutil.rmtree(store, ignore_errors=True)

    keys = metric_keys(K_VALUES, BUDGETS)
    results = {name: aggregate(r, keys) for name, r in rows.items()}
    speed = {
        "ingest_messages_per_s": None if args.reuse else (len(messages) / ingest_s if ingest_s else 0.0),
        "encode_only_messages_per_s": len(messages) / encode_s if encode_s else 0.0,
        "search_ms_p50": percentile(palimpsest.search_ms, 50),
        "search_ms_p95": percentile(palimpsest.search_ms, 95),
        "context_ms_p50": percentile(palimpsest.context_ms, 50),
        "context_ms_p95": percentile(palimpsest.context_ms, 95),
        "replay_events_per_s": events / max(1e-9, max(r.seconds for r in replays)),
        "peak_rss_mb": memory["peak_rss_mb"],
        "replay_events_per_s_sum": events / max(1e-9, sum(r.seconds for r in replays)),
        "replay_seconds_per_shard": [r.seconds for r in replays],
        "replay_events_per_shard": [r.events for r in replays],
        # Each shard's own rate: its events over its wall seconds (the shards replay at once, one per core here),
        # and over the CPU seconds of its replay's thread (what the fold costs, time waiting for a core aside).
        "replay_events_per_s_per_shard": [r.events / max(1e-9, r.seconds) for r in replays],
        "replay_cpu_seconds_per_shard": [r.cpu_seconds for r in replays],
        "replay_events_per_cpu_s_per_shard": [r.events / max(1e-9, r.cpu_seconds) for r in replays],
        "replay_runs_seconds_per_shard": [[r.seconds for r in run] for run in runs],
        "replay_runs_cpu_seconds_per_shard": [[r.cpu_seconds for r in run] for run in runs],
        "ingest_seconds": ingest_s,
        "consolidation_seconds": consolidation["seconds"],
        "consolidation_events": consolidation["events"],
        "graph_memories_staged": consolidation["staged"],
        "encode_only_seconds": encode_s,
        "encode_only_seconds_before_after": [encode_before_s, encode_after_s],
        # CPU seconds of the driver, the shards and Ray's daemons in each window: a machine whose speed changes
        # from minute to minute (steal, shared cores) moves the wall ratio; this one much less.
        "encode_only_cpu_before_after": encode_cpu,
        "idle_work_after_ingest_seconds": settle_s,  # waited after consolidation for the shards' idle-time work
        "ingest_cpu": ingest_cpu,
        "model_load_seconds": model_load_s,
        "warm_up": warm_up,
        "retrieve_ms_mean": {n: 1000 * t / max(1, len(questions)) for n, t in elapsed.items()},
        "latency_by_system": {
            a.name: {"search_ms_p50": percentile(a.search_ms, 50), "search_ms_p95": percentile(a.search_ms, 95),
                     "context_ms_p50": percentile(a.context_ms, 50), "context_ms_p95": percentile(a.context_ms, 95)}
            for a in (palimpsest, *ablations) if a.query_vectors is None and a.search_ms
        },
        "ingest_reused_store": bool(args.reuse),
        "memory": {k: v for k, v in memory.items() if k != "peak_rss_mb"},
    }
    main_run = [] if args.reuse else [figures(ingest_s, ingest_cpu, [encode_before_s, encode_after_s], encode_cpu)]
    if main_run or extra_runs:
        speed["speed_runs"] = speed_summary(main_run + extra_runs)
    ratios = {} if args.reuse else {
        "ingest_vs_encode": speed["ingest_messages_per_s"] / speed["encode_only_messages_per_s"],
        "ingest_vs_encode_cpu": sum(c["total"] for c in encode_cpu) / len(encode_cpu) / ingest_cpu["total"]}
    if "speed_runs" in speed:
        ratios["ingest_vs_encode_median"] = speed["speed_runs"]["ingest_vs_encode_median"]
        ratios["ingest_vs_encode_cpu_median"] = speed["speed_runs"]["ingest_vs_encode_cpu_median"]
    if "palimpsest" in results and "rrf" in results and results["rrf"]["recall@10"]:
        ratios["palimpsest_vs_rrf_recall@10"] = results["palimpsest"]["recall@10"] / results["rrf"]["recall@10"]
    for ablation in (name for name in results if name.startswith("palimpsest_no_")):
        if "palimpsest" in results:
            for key in ("recall@10", "budget_recall@1000"):
                ratios[f"palimpsest_vs_{ablation}_{key}"] = results["palimpsest"][key] / results[ablation][key]
    # Leave-conversations-out: the Palimpsest configuration (default or an ablation) is chosen on the other
    # samples and scored on the held-out ones, rotating; the baselines have nothing to choose.
    held_out = leave_out(rows, [name for name in rows if name.startswith("palimpsest")], keys)
    extra = {
        "category_names": data.category_names,
        "leave_out": held_out,
        "leave_out_refit": refit,
        "per_sample_recall@10": {name: per_sample(r) for name, r in rows.items()},
        "questions_total": len(questions) + len(data.skipped),
        "skipped_questions": len(data.skipped),
        "skipped": [f"{q.sample_id}#{q.index} (cat {q.category}): {q.question[:60]!r}" for q in data.skipped],
        "messages": len(messages),
        "events": events,
        "ratios": ratios,
        "ceiling": {
            "full_context_tokens_mean": float(np.mean([corpora[q.user_id].total_tokens for q in questions]))
            if questions else None,
        },
        "data_quirks": data.stats.to_dict(),
        "store_stats": {k: stats[k] for k in ("num_shards", "embedder", "users", "events", "messages", "touches")},
        "config": {
            "data": str(args.data),
            "limit_samples": args.limit_samples,
            "tenant": TENANT,
            "embedder": args.embedder,
            "model_id": stats.get("model_id"),
            "encoder_backend": getattr(mem.embedder, "backend", None),
            "k": list(K_VALUES),
            "budgets": list(BUDGETS),
            "batch_size": BATCH_SIZE,
            "rrf_k": 60,
            "context_tokens_budget": max(BUDGETS),
            "store": str(args.store) if args.store else "temporary",
            "replay_equal": all(r.equal for r in replays),
        },
        "host": {  # speed figures are only comparable on an otherwise idle machine
            "cpu_count": os.cpu_count(),
            "loadavg_1m_start": load_start[0],
            "loadavg_1m_end": load_end[0],
        },
    }
    return result_file.build(data.name, len(questions), results, speed, extra), keys


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    result, keys = run(args)
    result["provenance"] = stamp("benchmarks.locomo", argv)
    md = result_file.write(result, args.out, keys)
    print(md)
    print(f"wrote {args.out} and {args.out.with_suffix('.md')}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
