"""The cost bound of an audit query, and what a refused or failed query is told.

An audit query runs on its reader's own DuckDB connection, set up before
the configuration is locked:

- ``threads`` worker threads (1 by default: a query holds at most one core);
- a memory limit of what the reader already holds (a tenant's copied rows)
  plus ``memory_mb``, and no temporary directory, so nothing spills to disk:
  past the cap DuckDB stops the query;
- a timer that interrupts it (``con.interrupt()``) after ``timeout_s``;
- rows fetched in batches, refused past ``max_rows`` rows or ``memory_mb``
  of result (what the caller would be sent).

Each refusal names the limit, its setting (``audit_limits`` of
:class:`palimpsest.settings.StoreSettings`) and how to narrow the query.
DuckDB's other errors are sorted by whose fault they are: a query that
touches a file, a secret or an extension is forbidden (403 over HTTP), one
that names no table, column or function the view has is invalid input
(400), and only a failure to read the store's own files is a store error.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

import duckdb
import pyarrow as pa

from events.duckdb_log import arrow_batches, error_detail
from events.envelope import ENVELOPE_SCHEMA
from events.errors import InvalidInputError, PalimpsestError, QueryForbiddenError, QueryLimitError, StoreError

FETCH_ROWS = 2048
MB = 1024 * 1024
WHAT = "audit query"
NARROW = ("narrow it: filter with WHERE (tenant, user_id, kind, occurred_at, seq), aggregate with GROUP BY, or add "
          "a LIMIT")


@dataclass(frozen=True)
class AuditLimits:
    """What one audit query may cost before it is stopped."""

    timeout_s: float = 10.0
    max_rows: int = 100_000
    memory_mb: int = 256
    threads: int = 1

    def __post_init__(self) -> None:
        problems = []
        t = self.timeout_s
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t <= 0:
            problems.append(f"timeout_s={t!r}: give a number of seconds above 0")
        for name, least in (("max_rows", 1), ("memory_mb", 16), ("threads", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                problems.append(f"{name}={value!r}: give a whole number of at least {least}")
        if problems:
            raise ValueError("audit_limits: " + "; ".join(problems))


DEFAULT_AUDIT_LIMITS = AuditLimits()


def bound(con: duckdb.DuckDBPyConnection, limits: AuditLimits) -> None:
    """Cap the connection's threads and memory (call it with the data loaded, before the configuration is locked)."""
    con.execute(f"SET threads = {int(limits.threads)}")
    con.execute("SET temp_directory = ''")  # no spilling: past the memory cap the query stops
    [(held,)] = con.execute("SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory()").fetchall()
    con.execute(f"SET memory_limit = '{(int(held) + limits.memory_mb * MB) // 1024}KiB'")


def run(con: duckdb.DuckDBPyConnection, query: str, limits: AuditLimits) -> pa.Table:
    """The query's rows, or the error that says why there are none (see the module docstring)."""
    timer = threading.Timer(limits.timeout_s, con.interrupt)
    timer.daemon = True
    reader, batches, rows, size = None, [], 0, 0
    timer.start()
    try:
        rel = con.sql(query)
        if rel is None:
            return pa.table({})
        reader = arrow_batches(rel, FETCH_ROWS)
        for batch in reader:
            rows, size = rows + batch.num_rows, size + batch.nbytes
            if rows > limits.max_rows:
                raise _limit(f"returns more than {limits.max_rows:,} rows (audit_limits.max_rows); {NARROW}; "
                             "for the whole log use `palimpsest export` (Parquet)")
            if size > limits.memory_mb * MB:
                raise _limit(f"its result is over {limits.memory_mb} MB (audit_limits.memory_mb); select fewer "
                             "columns (payload is the large one) or fewer rows")
            batches.append(batch)
        return pa.Table.from_batches(batches, schema=reader.schema)
    except duckdb.Error as exc:
        raise query_error(exc, limits) from None
    finally:
        timer.cancel()
        if reader is not None:
            reader.close()


def query_error(exc: duckdb.Error, limits: AuditLimits) -> PalimpsestError:
    """What the caller is told about DuckDB's error: whose fault it is and the fix."""
    detail = error_detail(exc)
    if isinstance(exc, duckdb.InterruptException):
        return _limit(f"ran longer than {limits.timeout_s:g} s (audit_limits.timeout_s) and was stopped; {NARROW}")
    if isinstance(exc, duckdb.OutOfMemoryException):
        return _limit(f"needs more than {limits.memory_mb} MB of memory (audit_limits.memory_mb) and was stopped; "
                      f"{NARROW}; avoid joining large tables with each other (a cross join), sorting every row, "
                      "or string_agg/list over every row")
    if isinstance(exc, duckdb.PermissionException):
        return QueryForbiddenError([("query", f"{detail}; the audit SQL reads the view `events` only (no files, "
                                              "secrets, extensions or settings): remove that function")], what=WHAT)
    if isinstance(exc, duckdb.IOException):
        return StoreError(f"audit query failed reading the store: {detail}")
    return InvalidInputError([("query", f"{detail}; the audit SQL sees one view, `events`, with the columns shard, "
                                        f"{', '.join(ENVELOPE_SCHEMA.names)}")], what=WHAT)


def _limit(message: str) -> QueryLimitError:
    return QueryLimitError([("query", message)], what=WHAT)
