"""The LanceDB side of the vector projection: one table per shard, rows
filtered by tenant and user at query time.

This is the only writer of the table. It is a derived view: after a restart
``reconcile`` makes it equal to the vectors folded from the log (adding rows
whose append was acknowledged but not yet indexed, dropping rows the log does
not know), and ``rebuild`` rewrites it from scratch.
"""

from __future__ import annotations

import functools
import hashlib
import threading
import time
import warnings
from collections.abc import Iterable
from datetime import timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa

from events.errors import StoreError
from projections.adapters.lance_import import import_lancedb
from projections.folds.vectors import VectorRow

Stream = tuple[str, str]
REBUILD_ROWS = 50_000  # rows per write of a rebuild (~80 MB of 384-dim vectors)
# Added rows are held and written together (a LanceDB write costs ~4 ms of CPU whatever its size: a fragment and a
# table version each): once this many are held, or by the shard's flusher once the oldest has waited FLUSH_S, and
# before anything reads the table. Rows lost with the process are added again when their user is next loaded
# (the table is reconciled with the log's vectors, ``actors.user_store``).
FLUSH_ROWS = 256
FLUSH_S = 1.0


def _one_write(method):
    """``method`` run while no other write of the table runs (:attr:`LanceVectorTable._writes`)."""
    @functools.wraps(method)
    def guarded(self, *args, **kwargs):
        with self._writes:
            return method(self, *args, **kwargs)
    return guarded


def _held_written(method):
    """``method`` (it reads the table) run once the rows held are written, and any write of rows taken from them
    has ended (the shard's flusher may be writing them: a read then waits for it, see :meth:`LanceVectorTable.flush`)."""
    @functools.wraps(method)
    def reading(self, *args, **kwargs):
        if self._held or self._flushing:  # in this order: flush() marks its write before it takes the rows
            self.flush()
        return method(self, *args, **kwargs)
    return reading


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


