"""Audit across every shard log with DuckDB, without going through the actors.

Each shard file is attached read-only and a view ``events`` unions them, so an
auditor can run any SQL (``palimpsest sql``) or the typed filter
(``palimpsest events``). DuckDB lets only one process open a file for writing;
if a live store holds the files, stop it first or export to Parquet from it.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa

from events.duckdb_log import fetch_arrow, where_clause
from events.envelope import ENVELOPE_SCHEMA
from events.errors import StoreError
from events.log import ScanFilter


class AuditReader:
    """Read-only SQL over all shard logs of a store (``events`` view, plus ``shard`` column)."""

    def __init__(self, log_files: list[Path]) -> None:
        if not log_files:
            raise StoreError("no shard logs found; is this a palimpsest store directory?")
        self._con = duckdb.connect(":memory:")
        self._con.execute("SET TimeZone = 'UTC'")
        selects = []
        for i, path in enumerate(sorted(log_files)):
            alias = f"shard_{i}"
            try:
                self._con.execute(f"ATTACH '{path}' AS {alias} (READ_ONLY)")
            except duckdb.Error as exc:
                raise StoreError(
                    f"cannot attach {path} read-only: {exc}. A running store holds it; "
                    "close that store (or use `palimpsest export` from it) and retry"
                ) from exc
            selects.append(f"SELECT {i} AS shard, * FROM {alias}.events")
        self._con.execute("CREATE VIEW events AS " + " UNION ALL ".join(selects))

    def events(self, flt: ScanFilter, limit: int | None = None) -> pa.Table:
        where, params = where_clause(flt)
        sql = f"SELECT shard, {', '.join(ENVELOPE_SCHEMA.names)} FROM events WHERE {where} ORDER BY tenant, user_id, seq"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return fetch_arrow(self._con, sql, params)

    def sql(self, query: str) -> pa.Table:
        """Run any read-only SQL; the view ``events`` spans every shard."""
        try:
            return fetch_arrow(self._con, query)
        except duckdb.Error as exc:
            raise StoreError(f"audit query failed: {exc}") from exc

    def export_parquet(self, out_dir: Path) -> Path:
        out_dir.mkdir(parents=True, exist_ok=True)
        target = out_dir / "events.parquet"
        self._con.execute(f"COPY (SELECT * FROM events ORDER BY tenant, user_id, seq) TO '{target}' (FORMAT parquet)")
        return target

    def close(self) -> None:
        self._con.close()
