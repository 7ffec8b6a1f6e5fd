"""Every entry point fuzzed with a few examples (``python -m benchmarks.fuzz`` runs many): each answer is a
value or a clear error naming the field or the file; no traceback; a refused call leaves the log as it was."""

from __future__ import annotations

import pytest

from benchmarks.fuzz import ENTRY_POINTS, run_entry

EXAMPLES = {"api.record": 25, "log.damaged": 15, "cli.audit": 20}


@pytest.mark.parametrize("name", ENTRY_POINTS)
def test_entry_point_answers_every_fuzzed_input_clearly(name, tmp_path):
    counts = run_entry(name, EXAMPLES.get(name, 40), tmp_path)
    assert counts["examples"] >= 10, counts  # hypothesis really ran it
