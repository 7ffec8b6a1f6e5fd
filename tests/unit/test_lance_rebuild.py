"""``LanceVectorTable.rebuild``: the table holds exactly the rows given, whether written in one write or in chunks."""

from __future__ import annotations

import numpy as np
import pytest

from projections.adapters.lance import LanceVectorTable
from projections.folds.vectors import VectorRow

DIM = 8


def _rows(n: int, seed: int = 0) -> list[tuple[str, str, VectorRow]]:
    rng = np.random.default_rng(seed)
    return [(f"t{i % 2}", f"u{i % 3}", VectorRow(memory_id=f"m{i}", event_id=f"e{i}", seq=i, model_id="test",
                                                 vector=rng.random(DIM, dtype=np.float32))) for i in range(n)]


@pytest.mark.parametrize("chunk", [1, 3, 7, 100])
def test_a_rebuild_in_chunks_holds_what_one_write_holds_and_nothing_from_before(tmp_path, chunk):
    one = LanceVectorTable(tmp_path / "one", "shard_0", DIM)
    one.rebuild(_rows(7))
    chunked = LanceVectorTable(tmp_path / "chunked", "shard_0", DIM)
    chunked.add(_rows(5, seed=1))  # rows the rebuild must drop
    chunked.rebuild((row for row in _rows(7)), chunk=chunk)  # a generator: read once
    assert chunked.count() == 7
    assert chunked.digest() == one.digest()


def test_a_rebuild_with_no_rows_empties_the_table(tmp_path):
    table = LanceVectorTable(tmp_path / "v", "shard_0", DIM)
    table.add(_rows(4))
    table.rebuild(iter(()))
    assert table.count() == 0
    table.rebuild([])
    assert table.count() == 0
