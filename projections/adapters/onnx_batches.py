"""Batch encoding spread over one-thread ONNX Runtime sessions, one per core: turns and graph labels.

A batch used to run on one session with two intra-op threads. Each operator
is then split in two halves, and the run waits for the slower half: when a
shard actor holds one of the two cores (it folds and appends the batch
before, while the driver encodes the next), the encoder makes the progress
of one core while using none of the other. Here each core has a session of
its own on one thread, and the rows, sorted by length, are cut into runs of
:data:`ROWS` (fewer where the length halves: :func:`runs`) that the sessions take one after another, so a busy core slows
only its session. Measured in one process on 1,280 LoCoMo dev turns in
batches of 256 (two runs each): quiet, 14.9 and 20.1 s on the two-thread
session against 12.8 and 13.2 s here; beside a process busy 60 % of a core,
19.1 and 19.8 s against 13.4 and 14.1. The vectors are the same to 3e-8
(padding differs with the runs' rows); each run's are those of its rows alone.
"""

from __future__ import annotations

import os
import threading

import numpy as np

MAX_WORKERS = 4  # sessions at most (each holds its own copy of the float32 weights, ~90 MB)
ROWS = 32  # rows per run: more runs than sessions, so a slowed session takes fewer of them


def workers() -> int:
    """How many one-thread sessions batch encoding uses: one per core, at most :data:`MAX_WORKERS`."""
    return max(1, min(MAX_WORKERS, os.cpu_count() or 1))


def feeds(encodings: list, rows) -> dict[str, np.ndarray]:
    """The model's inputs for ``rows`` of ``encodings`` (tokenizer encodings), padded to the longest."""
    width = max(len(encodings[r].ids) for r in rows)
    ids = np.zeros((len(rows), width), dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for i, r in enumerate(rows):
        n = len(encodings[r].ids)
        ids[i, :n] = encodings[r].ids
        mask[i, :n] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}


def runs(encodings: list, size: int) -> list[np.ndarray]:
    """The rows of each run: longest first, at most ``size`` rows a run, and no row shorter than half its run's
    first (a run is padded to its longest row: one 512-token window in a run of short texts made each of them
    cost 512 tokens; the checks of a new e5 graph, whose probes are six short texts and two windows of a long
    one, took 15.5 s in their ONNX runs for that)."""
    lengths = [len(e.ids) for e in encodings]
    order = np.argsort([-n for n in lengths], kind="stable")
    out, start = [], 0
    for i in range(1, len(order) + 1):
        if i == len(order) or i - start == size or 2 * lengths[order[i]] < lengths[order[start]]:
            out.append(order[start:i])
            start = i
    return out


def encode(sessions: list, encodings: list, size: int, dim: int) -> np.ndarray:
    """Vectors of ``encodings`` (one row each), the runs of ``size`` rows shared out over ``sessions``."""
    out = np.empty((len(encodings), dim), dtype=np.float32)
    parts = runs(encodings, size)
    if len(parts) < 2 or len(sessions) < 2:
        for rows in parts:
            out[rows] = sessions[0].run(None, feeds(encodings, rows))[0]
        return out
    pending = iter(parts)
    lock = threading.Lock()
    failed: list[BaseException] = []

    def work(session) -> None:
        while not failed:
            with lock:
                rows = next(pending, None)
            if rows is None:
                return
            try:
                out[rows] = session.run(None, feeds(encodings, rows))[0]  # ONNX Runtime lets go of the GIL here
            except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
                failed.append(exc)

    helpers = [threading.Thread(target=work, args=(s,), daemon=True) for s in sessions[1:len(parts)]]
    for t in helpers:
        t.start()
    work(sessions[0])  # the caller's thread is the first worker
    for t in helpers:
        t.join()
    if failed:
        raise failed[0]
    return out
