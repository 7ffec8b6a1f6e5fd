"""AuditReader: read-only SQL over the DuckDB files of several shards, or over the rows the shards of a
served store hand over (``AuditReader.of_tables``): every test runs against both."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest

from events.audit import AuditReader
from events.audit_limits import AuditLimits
from events.duckdb_log import DuckDBEventLog
from events.envelope import ENVELOPE_SCHEMA
from events.errors import InvalidInputError, QueryForbiddenError, QueryLimitError, StoreError
from events.log import ScanFilter
from tests.builders import T0, embedding, message, pending


@pytest.fixture(scope="module")
def shard_files(tmp_path_factory):
    """Two shard logs, written and closed the way a stopped store leaves them (once: no test writes them)."""
    tmp_path = tmp_path_factory.mktemp("audit")
    paths = [tmp_path / "log" / "shard-000.duckdb", tmp_path / "log" / "shard-001.duckdb"]
    first = DuckDBEventLog(paths[0])
    first.append([
        pending("a1", message("tea", "a1"), "acme", "alice"),
        pending("a2", embedding("a1", [1.0, 0.0]), "acme", "alice"),
        pending("b1", message("coffee", "b1", occurred_at=T0 + timedelta(days=1)), "acme", "bob"),
    ])
    first.close()
    second = DuckDBEventLog(paths[1])
    second.append([
        pending("g1", message("我喜欢在周末去爬山", "g1"), "globex", "alice"),
        pending("g2", message("juice", "g2"), "globex", "alice"),
    ])
    second.close()
    return paths


def shard_rows(paths, tenant=None):
    """Each shard's rows as its log hands them to a served audit (``EventLog.rows``)."""
    tables = []
    for path in paths:
        log = DuckDBEventLog(path)
        try:
            tables.append(log.rows(ScanFilter(tenant=tenant)))
        finally:
            log.close()
    return tables


@pytest.fixture(params=["files", "tables"])
def audit(request, shard_files):
    reader = AuditReader(shard_files) if request.param == "files" else AuditReader.of_tables(shard_rows(shard_files))
    yield reader
    reader.close()


def test_events_spans_every_shard_in_stream_order(audit):
    table = audit.events(ScanFilter())
    assert table.column_names == ["shard", *ENVELOPE_SCHEMA.names]
    rows = table.select(["shard", "tenant", "user_id", "seq", "event_id"]).to_pylist()
    assert [(r["shard"], r["tenant"], r["user_id"], r["seq"], r["event_id"]) for r in rows] == [
        (0, "acme", "alice", 1, "a1"),
        (0, "acme", "alice", 2, "a2"),
        (0, "acme", "bob", 1, "b1"),
        (1, "globex", "alice", 1, "g1"),
        (1, "globex", "alice", 2, "g2"),
    ]


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        (ScanFilter(tenant="globex"), ["g1", "g2"]),
        (ScanFilter(user_id="alice"), ["a1", "a2", "g1", "g2"]),
        (ScanFilter(tenant="acme", user_id="bob"), ["b1"]),
        (ScanFilter(kinds=("message_embedded",)), ["a2"]),
        (ScanFilter(user_id="alice", kinds=("message_recorded",)), ["a1", "g1", "g2"]),
        (ScanFilter(since=T0 + timedelta(hours=1), kinds=("message_recorded",)), ["b1"]),
    ],
    ids=["tenant", "user", "stream", "kind", "user-and-kind", "since-and-kind"],
)
def test_events_filter(audit, flt, expected):
    assert audit.events(flt).column("event_id").to_pylist() == expected


def test_events_limit(audit):
    assert audit.events(ScanFilter(), limit=2).column("event_id").to_pylist() == ["a1", "a2"]


def test_sql_over_the_events_view(audit):
    assert audit.sql("select count(*) from events").to_pylist() == [{"count_star()": 5}]
    by_shard = audit.sql("select shard, count(*) as n from events group by shard order by shard").to_pylist()
    assert by_shard == [{"shard": 0, "n": 3}, {"shard": 1, "n": 2}]
    chinese = audit.sql("select event_id from events where payload like '%爬山%'").column("event_id").to_pylist()
    assert chinese == ["g1"]


