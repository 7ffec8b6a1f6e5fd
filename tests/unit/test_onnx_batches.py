"""How a batch is cut into ONNX runs: longest first, ``size`` rows at most, no row padded past twice its length."""

from __future__ import annotations

from types import SimpleNamespace

from projections.adapters.onnx_batches import runs


def _encodings(lengths):
    return [SimpleNamespace(ids=[1] * n) for n in lengths]


def test_a_long_text_does_not_pad_the_short_ones_of_its_batch():
    lengths = [3, 512, 25, 100, 20, 15, 2, 100]
    cut = runs(_encodings(lengths), 32)
    rows = [int(r) for run in cut for r in run]
    assert sorted(rows) == list(range(len(lengths)))  # every row once
    assert [lengths[r] for r in rows] == sorted(lengths, reverse=True)  # longest first
    assert all(2 * lengths[r] >= lengths[run[0]] for run in cut for r in run)  # padded to at most twice its length
    assert [[lengths[r] for r in run] for run in cut] == [[512], [100, 100], [25, 20, 15], [3, 2]]


def test_runs_of_like_lengths_hold_size_rows_at_most():
    cut = runs(_encodings([10 + i % 5 for i in range(70)]), 32)
    assert [len(run) for run in cut] == [32, 32, 6]
    assert runs([], 32) == []
