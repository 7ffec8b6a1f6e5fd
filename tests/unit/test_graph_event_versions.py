"""Graph events v1 → v2 (``llm_call_id``, and ``reason`` on staged memories): stored v1 rows still decode and fold."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from events.duckdb_log import DDL, DuckDBEventLog
from events.envelope import ENVELOPE_SCHEMA, decode_payload, from_arrow
from events.graph_events import GraphEdgeLinked, GraphMemoryStaged, GraphProposalRejected
from projections.folds.state import ShardState, fold

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _row(name: str) -> dict:
    row = json.loads((FIXTURES / name).read_text())
    for column in ("occurred_at", "recorded_at"):
        row[column] = datetime.fromisoformat(row[column])
    return row


@pytest.mark.parametrize(
    ("fixture", "cls", "absent"),
    [("graph_memory_staged_v1.json", GraphMemoryStaged, ("llm_call_id", "reason")),
     ("graph_edge_linked_v1.json", GraphEdgeLinked, ("llm_call_id",))],
)
def test_a_stored_v1_row_decodes_to_v2_without_an_llm_call(fixture, cls, absent):
    row = _row(fixture)
    payload = json.loads(row["payload"])
    assert row["schema_version"] == 1 and not set(absent) & set(payload)  # the fixture really is v1

    [env] = from_arrow(pa.Table.from_pylist([row], schema=ENVELOPE_SCHEMA))

    assert env.schema_version == cls.schema_version == 2 and isinstance(env.event, cls)
    assert all(getattr(env.event, name) is None for name in absent)
    assert env.event.model_dump(exclude=set(absent), mode="json") == cls.model_validate_json(row["payload"]).model_dump(
        exclude=set(absent), mode="json")


def test_v1_rows_in_a_duckdb_log_fold_into_the_graph(tmp_path):
    path = tmp_path / "old.duckdb"
    rows = [_row("graph_memory_staged_v1.json"), _row("graph_edge_linked_v1.json")]
    rows[0]["seq"], rows[1]["seq"] = 1, 2  # one stream, in order: the fold checks seq
    with duckdb.connect(str(path)) as con:
        con.execute("SET TimeZone = 'UTC'")
        con.execute(DDL)
        for row in rows:
            con.execute(f"INSERT INTO events VALUES ({', '.join('?' * len(row))})", list(row.values()))
    log = DuckDBEventLog(path)
    try:
        state = fold(ShardState(), log.scan())
    finally:
        log.close()

    graph = state.user("acme", "caroline").graph
    memory = graph.memories[rows[0]["event_id"]]
    assert (memory.topic, memory.object, memory.extractor) == ("go", "support group", "graph-rules-v1")
    assert np.allclose(graph.nodes["topic:go"].vector, [0.6, 0.8])
    assert graph.edges[rows[1]["event_id"]].edge_type == "causality"


def test_v2_payloads_carry_the_call_and_a_rejection_round_trips():
    staged = GraphMemoryStaged(subject="Maya", memory_type="event", topic="lose", object="job",
                               occurred_at=datetime(2024, 5, 1, tzinfo=UTC), extractor="llm:m", llm_call_id="c1")
    assert decode_payload("graph_memory_staged", 2, staged.model_dump_json()).llm_call_id == "c1"
    rejected = GraphProposalRejected(llm_call_id="c1", proposed="create_memory", proposal='{"memory_type":"dream"}',
                                     reason="memory_type: 'dream' is not allowed", decider="llm:m",
                                     source_message_ids=("m1",))
    assert decode_payload("graph_proposal_rejected", 1, rejected.model_dump_json()) == rejected
