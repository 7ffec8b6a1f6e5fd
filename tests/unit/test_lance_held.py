"""``LanceVectorTable`` holds added rows and writes them together: every read sees them, an erasure drops them."""

from __future__ import annotations

import threading
import time

import lancedb
import numpy as np

from projections.adapters import lance
from projections.adapters.lance import LanceVectorTable
from projections.folds.vectors import VectorRow

DIM = 8


def _row(tenant: str, user: str, i: int) -> tuple[str, str, VectorRow]:
    vector = np.zeros(DIM, dtype=np.float32)
    vector[i % DIM] = 1.0
    return tenant, user, VectorRow(memory_id=f"{user}-m{i}", event_id=f"e{i}", seq=i, model_id="test", vector=vector)


def _written(path) -> int:
    """Rows in the table's files, as another process opening it reads them."""
    return lancedb.connect(str(path)).open_table("shard_0").count_rows()


def test_rows_added_are_held_until_enough_or_a_read_and_every_read_sees_them(tmp_path):
    table = LanceVectorTable(tmp_path, "shard_0", DIM)
    table.add([_row("t", "ann", 0), _row("t", "ann", 1)])
    assert _written(tmp_path) == 0 and not table.flush_due()
    assert table.search("t", "ann", np.eye(DIM, dtype=np.float32)[1], 1)[0][0] == "ann-m1"
    assert _written(tmp_path) == 2
    table.add([_row("t", "bob", i) for i in range(lance.FLUSH_ROWS)])  # enough: written at once
    assert _written(tmp_path) == 2 + lance.FLUSH_ROWS
    table.add([_row("t", "cat", 0)])
    assert (table.count(), _written(tmp_path)) == (3 + lance.FLUSH_ROWS, 3 + lance.FLUSH_ROWS)
    table.add([_row("t", "cat", 1)])
    assert ("t", "cat", "cat-m1") in table.keys()


def test_the_rows_held_are_due_after_flush_s_and_a_flush_writes_them(tmp_path, monkeypatch):
    table = LanceVectorTable(tmp_path, "shard_0", DIM)
    table.add([_row("t", "ann", 0)])
    now = table._held_since
    assert not table.flush_due(now + lance.FLUSH_S / 2) and table.flush_due(now + lance.FLUSH_S)
    assert table.flush() == 1 and _written(tmp_path) == 1 and not table.flush_due(now + 10 * lance.FLUSH_S)


def test_an_erased_users_rows_held_are_never_written_and_the_others_are(tmp_path):
    table = LanceVectorTable(tmp_path, "shard_0", DIM)
    table.add([_row("t", "ann", 0)])
    table.flush()
    table.add([_row("t", "ann", 1), _row("t", "bob", 2)])
    assert table.erase_stream("t", "ann") == 2  # one written, one held
    table.flush()
    assert table.keys() == {("t", "bob", "bob-m2")} and _written(tmp_path) == 1
    table.add([_row("t", "cat", 3)])
    assert table.erase_stream("t", "cat") == 1 and table.count() == 1


def test_a_user_reconciled_keeps_its_rows_held_once(tmp_path):
    table = LanceVectorTable(tmp_path, "shard_0", DIM)
    rows = [_row("t", "ann", i) for i in range(3)]
    table.add(rows[:2])
    added, removed = table.reconcile_stream("t", "ann", [r for _, _, r in rows], set())
    assert (added, removed) == (1, 0)
    assert table.keys() == {("t", "ann", f"ann-m{i}") for i in range(3)} and table.count() == 3


class _SlowAdds:
    """The table, whose writes of added rows signal their start and take a while (a flusher thread's write)."""

    def __init__(self, table, started: threading.Event) -> None:
        self._table, self._started = table, started

    def add(self, data):
        self._started.set()
        time.sleep(0.3)
        return self._table.add(data)

    def __getattr__(self, name):
        return getattr(self._table, name)


def test_a_read_while_the_held_rows_are_being_written_waits_for_them(tmp_path):
    table = LanceVectorTable(tmp_path, "shard_0", DIM)
    started = threading.Event()
    table._table = _SlowAdds(table._table, started)
    table.add([_row("t", "ann", 0), _row("t", "ann", 1)])
    flusher = threading.Thread(target=table.flush)  # as the shard's flusher does once FLUSH_S has passed
    flusher.start()
    assert started.wait(5)  # the rows have left the held list and are not written yet
    try:
        assert table.count() == 2 and {k[2] for k in table.keys()} == {"ann-m0", "ann-m1"}
    finally:
        flusher.join()