@pytest.mark.parametrize(("query", "named"), [
    ("select nope from events", '"nope" not found'),
    ("select * from nope", "nope does not exist"),
    ("select * from 事件", "事件 does not exist"),
    ("select getenv('HOME')", "getenv does not exist"),
    ("select 'x'::INT from events", "Could not convert"),
])
def test_a_bad_query_is_invalid_input_that_names_the_problem_not_a_store_fault(audit, query, named):
    with pytest.raises(InvalidInputError) as err:  # 400 over HTTP, never "store not reachable"
        audit.sql(query)
    assert type(err.value) is InvalidInputError and not isinstance(err.value, StoreError)
    [(field, fix)] = err.value.problems
    assert field == "query" and named in fix and "one view, `events`" in fix and "payload" in fix


COSTLY = [  # each with only its own limit low, so a loaded machine cannot trip another first
    ("SELECT * FROM range(5000)", AuditLimits(max_rows=1_000, timeout_s=60),
     "more than 1,000 rows (audit_limits.max_rows)"),
    ("SELECT max(len(x)) FROM (SELECT list(range) AS x FROM range(100000000))", AuditLimits(memory_mb=64, timeout_s=60),
     "more than 64 MB of memory (audit_limits.memory_mb)"),
    ("SELECT sum(a.range * b.range) FROM range(100000) a, range(100000) b", AuditLimits(timeout_s=0.5),
     "longer than 0.5 s (audit_limits.timeout_s)"),
    ("SELECT * FROM range(100000000) t1, range(100000000) t2", AuditLimits(memory_mb=64, timeout_s=60),
     "audit_limits.memory_mb"),  # the probe's cross join
]


@pytest.mark.parametrize("kind", ["files", "tables"])
@pytest.mark.parametrize(("query", "limits", "named"), COSTLY, ids=["rows", "memory", "timeout", "cross-join"])
def test_each_cost_limit_stops_a_query_and_names_its_setting(shard_files, kind, query, limits, named):
    reader = (AuditReader(shard_files, limits=limits) if kind == "files"
              else AuditReader.of_tables(shard_rows(shard_files), limits=limits))
    try:
        assert reader.sql("SELECT current_setting('threads') AS t").to_pylist() == [{"t": 1}]
        started = time.perf_counter()
        with pytest.raises(QueryLimitError) as err:
            reader.sql(query)
        took = time.perf_counter() - started
        [(field, fix)] = err.value.problems
        assert field == "query" and named in fix and "narrow it" in fix, fix
        assert took < min(limits.timeout_s + 1.5, 20), took  # stopped, not run to its end
        assert reader.sql("SELECT * FROM range(1000)").num_rows == 1000  # within the caps: answered
        assert reader.sql("SELECT count(*) AS n FROM events").to_pylist() == [{"n": 5}]  # and still usable
    finally:
        reader.close()


