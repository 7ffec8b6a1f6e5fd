"""Issue 14, first part: the store layout is checked, reads never route, inputs have explicit limits."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from actors.routing import RoutingTable
from events.commands import MAX_METADATA_BYTES, MAX_TEXT_CHARS, check_stream, validate_messages
from events.duckdb_log import DuckDBEventLog
from events.errors import InvalidInputError, StoreError
from palimpsest import config as store_config
from palimpsest.formats import read_jsonl, read_locomo
from palimpsest.remote import positive, scan_filter

A, B = ("acme", "alice"), ("globex", "alice")
OK = {"tenant": "acme", "user_id": "alice", "text": "hi", "occurred_at": "2024-05-01T09:00:00+00:00"}


def test_a_lookup_of_an_unknown_stream_writes_no_route(tmp_path):
    path = tmp_path / "directory.jsonl"
    table = RoutingTable(path, 2)
    assert table.lookup([A]) == [None]
    assert not path.exists()


def test_a_lost_directory_is_rebuilt_from_the_logs_and_a_conflict_is_refused(tmp_path):
    path = tmp_path / "directory.jsonl"
    table = RoutingTable(path, 2)
    assert table.adopt([[A], [B]]) == 2
    assert RoutingTable(path, 2).assignments() == {A: 0, B: 1}
    with pytest.raises(StoreError, match="shard 0"):
        RoutingTable(path, 2).adopt([[], [A]])


def test_a_route_beyond_num_shards_is_refused(tmp_path):
    path = tmp_path / "directory.jsonl"
    RoutingTable(path, 2).route([A, B])
    with pytest.raises(StoreError, match="num_shards"):
        RoutingTable(path, 1)


def _store(tmp_path, n=2):
    cfg = store_config.StoreConfig.create(tmp_path, n, "hash")
    for i in range(n):
        DuckDBEventLog(store_config.log_path(tmp_path, i)).close()
    return cfg


def test_a_deleted_shard_log_is_refused_naming_the_file(tmp_path):
    cfg = _store(tmp_path)
    store_config.log_path(tmp_path, 1).unlink()
    with pytest.raises(StoreError, match="shard-001.duckdb is missing.*restore the file from a backup"):
        store_config.check_layout(tmp_path, cfg)


def test_num_shards_edited_in_store_json_is_refused(tmp_path):
    _store(tmp_path, 2)
    for n in (1, 3):
        data = json.loads((tmp_path / "store.json").read_text())
        (tmp_path / "store.json").write_text(json.dumps({**data, "num_shards": n}))
        with pytest.raises(StoreError, match="num_shards"):
            store_config.check_layout(tmp_path, store_config.StoreConfig.load(tmp_path))


def test_an_embedder_edited_without_its_model_id_is_refused(tmp_path):
    _store(tmp_path)
    data = json.loads((tmp_path / "store.json").read_text())
    (tmp_path / "store.json").write_text(json.dumps({**data, "embedder": "minilm"}))
    with pytest.raises(StoreError, match="records vectors as"):
        store_config.StoreConfig.load(tmp_path)


@pytest.mark.parametrize("field,value,match", [
    ("text", "x" * (MAX_TEXT_CHARS + 1), "text"),
    ("tenant", "t" * 201, "tenant"),
    ("tenant", "a/b", "tenant"),
    ("user_id", "bad\x00id", "user_id"),
    ("metadata", {"k": "v" * MAX_METADATA_BYTES}, "metadata"),
    ("metadata", {f"k{i}": i for i in range(65)}, "metadata"),
    ("occurred_at", "0001-01-01T00:00:00+05:00", "occurred_at"),
    ("occurred_at", "9999-12-31T23:00:00-05:00", "occurred_at"),
])
def test_limits_are_checked_field_by_field(field, value, match):
    with pytest.raises(InvalidInputError, match=rf"messages\[1\]\.{match}"):
        validate_messages([OK, {**OK, field: value}])


def test_read_ids_and_arguments_are_checked():
    with pytest.raises(InvalidInputError, match="tenant"):
        check_stream("x" * 1_000_000, "alice", what="search")
    with pytest.raises(InvalidInputError, match="k"):
        positive("5", "k", "search", "give an integer")
    with pytest.raises(InvalidInputError, match="since"):
        scan_filter(None, None, None, None, "garbage", None, None, None)


@pytest.mark.parametrize("batch_size", [0, -1, "5", True, 10_001])
def test_a_bad_batch_size_is_refused_before_anything_is_sent(batch_size):
    from palimpsest.memory import Memory

    with pytest.raises(InvalidInputError, match=r"batch_size.*give an integer from 1 to 10000"):
        Memory.add_messages(None, [OK], batch_size=batch_size)  # refused before the store (self) is touched


def test_bad_files_are_refused_naming_the_file(tmp_path):
    jsonl = tmp_path / "m.jsonl"
    jsonl.write_bytes(b'{"text": "caf\xe9"}\n')
    with pytest.raises(InvalidInputError, match="m.jsonl:1.*not UTF-8"):
        read_jsonl(jsonl)
    bad = tmp_path / "bad.json"
    bad.write_text('[{"conversation": ')
    with pytest.raises(InvalidInputError, match="bad.json:1: not valid JSON"):
        read_locomo(bad)
    flat = tmp_path / "flat.json"
    flat.write_text(json.dumps([{"sample_id": "s", "conversation": {"session_1": "hello"}}]))
    with pytest.raises(InvalidInputError, match="session_1: expected a list of turns"):
        read_locomo(flat)


@pytest.mark.parametrize("how", ["truncated", "scrambled", "zeroed"])
def test_a_damaged_log_file_is_named_with_its_fix_not_called_locked(tmp_path, how):
    path = tmp_path / "shard-000.duckdb"
    log = DuckDBEventLog(path)
    log.close()
    data = bytearray(path.read_bytes())
    if how == "truncated":
        data = data[: len(data) // 3]
    elif how == "zeroed":
        data[:4096] = bytes(4096)
    else:
        for i in range(0, len(data), 7):
            data[i] = (data[i] * 31 + 7) % 256
    path.write_bytes(bytes(data))
    with pytest.raises(StoreError) as err:
        DuckDBEventLog(path)
    assert str(path) in str(err.value) and "damaged" in str(err.value) and "restore" in str(err.value)
    assert "another process" not in str(err.value)


def test_the_rules_read_a_bounded_prefix_of_a_message():
    from projections.rules.extraction import extract_notes
    from projections.rules.graph_extract import extract_graph_memories
    from projections.rules.text import RULES_MAX_CHARS

    stated = "I prefer green tea."
    assert RULES_MAX_CHARS < MAX_TEXT_CHARS
    for position, read in ((RULES_MAX_CHARS - 100, True), (RULES_MAX_CHARS + 100, False)):
        text = "x" * position + ". " + stated
        assert bool(extract_notes(text, speaker="Maya")) is read, position
    when = datetime(2024, 5, 1, tzinfo=UTC)
    assert extract_graph_memories("y. " * 900 + "Maya adopted a dog.", speaker="Maya", occurred_at=when) == ()


READ_BY_THE_RULES = """
import sys
from datetime import UTC, datetime
from projections.rules.classify import classification_event
from projections.rules.extraction import extract_notes
from projections.rules.graph_extract import extract_graph_memories
text = sys.stdin.read()
extract_notes(text, speaker="Maya")
extract_graph_memories(text, speaker="Maya", occurred_at=datetime(2024, 5, 1, tzinfo=UTC))
classification_event("m1", text)
"""


@pytest.mark.parametrize("text", [
    "a" + " " * (MAX_TEXT_CHARS - 2) + "b",  # a clause break tried at every space: hours before the fix
    ("今天走了很多步去了图书馆" * 10_000)[:MAX_TEXT_CHARS],  # Chinese rules that scan the rest of a clause
    ("I went to the harbour yesterday with Maya on May 5th. " * 2_000)[:MAX_TEXT_CHARS],  # time mentions
], ids=["spaces", "chinese-run-on", "time-mentions"])
def test_a_message_of_the_maximum_size_is_read_by_the_rules_in_bounded_time(text):
    # In a subprocess: a regex holds the GIL, so only a process can be stopped when it runs too long.
    import os
    import subprocess
    import sys

    try:
        subprocess.run([sys.executable, "-c", READ_BY_THE_RULES], input=text, text=True, check=True, timeout=180,
                       env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}, capture_output=True)
    except subprocess.TimeoutExpired:
        pytest.fail("the offline rules held a shard for over 3 minutes on one message within the limits")


def test_export_out_paths_with_quotes_work_and_unwritable_ones_are_named(tmp_path, capsys):
    from benchmarks.fuzz import _seeded_store
    from palimpsest.cli import main

    store = _seeded_store(tmp_path / "work")
    quoted = tmp_path / "it's \"here\""
    assert main(["--store", str(store), "export", "--out", str(quoted)]) == 0
    assert (quoted / "events.parquet").stat().st_size > 0
    capsys.readouterr()
    for out in (store / "store.json", tmp_path / "a-file" / "below"):  # a file; a directory below a file
        (tmp_path / "a-file").write_text("x")
        assert main(["--store", str(store), "export", "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: --out {out}: cannot write") and "Traceback" not in err
