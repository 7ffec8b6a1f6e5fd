"""Search latency while the shards' follow-ups wait on a slow language model.

    python -m benchmarks.slow_llm --out bench/slow_llm.json [--data ../shared/data/locomo/locomo10_dev.json]
        [--limit-samples 2] [--delay 2.0] [--runs 3] [--rate 20]

A LoCoMo file is ingested once, offline (no model: the offline rules decide), into a store that is then
copied for each run. Each run opens a fresh copy with a model configured (``PALIMPSEST_LLM_*``) that points
at the project's scripted OpenAI-compatible server (:class:`tests.fakes.openai_server.FakeOpenAI`), waits
for the shards' idle-time work, and asks every scored question of the file through
:meth:`palimpsest.Memory.search`, one at a time, round robin over the conversations, at the question's
time, paced at ``--rate`` searches a second (so that a run spans many model calls: unpaced, the dev
questions take a few seconds, one or two calls of 2 s). The searches' touches are flushed by the shards'
timers, and each flush's reaction finds closed episodes without a model title and hot sessions to
distil: the model is asked for them (one call at a time per shard, :mod:`actors.reactor`) while the
searches go on. The server answers every call after
``--delay`` seconds in the runs "with delay" and at once in the runs "without": the two alternate
(``--runs`` of each), and the report gives each run's search p50/p95 and the medians per kind of run.

The target: the median p95 with the delay within 10 % of the one without (``p95_ratio`` <= 1.10), with
model calls in flight during the runs with the delay (``calls_during_load``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import dataset as ds
from palimpsest.locomo import TENANT
from tests.fakes.openai_server import FakeOpenAI, Reply, schema_name

MODEL = "slow-scripted"
TARGET = 1.10  # the p95 with the delay over the p95 without
LLM_ENV = ("PALIMPSEST_LLM_BASE_URL", "OPENAI_BASE_URL", "PALIMPSEST_LLM_MODEL", "PALIMPSEST_LLM_TIMEOUT_S",
           "PALIMPSEST_LLM_MAX_RETRIES")
ANSWERS = {  # a usable answer to each step the shards may ask, so the answers are recorded as decisions
    "EpisodeTitle": {"title": "A conversation between two friends", "summary": "They caught up on recent news."},
    "ProfileDistillation": {"traits": {}, "user_knowledge": ["The user talked about their week."],
                            "assistant_knowledge": []},
    "NoteOperations": {"operations": []},
    "GraphMemories": {"memories": []},
}


class ScriptedModel:
    """The scripted server's answers: each after ``delay_s`` (changed between runs), every request's arrival
    time kept."""

    def __init__(self) -> None:
        self.delay_s = 0.0
        self.arrivals: list[tuple[float, str | None]] = []
        self.server = FakeOpenAI(responder=self.answer)

    def answer(self, body: dict) -> Reply:
        name = schema_name(body)
        self.arrivals.append((time.monotonic(), name))
        return Reply.json(ANSWERS.get(name, {}), delay_s=self.delay_s)


def percentile(values: list[float], q: float) -> float:
    return round(float(np.percentile(values, q)), 2)


def round_robin(samples) -> list:
    """The scored questions, one conversation after another in turn, so every user's follow-ups start early."""
    queues = [list(s.questions) for s in samples]
    out = []
    while any(queues):
        for queue in queues:
            if queue:
                out.append(queue.pop(0))
    return out


def ingest(store: Path, data, num_shards: int, embedder: str) -> dict:
    from palimpsest.memory import Memory

    started = time.perf_counter()
    mem = Memory.open(store, num_shards=num_shards, embedder=embedder)
    try:
        mem.consolidate_every = 0  # the graph is not what this benchmark reads
        report = mem.add_messages(data.messages, tenant=TENANT, progress=True)
        mem.wait_idle()
    finally:
        mem.close()
    return {"messages": report.created, "seconds": round(time.perf_counter() - started, 1)}