def test_audit_limits_refuse_values_that_would_not_bound_anything():
    for bad in ({"timeout_s": 0}, {"timeout_s": float("inf")}, {"max_rows": 0}, {"memory_mb": 1}, {"threads": True}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            AuditLimits(**bad)


def test_sql_is_read_only(audit, shard_files):
    with pytest.raises(InvalidInputError):  # refused before DuckDB sees it
        audit.sql("delete from shard_0.events")
    audit.close()
    writer = DuckDBEventLog(shard_files[0])
    try:
        assert writer.count() == 3
    finally:
        writer.close()


def test_no_shard_files_is_a_store_error():
    with pytest.raises(StoreError, match="no shard logs found"):
        AuditReader([])


WRITES = [
    ("COPY (SELECT * FROM events) TO '{out}/leak.csv'", "COPY"),
    ("ATTACH '{out}/other.duckdb' AS other", "ATTACH"),
    ("DETACH shard_0", "DETACH"),
    ("INSTALL httpfs", "LOAD"),
    ("LOAD httpfs", "LOAD"),
    ("CREATE TABLE t AS SELECT 1", "CREATE"),
    ("INSERT INTO shard_0.events SELECT * FROM shard_0.events", "INSERT"),
    ("DELETE FROM shard_0.events", "DELETE"),
    ("UPDATE shard_0.events SET payload = '{{}}'", "UPDATE"),
    ("DROP VIEW events", "DROP"),
    ("SET enable_external_access = true", "SET"),
    ("PRAGMA enable_profiling", "PRAGMA"),
    ("SELECT 1; DELETE FROM shard_0.events", "2 statements"),
]


@pytest.mark.parametrize(("query", "named"), WRITES, ids=[w[1] for w in WRITES])
def test_sql_refuses_every_statement_that_is_not_a_query(audit, shard_files, tmp_path, query, named):
    sizes = {p: p.stat().st_size for p in shard_files}
    with pytest.raises(InvalidInputError) as err:
        audit.sql(query.format(out=tmp_path))
    assert named in str(err.value) and "read-only" in str(err.value)
    assert {p: p.stat().st_size for p in shard_files} == sizes
    assert not list(tmp_path.glob("leak*")) and not (tmp_path / "other.duckdb").exists()
    assert audit.sql("SELECT count(*) AS n FROM events").to_pylist() == [{"n": 5}]  # the view is still there


@pytest.mark.parametrize("query", [
    "SELECT * FROM read_text('/etc/hostname')",
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_parquet('/etc/hostname')",
    "SELECT * FROM glob('/etc/*')",
])
def test_a_query_cannot_read_files_outside_the_logs(audit, query):
    with pytest.raises(QueryForbiddenError) as err:  # 403 over HTTP
        audit.sql(query)
    [(field, fix)] = err.value.problems
    assert field == "query" and "disabled by configuration" in fix and "remove that function" in fix


def test_a_tenant_scoped_reader_sees_only_its_tenant_whatever_the_sql_names(shard_files):
    reader = AuditReader(shard_files, tenant="globex")
    try:
        assert reader.sql("SELECT DISTINCT tenant FROM events").to_pylist() == [{"tenant": "globex"}]
        assert reader.events(ScanFilter()).num_rows == 2
        with pytest.raises(InvalidInputError, match="shard_0"):  # the shard files are not attached to it
            reader.sql("SELECT * FROM shard_0.events")
    finally:
        reader.close()


def test_export_writes_parquet_without_copy_and_leaves_no_partial_file(shard_files, tmp_path):
    import pyarrow.parquet as pq

    reader = AuditReader(shard_files, tenant="acme")
    try:
        target = reader.export_parquet(tmp_path / "out")
    finally:
        reader.close()
    table = pq.read_table(target)
    assert set(table.column("tenant").to_pylist()) == {"acme"} and table.num_rows == 3
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["events.parquet"]


def test_a_served_reader_scoped_to_a_tenant_drops_other_rows_it_was_handed(shard_files):
    reader = AuditReader.of_tables(shard_rows(shard_files), tenant="acme")  # handed every tenant's rows
    try:
        assert reader.sql("SELECT DISTINCT tenant FROM events").to_pylist() == [{"tenant": "acme"}]
        assert reader.sql("SELECT count(*) AS n FROM events WHERE payload LIKE '%爬山%'").to_pylist() == [{"n": 0}]
        with pytest.raises(InvalidInputError, match="shard_1"):
            reader.sql("SELECT * FROM shard_1")  # the handed-over tables are gone once the copy is made
    finally:
        reader.close()


def test_the_rows_a_log_hands_over_equal_what_an_in_memory_log_encodes(shard_files):
    from events.log import InMemoryEventLog

    memory_log = InMemoryEventLog()
    for env in DuckDBEventLog(shard_files[1]).scan():
        memory_log.append([pending(env.event_id, env.event, env.tenant, env.user_id)])
    stored, rebuilt = shard_rows(shard_files[1:])[0], memory_log.rows()
    keep = ["tenant", "user_id", "seq", "event_id", "kind", "schema_version", "payload"]
    assert stored.select(keep).to_pylist() == rebuilt.select(keep).to_pylist()
    assert AuditReader.of_tables([]).sql("SELECT count(*) AS n FROM events").to_pylist() == [{"n": 0}]


def test_a_damaged_log_is_named_with_its_fix_not_called_held_by_a_running_store(shard_files, tmp_path):
    damaged = tmp_path / "shard-001.duckdb"
    data = bytearray(shard_files[1].read_bytes())
    for i in range(0, len(data), 7):  # every 7th byte changed: checksums fail
        data[i] = (data[i] * 31 + 7) % 256
    damaged.write_bytes(bytes(data))
    with pytest.raises(StoreError) as err:
        AuditReader([shard_files[0], damaged])
    message = str(err.value)
    assert str(damaged) in message and "damaged" in message and "restore" in message
    assert "running store" not in message and "holds it" not in message


def test_a_log_held_by_a_running_store_is_named_as_held(shard_files, tmp_path):
    import subprocess
    import sys

    held = tmp_path / "held.duckdb"
    held.write_bytes(shard_files[1].read_bytes())
    holder = subprocess.Popen([sys.executable, "-c", f"import duckdb, sys; c = duckdb.connect({str(held)!r}); "
                               "print('ready', flush=True); sys.stdin.read()"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(StoreError, match="a running store holds it"):
            AuditReader([held])
    finally:
        holder.communicate("")
