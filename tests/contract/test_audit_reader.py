"""AuditReader: read-only SQL over the DuckDB files of several shards."""

from __future__ import annotations

from datetime import timedelta

import pytest

from events.audit import AuditReader
from events.duckdb_log import DuckDBEventLog
from events.envelope import ENVELOPE_SCHEMA
from events.errors import StoreError
from events.log import ScanFilter
from tests.builders import T0, embedding, message, pending


@pytest.fixture
def shard_files(tmp_path):
    """Two shard logs, written and closed the way a stopped store leaves them."""
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


@pytest.fixture
def audit(shard_files):
    reader = AuditReader(shard_files)
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


def test_sql_errors_are_store_errors(audit):
    with pytest.raises(StoreError, match="audit query failed"):
        audit.sql("select nope from events")


def test_sql_is_read_only(audit, shard_files):
    with pytest.raises(StoreError):
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
