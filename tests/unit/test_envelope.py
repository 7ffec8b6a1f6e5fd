"""The envelope schema, written once and asserted here, and decoding of old payload versions."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from events.duckdb_log import DDL, DuckDBEventLog
from events.envelope import ENVELOPE_SCHEMA, decode_payload, from_arrow
from events.errors import PalimpsestError, UnknownEventError
from events.model import MessageRecorded
from projections.folds.state import ShardState, fold

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

EXPECTED_FIELDS = [
    ("tenant", pa.string(), False),
    ("user_id", pa.string(), False),
    ("seq", pa.int64(), False),
    ("event_id", pa.string(), False),
    ("kind", pa.string(), False),
    ("schema_version", pa.int16(), False),
    ("occurred_at", pa.timestamp("us", tz="UTC"), False),
    ("recorded_at", pa.timestamp("us", tz="UTC"), False),
    ("causation_id", pa.string(), True),
    ("correlation_id", pa.string(), True),
    ("payload", pa.string(), False),
]


@pytest.mark.parametrize(("position", "name", "type_", "nullable"), [(i, *f) for i, f in enumerate(EXPECTED_FIELDS)])
def test_envelope_schema_field(position, name, type_, nullable):
    field = ENVELOPE_SCHEMA.field(position)
    assert (field.name, field.type, field.nullable) == (name, type_, nullable)


def test_envelope_schema_has_exactly_these_fields():
    assert ENVELOPE_SCHEMA.names == [name for name, _, _ in EXPECTED_FIELDS]
    assert ENVELOPE_SCHEMA.metadata is None


def test_duckdb_table_columns_are_the_envelope_schema_then_the_clear_touch_column(tmp_path):
    log = DuckDBEventLog(tmp_path / "shard.duckdb")
    log.close()
    with duckdb.connect(str(tmp_path / "shard.duckdb"), read_only=True) as con:
        columns = con.execute("SELECT column_name, data_type, is_nullable FROM information_schema.columns "
                              "WHERE table_name = 'events' ORDER BY ordinal_position").fetchall()
    assert columns == [
        ("tenant", "VARCHAR", "NO"),
        ("user_id", "VARCHAR", "NO"),
        ("seq", "BIGINT", "NO"),
        ("event_id", "VARCHAR", "NO"),
        ("kind", "VARCHAR", "NO"),
        ("schema_version", "SMALLINT", "NO"),
        ("occurred_at", "TIMESTAMP WITH TIME ZONE", "NO"),
        ("recorded_at", "TIMESTAMP WITH TIME ZONE", "NO"),
        ("causation_id", "VARCHAR", "YES"),
        ("correlation_id", "VARCHAR", "YES"),
        ("payload", "VARCHAR", "NO"),
        ("touch", "STRUCT(reason VARCHAR, memory_ids VARCHAR[], key_gen INTEGER)", "YES"),
    ]


def _v1_row(fixture: str = "message_recorded_v1.json") -> dict:
    row = json.loads((FIXTURES / fixture).read_text())
    for column in ("occurred_at", "recorded_at"):
        row[column] = datetime.fromisoformat(row[column])
    return row


EXPECTED_V2 = MessageRecorded(
    conversation_id="session-2023-11-05",
    role="user",
    speaker="Alice",
    text="I finally ran the Berlin marathon in 4 hours",
    occurred_at=datetime(2023, 11, 5, 14, 30, tzinfo=UTC),
    client_message_id="m-0001",
    turn_id=None,
    metadata={"source": "mobile"},
)


def test_stored_v1_message_decodes_to_the_current_version():
    row = _v1_row()
    assert row["schema_version"] == 1 and "session_id" in json.loads(row["payload"])  # the fixture really is v1

    [env] = from_arrow(pa.Table.from_pylist([row], schema=ENVELOPE_SCHEMA))

    assert env.event == EXPECTED_V2
    assert env.schema_version == MessageRecorded.schema_version == 2
    assert (env.tenant, env.user_id, env.seq, env.event_id) == ("acme", "alice", 1, row["event_id"])


def test_v1_row_in_a_duckdb_log_is_upcast_when_scanned_and_folded(tmp_path):
    path = tmp_path / "old.duckdb"
    row = _v1_row()
    with duckdb.connect(str(path)) as con:
        con.execute("SET TimeZone = 'UTC'")
        con.execute(DDL)
        con.execute(f"INSERT INTO events VALUES ({', '.join('?' * len(row))})", list(row.values()))

    log = DuckDBEventLog(path)
    try:
        [env] = list(log.scan())
        state = fold(ShardState(), [env])
    finally:
        log.close()

    assert env.event == EXPECTED_V2
    assert state.user("acme", "alice").messages.by_id[row["event_id"]].conversation_id == "session-2023-11-05"


def test_current_version_payload_decodes_without_upcasting():
    assert decode_payload("message_recorded", 2, EXPECTED_V2.model_dump_json()) == EXPECTED_V2


@pytest.mark.parametrize(
    ("kind", "version", "message"),
    [
        ("note_superseded", 1, "unknown event kind 'note_superseded'"),
        ("message_recorded", 3, "newer than this code knows"),
        ("message_embedded", 0, "no upcaster from message_embedded v0"),
    ],
)
def test_undecodable_rows_raise_unknown_event_error(kind, version, message):
    with pytest.raises(UnknownEventError, match=message) as info:
        decode_payload(kind, version, "{}")
    assert isinstance(info.value, PalimpsestError)


def test_unknown_kind_in_an_arrow_batch_is_rejected():
    row = _v1_row() | {"kind": "note_superseded"}
    with pytest.raises(UnknownEventError, match="upgrade palimpsest"):
        from_arrow(pa.Table.from_pylist([row], schema=ENVELOPE_SCHEMA))


def test_a_current_version_row_of_another_shape_names_the_problem_not_a_raw_validation_error():
    row = _v1_row() | {"schema_version": 2, "payload": '{"conversation_id": "c", "role": "user"}'}
    with pytest.raises(UnknownEventError, match=r"message_recorded v2 payload does not decode .*version bump"):
        from_arrow(pa.Table.from_pylist([row], schema=ENVELOPE_SCHEMA))


def test_stored_v1_classification_decodes_to_v2_without_key_terms():
    from events.model import MessageClassified

    row = _v1_row("message_classified_v1.json")
    assert row["schema_version"] == 1 and "key_terms" not in json.loads(row["payload"])  # the fixture really is v1

    [env] = from_arrow(pa.Table.from_pylist([row], schema=ENVELOPE_SCHEMA))

    assert env.schema_version == MessageClassified.schema_version == 2
    assert env.event == MessageClassified(message_event_id="a1b2c3d4e5f60718293a4b5c6d7e8f90", memory_type="fact",
                                          confidence=0.7, classifier="rules-v1", key_terms=None)


def test_stored_v1_feedback_signal_decodes_to_v2_timed_by_its_envelope():
    from events.feedback_events import FeedbackDetected

    row = _v1_row("feedback_detected_v1.json")
    assert row["schema_version"] == 1 and "at" not in json.loads(row["payload"])  # the fixture really is v1

    [env] = from_arrow(pa.Table.from_pylist([row], schema=ENVELOPE_SCHEMA))

    assert env.schema_version == FeedbackDetected.schema_version == 3
    assert env.event.at is None and env.event.cues == ("stale:我说过", "wrong:不对") and env.event.query is None
    assert env.event.occurred(env.recorded_at) == env.recorded_at


def test_stored_v2_feedback_signal_decodes_to_v3_without_its_question():
    from events.feedback_events import FeedbackDetected

    row = _v1_row("feedback_detected_v2.json")
    payload = json.loads(row["payload"])
    assert row["schema_version"] == 2 and "at" in payload and "query" not in payload  # the fixture really is v2

    [env] = from_arrow(pa.Table.from_pylist([row], schema=ENVELOPE_SCHEMA))

    assert env.schema_version == FeedbackDetected.schema_version == 3
    assert env.event.query is None and env.event.at == datetime.fromisoformat(payload["at"])


def test_stored_v1_adjustment_decodes_to_v2_unscoped_so_it_still_applies_to_every_query():
    from events.learning_events import MemoryAdjusted
    from projections.folds.adjustments import AdjustmentState, evolve

    row = _v1_row("memory_adjusted_v1.json")
    assert row["schema_version"] == 1 and "scope" not in json.loads(row["payload"])  # the fixture really is v1

    [env] = from_arrow(pa.Table.from_pylist([row], schema=ENVELOPE_SCHEMA))

    assert env.schema_version == MemoryAdjusted.schema_version == 2 and env.event.scope is None
    state = evolve(AdjustmentState(), env)
    at = env.event.at
    for query in (None, "anything at all", "随便问什么"):
        assert state.factor("a1b2c3d4e5f60718293a4b5c6d7e8f90", at, query) == 0.5


def test_stored_v1_label_vectors_decode_to_v2_of_the_users_first_model():
    from events.graph_events import GraphLabelsEmbedded

    row = _v1_row("graph_labels_embedded_v1.json")
    assert row["schema_version"] == 1 and "model_id" not in json.loads(row["payload"])  # the fixture really is v1

    [env] = from_arrow(pa.Table.from_pylist([row], schema=ENVELOPE_SCHEMA))

    assert env.schema_version == GraphLabelsEmbedded.schema_version == 2
    assert env.event.model_id == "" and env.event.vector("coffee").tolist() == pytest.approx([0.6, 0.8])
