"""Pseudo-relevance feedback over the turn vectors: the best hits find the other items of a list.

A list or multi-hop question ("What video games does Nate play?", "What
movies have both Joanna and Nate seen?") has evidence turns that share little
wording with the question but much with each other: once one movie turn is
at the top, the other movie turns are its nearest neighbours, not the
question's. This stage moves the query vector toward the best ``seeds`` rows
(Rocchio: ``q / |q| + beta · mean of the seeds' unit vectors``), ranks every
turn of the user by cosine to that vector, and gives the best ``candidates``
of them ``weight / (rrf_k + rank)``; turns that were not candidates join as
new rows (when ``allowed``). The seeds themselves are skipped in the ranking
(they are already on top).

Pure: the vectors come from the user's folded vector projection (the stored
turn vectors; nothing is re-encoded), and the per-user matrix is a derived
cache rebuilt when the number of vectors changes.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

import numpy as np

from projections.folds.state import UserMemory


class _Matrices:
    """Per-user unit-normalised turn matrices, rebuilt when the user's vector count changes."""

    def __init__(self) -> None:
        self._cache: dict[int, tuple[weakref.ref, int, list[str], dict[str, int], np.ndarray]] = {}

    def get(self, memory: UserMemory) -> tuple[list[str], dict[str, int], np.ndarray]:
        rows = memory.vectors.rows
        cached = self._cache.get(id(memory))
        if cached is not None and cached[0]() is memory and cached[1] == len(rows):
            return cached[2], cached[3], cached[4]
        ids = list(rows)
        if ids:
            m = np.stack([np.asarray(rows[i].vector, dtype=np.float32) for i in ids])
            m /= np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)
        else:
            m = np.zeros((0, 0), dtype=np.float32)
        if len(self._cache) > 1024:
            self._cache = {k: v for k, v in self._cache.items() if v[0]() is not None}
        index = {memory_id: i for i, memory_id in enumerate(ids)}
        self._cache[id(memory)] = (weakref.ref(memory), len(rows), ids, index, m)
        return ids, index, m


MATRICES = _Matrices()


def prf_term(memory: UserMemory, query_vector: np.ndarray | None, rows: list[list], weight: float,
                  rrf_k: int, seeds: int, candidates: int, beta: float, allowed: Callable[[str], bool]) -> None:
    """Add the PRF term to ``rows`` (best first; the caller re-sorts); no-op without a query vector."""
    if query_vector is None or not rows or seeds < 1 or candidates < 1:
        return
    ids, index, m = MATRICES.get(memory)
    seed_rows = [index[row[2]] for row in rows[:seeds] if row[2] in index]
    if not seed_rows or m.shape[1] != np.asarray(query_vector).size:
        return
    q = np.asarray(query_vector, dtype=np.float32).ravel()
    q = q / max(float(np.linalg.norm(q)), 1e-12) + beta * m[seed_rows].mean(axis=0)
    sims = m @ q
    sims[seed_rows] = -np.inf
    take = min(len(ids), candidates + len(seed_rows) + 32)  # room for turns ``allowed`` refuses
    top = np.argpartition(-sims, take - 1)[:take] if take < len(ids) else np.arange(len(ids))
    top = top[np.lexsort((top, -sims[top]))]
    by_id = {row[2]: row for row in rows}
    rank = 0
    for i in top:
        memory_id = ids[i]
        if not np.isfinite(sims[i]) or not allowed(memory_id):
            continue
        rank += 1
        if rank > candidates:
            break
        row = by_id.get(memory_id)
        if row is None:
            row = by_id[memory_id] = [0.0, -memory.messages.by_id[memory_id].seq, memory_id, {}]
            rows.append(row)
        row[0] += weight / (rrf_k + rank)
        row[3]["prf_rank"] = rank
