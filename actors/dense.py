"""Dense neighbours of one user: an exact cosine search over the user's vectors, in memory or in LanceDB.

A user's vectors are in its folded vectors projection; for the few hundred
or thousand vectors of one user a matrix product is the same exact search
that LanceDB runs without an ANN index (a filtered flat scan), without the
query engine's per-call overhead (measured on the LoCoMo dev store, in process on a loaded machine: LanceDB
p50 19.7 ms, the matrix product well under 1 ms). Users with more than
``IN_MEMORY_MAX`` vectors are searched in LanceDB, the shard's persisted
vector projection. The normalised matrices are a derived cache of at most
``CACHED_USERS`` users, rebuilt when a user's vector count changes. The
similarities of a user whose turns are in two scripts are put on one scale
before they are ranked (:mod:`projections.queries.language_calibration`).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from projections.adapters.lance import LanceVectorTable
from projections.folds.state import UserMemory
from projections.queries.language_calibration import calibrate
from projections.queries.rerank import chinese_flags

IN_MEMORY_MAX = 20_000
CACHED_USERS = 256


@dataclass(slots=True)
class _Cached:
    identity: tuple[int, int]  # the rows dict's id and length when the matrix was built
    ids: list[str]
    matrix: np.ndarray  # the rows' vectors, normalised
    groups: np.ndarray | None = None  # each row's script (1: mainly Chinese), filled by the first calibrated search


class DenseIndex:
    def __init__(self, table: LanceVectorTable) -> None:
        self.table = table
        self._cache: OrderedDict[tuple[str, str, str], _Cached] = OrderedDict()  # by (tenant, user, model)

    def search(self, tenant: str, user_id: str, memory: UserMemory, query: np.ndarray,
               k: int, model: str = "", calibrated: bool = True) -> list[tuple[str, float]]:
        """The ``k`` nearest memories of the user by cosine similarity, best first (ties: log order).

        ``model`` is the query vector's model ("": the user's active one); the user's vectors of that model are
        searched (during a re-embedding's switch a query may come encoded by the model the user is leaving). The
        LanceDB table holds each user's vectors of its first model; others are searched in memory. With
        ``calibrated``, the similarities of turns in two scripts are put on one scale first (not for a user
        searched in LanceDB)."""
        vectors = memory.vectors
        model = model or vectors.active
        rows = vectors.of_model(model)
        if len(rows) > IN_MEMORY_MAX and model == vectors.first:
            return self.table.search(tenant, user_id, query, k)
        entry = self._matrix((tenant, user_id), rows, model)
        ids, matrix = entry.ids, entry.matrix
        q = np.asarray(query, dtype=np.float32).ravel()
        norm = float(np.linalg.norm(q))
        if not ids or norm == 0.0 or q.shape[0] != matrix.shape[1]:
            return []
        sims = matrix @ (q / norm)
        if calibrated:
            if entry.groups is None:
                entry.groups = np.array(chinese_flags(memory, ids), dtype=np.int8)
            sims = calibrate(sims, entry.groups)
        k = min(k, len(ids))
        top = np.argpartition(-sims, k - 1)[:k] if k < len(ids) else np.arange(len(ids))
        top = top[np.lexsort((top, -sims[top]))]
        return [(ids[i], sim) for i, sim in zip(top.tolist(), sims[top].tolist())]

    def forget(self, stream: tuple[str, str]) -> None:
        """Drop the user's cached matrix (an erased user's vectors must not stay in memory either)."""
        for key in [key for key in self._cache if key[:2] == stream]:
            self._cache.pop(key, None)

    def _matrix(self, stream: tuple[str, str], rows: dict, model: str) -> _Cached:
        key = (id(rows), len(rows))
        stream = (*stream, model)
        cached = self._cache.get(stream)
        if cached is not None and cached.identity == key:
            self._cache.move_to_end(stream)
            return cached
        ids = list(rows)
        if ids:
            matrix = np.stack([np.asarray(rows[i].vector, dtype=np.float32) for i in ids])
            norms = np.linalg.norm(matrix, axis=1, keepdims=True)
            matrix = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
        else:
            matrix = np.zeros((0, 0), dtype=np.float32)
        entry = self._cache[stream] = _Cached(key, ids, matrix)
        self._cache.move_to_end(stream)
        while len(self._cache) > CACHED_USERS:
            self._cache.popitem(last=False)
        return entry
