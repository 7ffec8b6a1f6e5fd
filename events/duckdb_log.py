"""The durable backend: one DuckDB file per shard, one writer (the shard actor).

DuckDB writes each commit to its write-ahead log and syncs it before the
commit returns, so an acknowledged append survives a crash of the process.
A constraint violation or any error inside the transaction rolls the whole
batch back.

With a :class:`~events.crypto.PayloadCipher` (an encrypted store) every
payload and command outcome of a user is sealed under that user's data key
on the way in and opened on the way out; keys are looked up once per stream
per batch. An encrypted log's ``events`` table has one more column,
``sealed`` (BLOB: the compressed, sealed payload; ``payload`` holds a stub).
``rows`` (the served audit) returns payloads opened.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow as pa
import structlog

from events.crypto import PayloadCipher
from events.envelope import ENVELOPE_SCHEMA, Envelope, from_arrow, to_arrow
from events.errors import ConcurrencyError, StoreError
from events.log import CommandRecord, EventLog, ScanFilter
from events.touch_block import TOUCH_KIND, TOUCH_SQL_TYPE, fold_items, touch_column

DDL = """
CREATE TABLE IF NOT EXISTS events (
    tenant VARCHAR NOT NULL,
    user_id VARCHAR NOT NULL,
    seq BIGINT NOT NULL,
    event_id VARCHAR NOT NULL PRIMARY KEY,
    kind VARCHAR NOT NULL,
    schema_version SMALLINT NOT NULL,
    occurred_at TIMESTAMPTZ NOT NULL,
    recorded_at TIMESTAMPTZ NOT NULL,
    causation_id VARCHAR,
    correlation_id VARCHAR,
    payload VARCHAR NOT NULL,
    UNIQUE (tenant, user_id, seq)
);
CREATE TABLE IF NOT EXISTS commands (
    command_id VARCHAR NOT NULL PRIMARY KEY,
    kind VARCHAR NOT NULL,
    tenant VARCHAR NOT NULL,
    user_id VARCHAR NOT NULL,
    recorded_at TIMESTAMPTZ NOT NULL,
    event_ids VARCHAR[] NOT NULL,
    outcome VARCHAR NOT NULL
)
"""
SEALED_DDL = DDL.replace("    payload VARCHAR NOT NULL,\n", "    payload VARCHAR NOT NULL,\n    sealed BLOB,\n", 1)
SCAN_BATCH = 20_000
logger = structlog.get_logger("palimpsest.log")
LOG_ERRORS = (duckdb.Error,)  # what reading a damaged log file raises (the shard turns it into ``open_error``)


def fetch_arrow(con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None) -> pa.Table:
    """Query result as one Arrow table (relation API: no extra copy of the rows)."""
    rel = con.sql(sql, params=params or None)
    fetch = getattr(rel, "to_arrow_table", None) or rel.fetch_arrow_table
    return fetch()


def arrow_batches(rel: duckdb.DuckDBPyRelation, rows: int):
    """The relation's rows as Arrow record batches of at most ``rows`` (``to_arrow_reader`` on DuckDB 1.4+, where
    ``fetch_arrow_reader`` is deprecated)."""
    reader = getattr(rel, "to_arrow_reader", None) or rel.fetch_arrow_reader
    return reader(rows)


def fold_select(names: list[str], prefix: str = "") -> str:
    """The columns of a fold's scan of a log whose columns are ``names``: a touch row whose clear ``touch`` is
    set is folded from it, so its payload is not read (a touch's sealed payload is most of a log's bytes)."""
    return ", ".join([*(f"CASE WHEN {prefix}touch IS NULL THEN {prefix}{n} END AS {n}"
                        if n in ("payload", "sealed") else prefix + n for n in names), prefix + "touch"])


def where_clause(flt: ScanFilter) -> tuple[str, list]:
    """SQL predicate and parameters for a scan filter (shared with the audit reader)."""
    parts, params = ["TRUE"], []
    for column, op, value in (
        ("tenant", "=", flt.tenant),
        ("user_id", "=", flt.user_id),
        ("seq", ">=", flt.from_seq),
        ("seq", "<=", flt.to_seq),
        ("occurred_at", ">=", flt.since),
        ("occurred_at", "<=", flt.until),
    ):
        if value is not None:
            parts.append(f"{column} {op} ?")
            params.append(value)
    if flt.kinds is not None:
        # An empty tuple selects no kind, as ScanFilter.matches does (`kind IN ()` is not SQL).
        parts.append(f"kind IN ({', '.join('?' for _ in flt.kinds)})" if flt.kinds else "FALSE")
        params.extend(flt.kinds)
    return " AND ".join(parts), params


DAMAGED = "is damaged and cannot be read"  # in the message of a damaged log: the one fault a shard may be down alone for


def error_detail(exc: Exception) -> str:
    """The first line of DuckDB's error (its name when it says nothing)."""
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def held_by_another_process(detail: str) -> bool:
    """Whether DuckDB refused a log file because another process holds its lock (not because it is damaged)."""
    return "could not set lock" in detail.lower() or "conflicting lock" in detail.lower()


