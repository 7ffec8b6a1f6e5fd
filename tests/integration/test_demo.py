"""`make demo` runs on the real packaged model and shows what it promises."""

from __future__ import annotations

import pytest

from palimpsest.demo import run_demo

pytestmark = [pytest.mark.integration, pytest.mark.model]


def test_demo_ingests_queries_and_replays_with_matching_digests(ray_cluster, tmp_path, capsys):
    assert run_demo(tmp_path / "demo-store") == 0
    out = capsys.readouterr().out

    assert "24 messages stored" in out
    assert "0 new, 24 recognised by client id" in out
    assert "DIFFER" not in out and out.count("-> match") >= 1
    # The Chinese question finds the Chinese turn about climbing first.
    chinese = out.split("Q: 周末去哪里爬山？")[1]
    assert chinese.split("\n")[1].strip().startswith("1. [2024-03-12] Maya: 这个周末我们俱乐部要去黄山爬山")
    assert "episodes found in the dialogue" in out and "atlas-4:1..atlas-4:3" in out
    assert "message_recorded   24" in out and "message_classified 24" in out
