"""The ingest ratio of :mod:`benchmarks.locomo`: encode-only, the ingest, encode-only again ("a sandwich").

One sandwich's ratio moves with this shared VM's speed by more than the
ratio's margin: in one process, minutes apart, the same encode-only pass over
MemDaily dev took 49 to 57 CPU seconds (2026-11-28). ``--speed-runs N``
repeats the sandwich in N - 1 more fresh stores after the main run (whose
store answers the questions), one after another, and the result keeps every
run's ratio beside their median, the figure the summary reports. Each run
warms its store up (:meth:`palimpsest.Memory.warm_up`) and waits for the
shards' idle-time work before the second encode-only pass, as the main run does.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.resources import cpu_between, cpu_snapshot

BATCH_SIZE = 256  # messages per ingest chunk, and per encode-only call


def encode_batched(embedder, texts: list[str], cpu: list | None = None) -> tuple[np.ndarray, float]:
    """The vectors of ``texts`` in the ingest's chunks, and the wall seconds; the CPU seconds of this process and
    the processes under it (:func:`benchmarks.resources.cpu_between`) appended to ``cpu`` when given."""
    started, before = time.perf_counter(), cpu_snapshot() if cpu is not None else None
    parts = [embedder.encode(texts[i : i + BATCH_SIZE]) for i in range(0, len(texts), BATCH_SIZE)]
    seconds = time.perf_counter() - started
    if cpu is not None:
        cpu.append(cpu_between(before, cpu_snapshot()))
    return (np.concatenate(parts) if parts else np.zeros((0, embedder.dim), np.float32)), seconds


def figures(ingest_s: float, ingest_cpu: dict, encode_s: list[float], encode_cpu: list[dict]) -> dict:
    """One sandwich: its seconds, and the ingest's rate over encode-only's (mean of the two passes), by wall
    time and by CPU time (``None`` when the ingest took less CPU than the clock ticks /proc counts)."""
    return {"ingest_seconds": ingest_s, "encode_only_seconds_before_after": encode_s,
            "ingest_vs_encode": statistics.fmean(encode_s) / ingest_s,
            "ingest_vs_encode_cpu": (statistics.fmean(c["total"] for c in encode_cpu) / ingest_cpu["total"]
                                     if ingest_cpu["total"] > 0 else None)}


def sandwich(messages: list[dict], texts: list[str], *, tenant: str, languages: tuple[str, ...],
             num_shards: int | None, embedder: str) -> dict:
    """Encode-only, an ingest of ``messages`` into a fresh store (removed after), encode-only: :func:`figures`."""
    from palimpsest.memory import Memory

    store = Path(tempfile.mkdtemp(prefix="palimpsest-speed-"))
    mem = Memory.open(store, num_shards=num_shards, embedder=embedder)
    try:
        mem.warm_up(languages)
        mem.consolidate_every = 0
        encode_cpu: list[dict] = []
        _, before = encode_batched(mem.embedder, texts, encode_cpu)
        started, cpu = time.perf_counter(), cpu_snapshot()
        report = mem.add_messages(messages, tenant=tenant, batch_size=BATCH_SIZE)
        ingest_s, ingest_cpu = time.perf_counter() - started, cpu_between(cpu, cpu_snapshot())
        if report.created != len(messages):
            raise SystemExit(f"speed run: {report.created} of {len(messages)} turns were new in a fresh store")
        mem.wait_idle()
        _, after = encode_batched(mem.embedder, texts, encode_cpu)
    finally:
        mem.close()
        shutil.rmtree(store, ignore_errors=True)
    return figures(ingest_s, ingest_cpu, [before, after], encode_cpu)


def summary(runs: list[dict]) -> dict:
    """Every run's two ratios and their medians (the main run first)."""
    cpu = [r["ingest_vs_encode_cpu"] for r in runs if r["ingest_vs_encode_cpu"] is not None]
    return {"runs": len(runs),
            "ingest_vs_encode_runs": [r["ingest_vs_encode"] for r in runs],
            "ingest_vs_encode_cpu_runs": [r["ingest_vs_encode_cpu"] for r in runs],
            "ingest_vs_encode_median": statistics.median(r["ingest_vs_encode"] for r in runs),
            "ingest_vs_encode_cpu_median": statistics.median(cpu) if cpu else None,
            "ingest_seconds_runs": [r["ingest_seconds"] for r in runs],
            "encode_only_seconds_runs": [r["encode_only_seconds_before_after"] for r in runs]}