class LanceVectorTable:
    def __init__(self, directory: str | Path, table: str, dim: int) -> None:
        self.dim = dim
        self.table_name = table
        self.schema = pa.schema(
            [
                pa.field("tenant", pa.string(), nullable=False),
                pa.field("user_id", pa.string(), nullable=False),
                pa.field("memory_id", pa.string(), nullable=False),
                pa.field("seq", pa.int64(), nullable=False),
                pa.field("vector", pa.list_(pa.float32(), dim), nullable=False),
            ]
        )
        # imported here: a LanceDB runtime in the driver does not survive Ray's worker forks
        self._db = import_lancedb().connect(str(directory))
        try:
            self._table = self._db.create_table(table, schema=self.schema, exist_ok=True)
        except ValueError as exc:  # the table exists with another schema: vectors of another size
            held = self._db.open_table(table).schema.field("vector").type
            size = getattr(held, "list_size", None)
            raise StoreError(f"the vector table {table!r} in {directory} holds vectors of {size} numbers, but the "
                             f"store says {dim}; set dim in store.json back to {size}") from exc
        self._adds_since_optimize = 0
        self._held: list[tuple[str, str, VectorRow]] = []  # rows added and not yet written
        self._held_since: float | None = None
        self._flushing = 0  # writes of rows taken from ``_held`` under way (nested: optimize() flushes too)
        # One write at a time: the shard adds a command's rows without the projections' lock, while a query may
        # reconcile a user it loads (reads need no lock: each reads a committed version of the table).
        self._writes = threading.RLock()

    def _batch(self, rows: list[tuple[str, str, VectorRow]]) -> pa.Table:
        flat = np.concatenate([r.vector for _, _, r in rows]).astype(np.float32, copy=False)
        return pa.table(
            {
                "tenant": [t for t, _, _ in rows],
                "user_id": [u for _, u, _ in rows],
                "memory_id": [r.memory_id for _, _, r in rows],
                "seq": [r.seq for _, _, r in rows],
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(flat), self.dim),
            },
            schema=self.schema,
        )

    @_one_write
    def add(self, rows: list[tuple[str, str, VectorRow]]) -> None:
        """Hold ``rows`` to be written with others (:data:`FLUSH_ROWS`, :data:`FLUSH_S`); every read sees them."""
        if not rows:
            return
        if not self._held:
            self._held_since = time.monotonic()
        self._held.extend(rows)
        if len(self._held) >= FLUSH_ROWS:
            self.flush()

    @_one_write
    def flush(self) -> int:
        """Write the rows held; returns how many. A read that finds none held while they are being written waits
        for the write (it takes this lock), so it never misses them."""
        self._flushing += 1
        rows, self._held, self._held_since = self._held, [], None
        try:
            self._write_rows(rows)
        finally:
            self._flushing -= 1
        return len(rows)

    def flush_due(self, now: float | None = None) -> bool:
        """Rows have been held for :data:`FLUSH_S` or more."""
        since = self._held_since
        return since is not None and (time.monotonic() if now is None else now) - since >= FLUSH_S

    def _write_rows(self, rows: list[tuple[str, str, VectorRow]]) -> None:
        if not rows:
            return
        self._table.add(self._batch(rows))
        self._adds_since_optimize += 1
        if self._adds_since_optimize >= 64:  # many small fragments slow the scan down
            self.optimize()

    @_one_write
    def optimize(self) -> None:
        self.flush()
        self._table.optimize()
        self._adds_since_optimize = 0

    @_held_written
    def search(self, tenant: str, user_id: str, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        """Nearest memories of one user by cosine similarity, best first."""
        result = (
            self._table.search(np.asarray(vector, dtype=np.float32))
            .distance_type("cosine")
            .where(f"tenant = {_quote(tenant)} AND user_id = {_quote(user_id)}", prefilter=True)
            .select(["memory_id", "_distance"])
            .limit(k)
            .to_arrow()
        )
        ids = result.column("memory_id").to_pylist()
        dist = result.column("_distance").to_pylist()
        return [(m, 1.0 - d) for m, d in zip(ids, dist)]

    @_held_written
    def keys(self) -> set[tuple[str, str, str]]:
        # a scan of the three key columns only (the whole table would read every vector too)
        t = self._table.search().select(["tenant", "user_id", "memory_id"]).limit(None).to_arrow()
        return set(zip(*(t.column(c).to_pylist() for c in ("tenant", "user_id", "memory_id"))))

    @_one_write
    def reconcile(self, expected: Iterable[tuple[str, str, VectorRow]]) -> tuple[int, int]:
        """Make the table hold exactly ``expected``; returns (rows added, rows removed)."""
        want = {(t, u, r.memory_id): (t, u, r) for t, u, r in expected}
        have = self.keys()  # the rows held are written first
        missing = [want[key] for key in want.keys() - have]
        extra = have - want.keys()
        for tenant, user_id, memory_id in extra:
            self._table.delete(
                f"tenant = {_quote(tenant)} AND user_id = {_quote(user_id)} AND memory_id = {_quote(memory_id)}"
            )
        self._write_rows(missing)
        return len(missing), len(extra)

    @_one_write
    def reconcile_stream(self, tenant: str, user_id: str, rows: Iterable[VectorRow],
                         have: set[str]) -> tuple[int, int]:
        """Make one user's rows equal ``rows``, given the memory ids the table holds for it (``have``)."""
        want = {r.memory_id: r for r in rows}
        have = have | {r.memory_id for t, u, r in self._held if (t, u) == (tenant, user_id)}  # held: written soon
        missing = [(tenant, user_id, want[m]) for m in want.keys() - have]
        extra = have - want.keys()
        if extra:
            self.flush()  # a held row among them is deleted with the others
        for memory_id in extra:
            self._table.delete(
                f"tenant = {_quote(tenant)} AND user_id = {_quote(user_id)} AND memory_id = {_quote(memory_id)}"
            )
        self._write_rows(missing)
        return len(missing), len(extra)

    @_one_write
    def erase_stream(self, tenant: str, user_id: str) -> int:
        """Remove one user's rows from every file of the table; returns how many rows it had.

        A delete only marks rows (their vectors stay in the fragment until a compaction materialises it, and
        compaction skips fragments with few deletions), so the table is rewritten from the rows of the other
        users and every older version is cleaned up. Costs a copy of the shard's vectors: erasure is rare.
        """
        held = len(self._held)
        self._held = [row for row in self._held if row[:2] != (tenant, user_id)]  # never written now
        held -= len(self._held)
        mine = f"tenant = {_quote(tenant)} AND user_id = {_quote(user_id)}"
        removed = self._table.count_rows(mine) + held
        if removed == held:
            return removed
        keep = self._table.search().where(f"NOT ({mine})", prefilter=True).limit(None).to_arrow()
        self._table = self._db.create_table(self.table_name, data=keep.select(self.schema.names).cast(self.schema),
                                            schema=self.schema, mode="overwrite")
        with warnings.catch_warnings():  # "removes every version except the latest": that is the point here
            warnings.simplefilter("ignore", UserWarning)
            self._table.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)
        self._adds_since_optimize = 0
        return removed

    @_one_write
    def rebuild(self, rows: Iterable[tuple[str, str, VectorRow]], chunk: int = REBUILD_ROWS) -> None:
        """The table rewritten to hold exactly ``rows``: one write per ``chunk`` rows (a write costs ~10-20 ms
        whatever its size, and ``rows`` may be generated user by user so that no more than a chunk is held)."""
        self._held, self._held_since = [], None  # ``rows`` is the whole table: what was held is in it or is gone
        batch, first = [], True
        for row in rows:
            batch.append(row)
            if len(batch) >= chunk:
                self._write(batch, first)
                batch, first = [], False
        if batch or first:
            self._write(batch, first)

    def _write(self, rows: list[tuple[str, str, VectorRow]], overwrite: bool) -> None:
        if not overwrite:
            self._write_rows(rows)
            return
        data = self._batch(rows) if rows else self.schema.empty_table()
        self._table = self._db.create_table(self.table_name, data=data, schema=self.schema, mode="overwrite")
        self._adds_since_optimize = 0

    @_held_written
    def digest(self) -> str:
        t = self._table.to_arrow()
        keys = zip(*(t.column(c).to_pylist() for c in ("tenant", "user_id", "memory_id")))
        vecs = t.column("vector").combine_chunks().flatten().to_numpy().reshape(-1, self.dim) if t.num_rows else []
        h = hashlib.sha256()
        for key, vec in sorted(zip(keys, vecs), key=lambda kv: kv[0]):
            h.update(repr(key).encode())
            h.update(np.asarray(vec, dtype="<f4").tobytes())
        return h.hexdigest()

    @_held_written
    def count(self) -> int:
        return self._table.count_rows()
