"""Audit across every shard log with DuckDB, without going through the actors: read-only by construction.

Each shard file is attached read-only and a view ``events`` unions them, so an
auditor can run SQL (``palimpsest sql``) or the typed filter (``palimpsest
events``). DuckDB lets only one process open a file for writing; if a live
store holds the files, stop it first or export to Parquet from it.

Read-only means read-only, whatever the query text says:

- only one statement, and only a query (``SELECT``/``WITH``/``DESCRIBE``/
  ``SHOW``/``SUMMARIZE`` or ``EXPLAIN``): ``COPY``, ``ATTACH``/``DETACH``,
  ``INSTALL``/``LOAD``, ``CREATE``, ``INSERT``/``UPDATE``/``DELETE``, ``SET``,
  ``PRAGMA`` ... are refused before DuckDB sees them;
- once the logs are attached, the connection loses access to the file system
  (``enable_external_access = false``: no ``read_text('/etc/…')``, no file
  written) and its configuration is locked, so a query cannot turn either back on;
- each query is bounded in time, rows, memory and threads
  (:mod:`events.audit_limits`), and a failed one is told why: a bad query
  is invalid input, a forbidden function a refusal, neither a store fault;
- a reader scoped to one tenant copies that tenant's rows into memory and
  detaches the logs before any query runs: the other tenants' rows are not
  reachable from it, whatever the SQL names.

An encrypted store's payloads are sealed per user: given the shards' ciphers
(the operator's CLI opens the key stores read-only with the master key), the
view ``events`` shows each payload opened, and a forgotten user's as
``{"erased": true, ...}``; without them it shows the stub ``{"sealed":true}``
(the ciphertext is in the log's own ``sealed`` column, not in the view). An
export is therefore plaintext: a copy outside the store that a later forget
cannot reach.

A served store's logs are held open by its shard actors: its server builds the
reader from the rows the shards hand over (:meth:`AuditReader.of_tables`), with
the same checks and the same tenant scoping.

Parquet export writes through pyarrow from the reader's own query, not through
DuckDB's ``COPY``.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from events.audit_limits import DEFAULT_AUDIT_LIMITS, AuditLimits, bound, run
from events.crypto import PayloadCipher
from events.duckdb_log import (
    DAMAGED,
    arrow_batches,
    error_detail,
    fetch_arrow,
    held_by_another_process,
    where_clause,
)
from events.envelope import ENVELOPE_SCHEMA
from events.errors import InvalidInputError, StoreError
from events.log import ScanFilter

QUERY_TYPES = frozenset({duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN})
EXPORT_BATCH_ROWS = 50_000


def _refuse(query: str, why: str) -> InvalidInputError:
    return InvalidInputError([("query", f"{why}; the audit SQL is read-only: one SELECT (or WITH/DESCRIBE/SHOW/"
                                        "SUMMARIZE/EXPLAIN) over the view `events`")], what="audit query")


def check_query(query: str) -> None:
    """Refuse anything but one read-only statement, naming what was found."""
    if not isinstance(query, str) or not query.strip():
        raise _refuse(str(query), "empty")
    try:
        query.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError([("query", "holds a lone surrogate (bytes that were not UTF-8); give the SQL as "
                                           "UTF-8 text")], what="audit query") from None
    try:
        statements = duckdb.extract_statements(query)
    except duckdb.Error as exc:
        raise InvalidInputError([("query", f"does not parse: {exc}")], what="audit query") from exc
    if len(statements) != 1:
        raise _refuse(query, f"{len(statements)} statements")
    kind = statements[0].type
    if kind not in QUERY_TYPES:
        raise _refuse(query, f"a {kind.name} statement")


class AuditReader:
    """Read-only SQL over all shard logs of a store (``events`` view, plus ``shard`` column).

    ``tenant`` scopes the reader to one tenant (a tenant's own audit): only
    that tenant's rows exist for its queries. ``limits`` bound each query of :meth:`sql`; ``None`` leaves
    memory and threads uncapped, for a reader that runs only its own queries (an export, the typed filter).
    """

    def __init__(self, log_files: list[Path], tenant: str | None = None,
                 ciphers: list[PayloadCipher] | None = None,
                 limits: AuditLimits | None = DEFAULT_AUDIT_LIMITS) -> None:
        if not log_files:
            raise StoreError("no shard logs found; is this a palimpsest store directory?")
        self.limits = limits
        self._con = duckdb.connect(":memory:")
        self._con.execute("SET TimeZone = 'UTC'")
        payload = "payload"
        if ciphers is not None:
            _register_opener(self._con, ciphers)
            payload = "palimpsest_open({i}, tenant, user_id, event_id, kind, schema_version, payload, sealed) AS payload"
        columns = ", ".join(payload if n == "payload" else n for n in ENVELOPE_SCHEMA.names)
        selects, aliases = [], []
        for i, path in enumerate(sorted(log_files)):
            alias = f"shard_{i}"
            try:
                self._con.execute(f"ATTACH '{_quoted(path)}' AS {alias} (READ_ONLY)")
            except duckdb.Error as exc:
                raise _attach_error(path, exc) from None
            selects.append(f"SELECT {i} AS shard, {columns.format(i=i)} FROM {alias}.events")
            aliases.append(alias)
        union = " UNION ALL ".join(selects)
        if tenant is None:
            self._con.execute("CREATE VIEW events AS " + union)
        else:  # the tenant's rows only, then the logs go: nothing else is reachable
            self._con.execute(f"CREATE TABLE events AS SELECT * FROM ({union}) WHERE tenant = ?", [tenant])
            for alias in aliases:
                self._con.execute(f"DETACH {alias}")
        self._lock()

    @classmethod
    def of_tables(cls, tables: list[pa.Table], tenant: str | None = None,
                  limits: AuditLimits | None = DEFAULT_AUDIT_LIMITS) -> AuditReader:
        """A reader over rows the shards handed over (a served store, whose logs their actors hold open).

        ``tables[i]`` is shard ``i``'s rows (:data:`ENVELOPE_SCHEMA`); with ``tenant`` only that tenant's rows
        are copied in, whatever the tables hold.
        """
        self = cls.__new__(cls)
        self.limits = limits
        self._con = duckdb.connect(":memory:")
        self._con.execute("SET TimeZone = 'UTC'")
        selects = []
        for i, table in enumerate(tables):
            self._con.register(f"shard_{i}", table.select(ENVELOPE_SCHEMA.names).cast(ENVELOPE_SCHEMA))
            selects.append(f"SELECT {i} AS shard, * FROM shard_{i}")
        if not selects:
            self._con.register("shard_none", ENVELOPE_SCHEMA.empty_table())
            selects.append("SELECT 0 AS shard, * FROM shard_none")
        where = "WHERE tenant = ?" if tenant is not None else ""
        self._con.execute(f"CREATE TABLE events AS SELECT * FROM ({' UNION ALL '.join(selects)}) {where}",
                          [tenant] if tenant is not None else None)
        for name in [f"shard_{i}" for i in range(len(tables))] or ["shard_none"]:
            self._con.unregister(name)
        self._lock()
        return self

    def _lock(self) -> None:
        if self.limits is not None:
            bound(self._con, self.limits)
        self._con.execute("SET enable_external_access = false")
        self._con.execute("SET lock_configuration = true")

    def events(self, flt: ScanFilter, limit: int | None = None) -> pa.Table:
        where, params = where_clause(flt)
        sql = f"SELECT shard, {', '.join(ENVELOPE_SCHEMA.names)} FROM events WHERE {where} ORDER BY tenant, user_id, seq"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return fetch_arrow(self._con, sql, params)

    def count(self, flt: ScanFilter) -> int:
        """How many events :meth:`events` gives for ``flt`` without a limit."""
        where, params = where_clause(flt)
        return self._con.execute(f"SELECT count(*) FROM events WHERE {where}", params).fetchone()[0]

    def sql(self, query: str) -> pa.Table:
        """Run one read-only query within the reader's limits; the view ``events`` spans every shard (or the
        reader's tenant). A bad query raises :class:`InvalidInputError`, a forbidden one
        :class:`~events.errors.QueryForbiddenError`, one past a limit :class:`~events.errors.QueryLimitError`."""
        check_query(query)
        return run(self._con, query, self.limits or DEFAULT_AUDIT_LIMITS)

    def export_parquet(self, out_dir: Path) -> Path:
        """Every event (of the reader's scope) into ``out_dir/events.parquet``, written in batches by pyarrow."""
        out_dir.mkdir(parents=True, exist_ok=True)
        target = out_dir / "events.parquet"
        partial = out_dir / "events.parquet.part"
        reader = arrow_batches(self._con.sql("SELECT * FROM events ORDER BY tenant, user_id, seq"), EXPORT_BATCH_ROWS)
        try:
            with pq.ParquetWriter(partial, reader.schema) as writer:
                for batch in reader:
                    writer.write_batch(batch)
            partial.replace(target)  # a crash mid-export leaves no half-written events.parquet
        finally:
            partial.unlink(missing_ok=True)
        return target

    def close(self) -> None:
        self._con.close()


def _attach_error(path: Path, exc: Exception) -> StoreError:
    """Why a shard log could not be attached, with the fix: a running store holds it, or it is damaged on disk."""
    detail = error_detail(exc)
    if held_by_another_process(detail):
        return StoreError(f"cannot attach {path} read-only: a running store holds it ({detail}); close that store, "
                          "or audit it through its server (`palimpsest --server URL sql ...`)")
    return StoreError(
        f"cannot audit the store: the event log {path} {DAMAGED} ({detail}). Fix: restore the store from a backup "
        "(`palimpsest --store DIR restore BACKUP`) or put back a copy of this file; do not delete it (its users' "
        "memories are in it)")


def _register_opener(con: duckdb.DuckDBPyConnection, ciphers: list[PayloadCipher]) -> None:
    """``palimpsest_open(shard, tenant, user_id, event_id, kind, schema_version, payload, sealed)``: the payload
    opened with its shard's cipher (a vectorised Python function over Arrow arrays)."""
    names = ("tenant", "user_id", "event_id", "kind", "schema_version", "payload", "sealed")

    def opened(shard, tenant, user_id, event_id, kind, schema_version, payload, sealed):
        table = pa.table(dict(zip(names, (tenant, user_id, event_id, kind, schema_version, payload, sealed))))
        shards = shard.to_pylist()
        if len(set(shards)) == 1:
            return ciphers[shards[0]].open_column(table)
        return pa.concat_arrays([ciphers[s].open_column(table.slice(i, 1)) for i, s in enumerate(shards)])

    con.create_function("palimpsest_open", opened, ["INTEGER", "VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR",
                                                    "SMALLINT", "VARCHAR", "BLOB"], "VARCHAR", type="arrow",
                        null_handling="special")  # a clear row (sealed NULL) is passed in too


def _quoted(path: Path) -> str:
    return str(path).replace("'", "''")  # a quote in a directory name must not end the SQL string
