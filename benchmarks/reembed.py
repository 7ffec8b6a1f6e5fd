"""Re-embedding a dev store from one encoder to another, checked the way a user would judge it.

    python -m benchmarks.reembed --data ../shared/data/locomo/locomo10_dev.json \\
        --source minilm --target multilingual-e5-small --out bench/reembed_locomo.json

1. Builds a store of the file's turns with ``--source`` (ingest and consolidation, as ``benchmarks.locomo``).
2. Re-embeds a copy to ``--target`` through the public API while a second thread keeps asking the benchmark's
   questions: every answer and error is counted (the target: 0 errors), with the search latency during it.
3. Replays the re-embedded store (every shard's digests must equal the live ones).
4. Scores R@k and budget recall of the re-embedded store, and of a store created with ``--target`` from the
   start, on the same questions (the benchmark's metrics; both asked "right after the conversation").
5. With ``--kill``: re-embeds another copy with the CLI in a child process, ``kill -9``s it once part of the
   vectors are recorded, runs it again, and counts vectors recorded twice (the target: 0).

The JSON holds every figure with the commands' settings; nothing is kept unless ``--keep DIR`` is given.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from benchmarks import dataset as ds
from benchmarks.metrics import aggregate, metric_keys, percentile, score
from benchmarks.systems import PalimpsestSystem
from palimpsest.locomo import TENANT

K_VALUES = (5, 10)
BUDGETS = (500, 1000, 2000)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.reembed", description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, type=Path, help="a LoCoMo JSON file (list of samples)")
    p.add_argument("--source", default="minilm", help="the encoder the store is built with (default minilm)")
    p.add_argument("--target", default="multilingual-e5-small", help="the encoder it moves to")
    p.add_argument("--out", required=True, type=Path, help="result JSON")
    p.add_argument("--num-shards", type=int, default=2)
    p.add_argument("--limit-samples", type=int, metavar="N", help="only the first N conversations")
    p.add_argument("--kill", action="store_true", help="also kill -9 a CLI re-embedding mid-way and finish it")
    p.add_argument("--keep", type=Path, help="keep the stores in this new directory")
    args = p.parse_args(argv)
    if not args.data.is_file():
        p.error(f"--data {args.data}: no such file (e.g. ../shared/data/locomo/locomo10_dev.json)")
    if args.keep and args.keep.exists() and any(args.keep.iterdir()):
        p.error(f"--keep {args.keep}: not empty")
    return args


def build(path: Path, data: ds.Dataset, embedder: str, shards: int) -> dict:
    from palimpsest.memory import Memory

    started = time.perf_counter()
    with Memory.open(path, num_shards=shards, embedder=embedder) as mem:
        mem.consolidate_every = 0
        mem.add_messages(data.messages, tenant=TENANT, progress=True)
        mem.consolidate()
        mem.wait_idle()
    return {"seconds": round(time.perf_counter() - started, 2)}


def recall(mem, questions: list) -> dict:
    system = PalimpsestSystem(mem, k=max(K_VALUES), budgets=BUDGETS)
    rows = [score(q, system.retrieve(q), K_VALUES, BUDGETS, max(BUDGETS)) for q in questions]
    out = aggregate(rows, metric_keys(K_VALUES, BUDGETS))
    return {k: out[k] for k in ("recall@5", "recall@10", "budget_recall@1000", "budget_recall@2000")}


def reembed_while_searching(path: Path, target: str, questions: list) -> dict:
    from palimpsest.memory import Memory

    with Memory.open(path) as mem:
        errors: list[str] = []
        latencies: list[float] = []
        done = threading.Event()

        def ask() -> None:
            i = 0
            while not done.is_set():
                q = questions[i % len(questions)]
                i += 1
                t0 = time.perf_counter()
                try:
                    mem.search(TENANT, q.user_id, q.question, k=10)
                    latencies.append((time.perf_counter() - t0) * 1000)
                except Exception as exc:  # counted: the target is none
                    errors.append(f"{type(exc).__name__}: {exc}"[:200])

        reader = threading.Thread(target=ask, name="searches")
        reader.start()
        try:
            report = mem.reembed(target, progress=True)
        finally:
            done.set()
            reader.join()
        replay = mem.replay()
        return {"report": report, "searches_answered": len(latencies), "search_errors": len(errors),
                "errors_sample": errors[:5], "search_ms_p50": percentile(latencies, 50),
                "search_ms_p95": percentile(latencies, 95), "replay_equal": all(r.equal for r in replay),
                "recall": recall(mem, questions)}


def killed_and_resumed(path: Path, target: str) -> dict:
    """A CLI re-embedding killed (SIGKILL, its whole process group) once a quarter of the vectors are recorded,
    then run again; how many vectors the kill left, and how many (message, model) pairs were recorded twice."""
    from palimpsest.memory import Memory

    import ray

    env = {**os.environ, "RAY_ADDRESS": ray.get_runtime_context().gcs_address}
    cli = [sys.executable, "-m", "palimpsest.cli", "--store", str(path), "reembed", "--embedder", target, "--json"]
    with Memory.open(path) as mem:
        total = mem.stats()["messages"]
        target_id = mem.reembed(target, dry_run=True)["model_id"]
    child = subprocess.Popen(cli, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    recorded = 0
    with Memory.open(path) as mem:
        while child.poll() is None:
            recorded = mem.stats()["models"].get(target_id, {}).get("vectors", 0)
            if recorded >= total // 4:
                break
            time.sleep(0.5)
    killed = child.poll() is None
    if killed:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait(30)
    with Memory.open(path) as mem:
        left = mem.stats()["models"].get(target_id, {}).get("vectors", 0)
    finish = subprocess.run(cli, env=env, capture_output=True, text=True)
    with Memory.open(path) as mem:
        pairs = Counter((e.user_id, e.event.message_event_id, e.event.model_id)
                        for e in mem.events(kinds=["message_embedded"]))
        return {"killed": killed, "vectors_when_killed": left, "messages": total, "rerun_exit": finish.returncode,
                "rerun_report": json.loads(finish.stdout[finish.stdout.index("{"):]) if "{" in finish.stdout else None,
                "recorded_twice": sum(1 for n in pairs.values() if n > 1),
                "target_vectors": sum(1 for (_, _, m) in pairs if m == target_id),
                "replay_equal": all(r.equal for r in mem.replay()), "embedder_after": mem.config.embedder}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from actors.ray_init import ensure_ray, shutdown_ray

    data = ds.load(args.data, args.limit_samples)
    root = args.keep or Path(tempfile.mkdtemp(prefix="palimpsest-reembed-"))
    root.mkdir(parents=True, exist_ok=True)
    ensure_ray(None)
    try:
        source, moved, fresh = root / "source", root / "reembedded", root / "fresh"
        result: dict = {"data": str(args.data), "source": args.source, "target": args.target,
                        "messages": len(data.messages), "questions": len(data.questions),
                        "build_source": build(source, data, args.source, args.num_shards)}
        shutil.copytree(source, moved)
        if args.kill:
            shutil.copytree(source, root / "killed")
        result["reembedded"] = reembed_while_searching(moved, args.target, data.questions)
        result["build_fresh"] = build(fresh, data, args.target, args.num_shards)
        from palimpsest.memory import Memory

        with Memory.open(fresh) as mem:
            result["fresh_recall"] = recall(mem, data.questions)
        with Memory.open(source) as mem:
            result["source_recall"] = recall(mem, data.questions)
        if args.kill:
            result["kill"] = killed_and_resumed(root / "killed", args.target)
    finally:
        shutdown_ray()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    r = result["reembedded"]
    print(f"re-embedded {r['report']['messages']} messages in {r['report']['seconds']} s; searches during it: "
          f"{r['searches_answered']} answered, {r['search_errors']} errors, p95 {r['search_ms_p95']:.1f} ms; "
          f"replay equal: {r['replay_equal']}")
    print(f"R@10 source {result['source_recall']['recall@10']:.4f} · re-embedded {r['recall']['recall@10']:.4f} · "
          f"fresh {result['fresh_recall']['recall@10']:.4f}")
    if "kill" in result:
        k = result["kill"]
        print(f"kill -9 with {k['vectors_when_killed']} of {k['messages']} vectors recorded; rerun exit "
              f"{k['rerun_exit']}; recorded twice: {k['recorded_twice']}; replay equal: {k['replay_equal']}")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