def open_error(path: Path, exc: Exception) -> StoreError:
    """Why a log file did not open, with the fix: held by another process, or damaged on disk."""
    detail = error_detail(exc)
    if held_by_another_process(detail):
        return StoreError(f"cannot open event log {path}: another process holds it ({detail}); stop that process "
                          "(only the store's shard actor may open a log) and open the store again")
    return StoreError(
        f"the event log {path} {DAMAGED} ({detail}); the other shards keep working. Fix: "
        f"restore the store from a backup (`palimpsest --store DIR restore BACKUP`) or put back a copy of this "
        f"file; do not delete it (its users' memories are in it)")


class DuckDBEventLog(EventLog):
    """Append-only event table in one DuckDB file."""

    def __init__(self, path: str | Path, cipher: PayloadCipher | None = None) -> None:
        super().__init__()
        self.path = Path(path)
        self.cipher = cipher
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._con = duckdb.connect(str(self.path))
            self._con.execute("SET TimeZone = 'UTC'")
            self._con.execute(DDL if cipher is None else SEALED_DDL)
            rows = self._con.execute("SELECT tenant, user_id, max(seq) FROM events GROUP BY ALL").fetchall()
            columns = {name for (name,) in self._con.execute(
                "SELECT column_name FROM duckdb_columns() WHERE database_name = current_database() AND "
                "table_name = 'events'").fetchall()}  # fetched whole: no result left open
            if "touch" not in columns:  # a log from before the clear touch column (events.touch_block)
                self._con.execute(f"ALTER TABLE events ADD COLUMN touch {TOUCH_SQL_TYPE}")
            has_sealed = "sealed" in columns
        except duckdb.Error as exc:
            raise open_error(self.path, exc) from None
        if has_sealed != (cipher is not None):
            self._con.close()
            raise StoreError(
                f"the event log {self.path} is {'encrypted' if has_sealed else 'plaintext'}, but it was opened "
                f"{'without' if has_sealed else 'with'} a key store; open the store through palimpsest (store.json "
                "says whether it is encrypted; `palimpsest encrypt --out NEW` copies a plaintext store into an "
                "encrypted one)")
        self._heads = {(t, u): int(s) for t, u, s in rows}
        self._names = ENVELOPE_SCHEMA.names + (["sealed"] if has_sealed else [])
        self._columns = ", ".join(self._names)
        self._fold_columns = fold_select(self._names)
        # Appends go through a connection of their own: a writer thread (the shard's touch flush) may append
        # while another thread reads through cursors of ``_con`` (DuckDB connections are not shared by threads).
        self._writer = self._con.cursor()

    def _write(self, envelopes: list[Envelope], command: CommandRecord | None) -> None:
        batch = to_arrow(envelopes, self.cipher)
        sealed = batch.column("sealed") if self.cipher else None
        batch = batch.append_column("touch", touch_column(envelopes, sealed))
        outcome = command.outcome if command is not None else None
        if command is not None and self.cipher is not None:
            outcome = self.cipher.seal_outcome(command.command_id, command.kind, command.tenant, command.user_id, outcome)
        con = self._writer
        con.execute("BEGIN TRANSACTION")
        try:
            con.register("_pending_batch", batch)
            con.execute("INSERT INTO events BY NAME SELECT * FROM _pending_batch")
            if command is not None:
                con.execute(
                    "INSERT INTO commands VALUES (?, ?, ?, ?, now(), ?, ?)",
                    [command.command_id, command.kind, command.tenant, command.user_id, list(command.event_ids),
                     outcome],
                )
            con.execute("COMMIT")
        except duckdb.ConstraintException as exc:
            con.execute("ROLLBACK")
            raise ConcurrencyError(f"batch rejected, nothing written: {exc}") from exc
        except BaseException:
            con.execute("ROLLBACK")
            raise
        finally:
            con.unregister("_pending_batch")

    def _read(self, flt: ScanFilter) -> Iterator[Envelope]:
        where, params = where_clause(flt)
        # A cursor of its own, so a scan being consumed never sees a later append half-way.
        rel = self._con.cursor().sql(
            f"SELECT {self._columns} FROM events WHERE {where} ORDER BY tenant, user_id, seq",
            params=params or None,
        )
        for batch in arrow_batches(rel, SCAN_BATCH):
            yield from from_arrow(pa.Table.from_batches([batch]), self.cipher)

    def fold_scan(self, flt: ScanFilter | None = None) -> Iterator:
        """What :func:`projections.folds.state.fold` takes for the events :meth:`scan` returns: envelopes, and
        runs of touch rows as :class:`~events.touch_block.TouchBlock` s (their payloads not opened)."""
        where, params = where_clause(flt or ScanFilter())
        rel = self._con.cursor().sql(
            f"SELECT {self._fold_columns} FROM events WHERE {where} ORDER BY tenant, user_id, seq",
            params=params or None)
        for batch in arrow_batches(rel, SCAN_BATCH):
            yield from fold_items(pa.Table.from_batches([batch]), self.cipher)

    def backfill_touches(self) -> int:
        """Set the clear ``touch`` column of touch rows written before it (their payloads opened once), so a fold
        reads them as columns too; a forgotten user's stay NULL. Returns the rows set. One transaction."""
        rel = self._con.cursor().sql(f"SELECT {self._columns} FROM events WHERE kind = '{TOUCH_KIND}' AND touch "
                                     "IS NULL ORDER BY tenant, user_id, seq")
        updates = []
        for batch in arrow_batches(rel, SCAN_BATCH):
            table = pa.Table.from_batches([batch])
            column = touch_column(from_arrow(table, self.cipher), table.column("sealed") if self.cipher else None)
            updates.append(pa.table({"event_id": table.column("event_id"), "touch": column}).filter(column.is_valid()))
        if not updates:
            return 0
        rows = pa.concat_tables(updates)
        started = time.perf_counter()
        con = self._writer
        con.execute("BEGIN TRANSACTION")
        try:
            con.register("_touch_rows", rows)
            con.execute("UPDATE events SET touch = t.touch FROM _touch_rows t WHERE events.event_id = t.event_id")
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        finally:
            con.unregister("_touch_rows")
        logger.info("touch_column_backfilled", log=str(self.path), rows=rows.num_rows,
                    seconds=round(time.perf_counter() - started, 2))
        return rows.num_rows

    def rows(self, flt: ScanFilter | None = None) -> pa.Table:
        """The stored rows as written (payloads not upcast; sealed ones opened, erased ones marked), in scan order."""
        where, params = where_clause(flt or ScanFilter())
        sql = f"SELECT {self._columns} FROM events WHERE {where} ORDER BY tenant, user_id, seq"
        table = fetch_arrow(self._con.cursor(), sql, params)
        if self.cipher is None:
            return table
        opened = self.cipher.open_column(table) if table.num_rows else pa.array([], pa.string())
        return table.set_column(table.schema.get_field_index("payload"), ENVELOPE_SCHEMA.field("payload"),
                                opened).select(ENVELOPE_SCHEMA.names)

    def model_id(self) -> str | None:
        if self.cipher is not None:  # sealed payloads: the first one that still opens
            rel = self._con.cursor().sql(f"SELECT {self._columns} FROM events WHERE kind = 'message_embedded'")
            for batch in arrow_batches(rel, 64):
                for env in from_arrow(pa.Table.from_batches([batch]), self.cipher):
                    if env.event.kind == "message_embedded":
                        return env.event.model_id
            return None
        row = self._con.cursor().execute(
            "SELECT json_extract_string(payload, '$.model_id') FROM events WHERE kind = 'message_embedded' LIMIT 1"
        ).fetchone()
        return row[0] if row else None

    def has_kind(self, kind: str) -> bool:
        """Whether the log holds any event of ``kind`` (the kind column is never sealed)."""
        return self._con.cursor().execute("SELECT 1 FROM events WHERE kind = ? LIMIT 1", [kind]).fetchone() is not None

    def forgotten(self) -> list[tuple[str, str, int, int]]:
        """Every ``user_forgotten`` event (clear payloads): (tenant, user, seq, key generation), in log order."""
        rows = self._con.cursor().execute(
            "SELECT tenant, user_id, seq, json_extract(payload, '$.key_generation')::BIGINT FROM events "
            "WHERE kind = 'user_forgotten' ORDER BY tenant, user_id, seq").fetchall()
        return [(t, u, int(s), int(g)) for t, u, s, g in rows]

    def _with_heads(self, heads) -> duckdb.DuckDBPyConnection:
        """A cursor of its own with ``heads`` (stream → seq) registered as the table ``_heads``."""
        streams = list(heads)
        cur = self._con.cursor()
        cur.register("_heads", pa.table({"tenant": [t for t, _ in streams], "user_id": [u for _, u in streams],
                                         "head": [heads[s] for s in streams]}))
        return cur

    def scan_tails(self, heads) -> Iterator[Envelope]:
        """One query: the events after each stream's given head (a join with the heads as an Arrow table)."""
        for batch in self._tails(heads, fold=False):
            yield from from_arrow(pa.Table.from_batches([batch]), self.cipher)

    def fold_tails(self, heads) -> Iterator:
        """:meth:`scan_tails` as a fold takes it (:meth:`fold_scan`)."""
        for batch in self._tails(heads, fold=True):
            yield from fold_items(pa.Table.from_batches([batch]), self.cipher)

    def _tails(self, heads, *, fold: bool):
        if not heads:
            columns = self._fold_columns if fold else self._columns
            rel = self._con.cursor().sql(f"SELECT {columns} FROM events ORDER BY tenant, user_id, seq")
            return arrow_batches(rel, SCAN_BATCH)
        columns = fold_select(self._names, "e.") if fold else ", ".join("e." + n for n in self._names)
        rel = self._with_heads(heads).sql(
            f"SELECT {columns} FROM events e "
            "LEFT JOIN _heads h ON e.tenant = h.tenant AND e.user_id = h.user_id "
            "WHERE e.seq > coalesce(h.head, 0) ORDER BY e.tenant, e.user_id, e.seq"
        )
        return arrow_batches(rel, SCAN_BATCH)

    def checksums(self, heads) -> dict:
        """One aggregate query: per stream, ``bit_xor(hash(...))`` of its stored rows up to its given head."""
        if not heads:
            return {}
        sealed = ", e.sealed" if self.cipher is not None else ""
        rows = self._with_heads(heads).execute(
            "SELECT e.tenant, e.user_id, "
            f"bit_xor(hash(e.event_id, e.seq, e.kind, e.schema_version, e.payload{sealed}, e.touch)) "
            "FROM events e JOIN _heads h ON e.tenant = h.tenant AND e.user_id = h.user_id "
            "WHERE e.seq <= h.head GROUP BY e.tenant, e.user_id"
        ).fetchall()
        return {(t, u): int(x) for t, u, x in rows}

    def _command(self, command_id: str) -> CommandRecord | None:
        row = self._con.cursor().execute(
            "SELECT command_id, kind, outcome, tenant, user_id, event_ids FROM commands WHERE command_id = ?",
            [command_id],
        ).fetchone()
        if row is None:
            return None
        command_id, kind, outcome, tenant, user_id, event_ids = row
        if self.cipher is not None:
            outcome = self.cipher.open_outcome(command_id, tenant, user_id, outcome)
        return CommandRecord(command_id, kind, outcome, tenant, user_id, tuple(event_ids))

    def copy_to(self, target: Path) -> dict:
        """A consistent copy of this log at ``target``: checkpointed (the WAL folded into the file), copied,
        synced and renamed into place; returns its size, sha256 and each stream's head seq."""
        self._con.execute("CHECKPOINT")
        tmp = target.with_name(target.name + ".partial")
        digest = hashlib.sha256()
        with self.path.open("rb") as src, tmp.open("wb") as dst:
            while chunk := src.read(1 << 20):
                digest.update(chunk)
                dst.write(chunk)
            dst.flush()
            os.fsync(dst.fileno())
        os.replace(tmp, target)
        heads = self._con.cursor().execute("SELECT tenant, user_id, max(seq) FROM events GROUP BY ALL").fetchall()
        return {"file": target.name, "bytes": target.stat().st_size, "sha256": digest.hexdigest(),
                "events": self.count(), "heads": sorted([t, u, int(s)] for t, u, s in heads)}

    def close(self) -> None:
        self._writer.close()
        self._con.close()