def one_run(store: Path, work: Path, questions, model: ScriptedModel, delay_s: float, rate: float, n: int) -> dict:
    """A fresh copy of ``store`` opened with the model ``delay_s`` slow; every question searched once."""
    from palimpsest.memory import Memory
    from palimpsest.remote import get

    copy = work / f"run-{n}"
    shutil.copytree(store, copy)
    model.delay_s = delay_s
    mem = Memory.open(copy)
    try:
        mem.wait_idle()
        asked_before = len(model.arrivals)
        started = time.monotonic()
        ms = []
        for i, q in enumerate(questions):
            time.sleep(max(0.0, started + i / rate - time.monotonic()))
            t0 = time.perf_counter()
            mem.search(TENANT, q.user_id, q.question, k=10, now=q.asked_at)
            ms.append((time.perf_counter() - t0) * 1000)
        ended = time.monotonic()
        followups = get(mem.shards.on_live("followups"))
        stats = mem.stats()
    finally:
        mem.close()
        shutil.rmtree(copy, ignore_errors=True)
    if stats["touch_flush_failures"]:
        raise SystemExit(f"{stats['touch_flush_failures']} touch flushes failed: the figures are not reported")
    calls = [name for at, name in model.arrivals[asked_before:] if started <= at <= ended]
    out = {"delay_s": delay_s, "searches": len(ms), "search_ms_p50": percentile(ms, 50),
           "search_ms_p95": percentile(ms, 95), "search_ms_max": round(max(ms), 2),
           "load_seconds": round(ended - started, 1), "calls_during_load": len(calls),
           "calls_by_schema": {name: calls.count(name) for name in sorted(set(calls), key=str)},
           "followups_at_end": followups, "load_1min": round(os.getloadavg()[0], 2)}
    print(json.dumps(out), file=sys.stderr)
    return out


def summary(runs: list[dict], delay_s: float) -> dict:
    def median(key: str, delay: float) -> float:
        return round(statistics.median(r[key] for r in runs if r["delay_s"] == delay), 2)

    slow = {"search_ms_p50": median("search_ms_p50", delay_s), "search_ms_p95": median("search_ms_p95", delay_s)}
    fast = {"search_ms_p50": median("search_ms_p50", 0.0), "search_ms_p95": median("search_ms_p95", 0.0)}
    ratio = round(slow["search_ms_p95"] / fast["search_ms_p95"], 3)
    return {"with_delay": slow, "without_delay": fast, "p95_ratio": ratio, "target": TARGET,
            "target_met": ratio <= TARGET}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="../shared/data/locomo/locomo10_dev.json")
    parser.add_argument("--limit-samples", type=int, default=None, help="only the file's first N conversations")
    parser.add_argument("--delay", type=float, default=2.0, help="seconds the model takes per call in the slow runs")
    parser.add_argument("--runs", type=int, default=3, help="runs of each kind (with and without the delay)")
    parser.add_argument("--rate", type=float, default=20.0, help="searches a second")
    parser.add_argument("--num-shards", type=int, default=2)
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)

    from actors.ray_init import shutdown_ray

    for name in LLM_ENV:  # the ingest runs offline
        os.environ.pop(name, None)
    data = ds.load(args.data, args.limit_samples)
    questions = round_robin(data.samples)
    work = Path(tempfile.mkdtemp(prefix="palimpsest-slow-llm-"))
    model = ScriptedModel()
    try:
        ingested = ingest(work / "store", data, args.num_shards, args.embedder)
        model.server.start()
        os.environ.update({"PALIMPSEST_LLM_BASE_URL": model.server.base_url, "PALIMPSEST_LLM_MODEL": MODEL,
                           "PALIMPSEST_LLM_TIMEOUT_S": str(max(30.0, 5 * args.delay)),
                           "PALIMPSEST_LLM_MAX_RETRIES": "0"})
        delays = [args.delay, 0.0] * args.runs  # alternating, the slow one first
        runs = [one_run(work / "store", work, questions, model, delay, args.rate, n) for n, delay in enumerate(delays)]
    finally:
        model.server.stop()
        shutdown_ray()
        shutil.rmtree(work, ignore_errors=True)
    result = {"data": args.data, "samples": len(data.samples), "messages": len(data.messages),
              "questions": len(questions), "num_shards": args.num_shards, "embedder": args.embedder,
              "delay_s": args.delay, "rate": args.rate, "ingest": ingested, "runs": runs, **summary(runs, args.delay)}
    text = json.dumps(result, indent=2)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    print(text)
    return result


if __name__ == "__main__":
    main()
