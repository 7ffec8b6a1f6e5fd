"""`make demo` runs on the real packaged model and shows what it promises."""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from palimpsest.demo import run_demo

pytestmark = [pytest.mark.integration, pytest.mark.model]


@pytest.fixture(scope="module")
def out(ray_cluster, tmp_path_factory) -> str:
    """The demo's output: it runs once for every test of this module (about a minute of work on the real model)."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = run_demo(tmp_path_factory.mktemp("demo") / "demo-store")
    assert code == 0, printed.getvalue()[-2000:]
    return printed.getvalue()


def test_demo_ingests_queries_and_replays_with_matching_digests(out):
    assert "24 messages stored" in out
    assert "0 new, 24 recognised by client id" in out
    assert "DIFFER" not in out and out.count("-> match") >= 1
    # The Chinese question finds the Chinese turn about climbing first.
    chinese = out.split("Q: 周末去哪里爬山？")[1]
    assert chinese.split("\n")[1].strip().startswith("1. [2024-03-12] Maya: 这个周末我们俱乐部要去黄山爬山")
    # The store opens on the default encoder (English) and moves to the multilingual one by re-embedding; then the
    # English question about a Chinese turn finds it in its top three (the multilingual encoder, and the fusion
    # judging a turn in another language by what can read it).
    assert "shard actors ready in" in out and "encoder minilm" in out
    moved = out.split("=== 3b. another encoder")[1].split("\n=== 4.")[0]
    assert re.search(r"\n24 messages and \d+ graph labels encoded in [\d.]+s and recorded beside the minilm vectors, "
                     r"then 1 user switched to them .* runs on multilingual-e5-small\n", moved), moved
    editor = moved.split("Q: Which editor does Maya use now?")[1]
    assert "Maya: 我最近改用 Neovim 了" in editor, editor
    assert "embedder_switched  1" in out
    assert "episodes found in the dialogue" in out and "atlas-4:1..atlas-4:3" in out
    # 24 sample turns plus the 6 of the learning scene (two tiny users)
    assert "message_recorded   30" in out and "message_classified 30" in out
    assert "feedback_detected  4" in out and "memory_adjusted    6" in out and "adjustment_reverted 2" in out
    # The learning loop, English and Chinese: invalidated after the second correction, explained, reverted.
    learning = out.split("=== 10b.")[1].split("=== 11.")[0]
    assert learning.count("stable invalidate") == 2 and learning.count("the stale note is gone from the context") == 2
    assert learning.count("invalidated at") == 2 and learning.count("the note is back in the context") == 2
    assert "cues stale:我说过" in learning


def test_demo_shows_a_preference_superseded_with_its_chain_and_sources_and_archival(out):
    notes = out.split("=== 7. notes")[1].split("=== 8.")[0]
    assert "[preference] v2 Maya switched to coffee in the morning" in notes
    assert "v1 superseded 2024-03-04 → 2024-05-06  Maya prefers green tea in the morning" in notes
    assert "source atlas-1:6 (2024-03-04) Maya: I do my best work early" in notes
    assert "v2 active     2024-05-06 → now  Maya switched to coffee in the morning" in notes
    assert "v1 superseded 2024-03-04 → 2024-04-08  Decision: use PostgreSQL as the database" in notes
    archive = out.split("=== 8. archival")[1].split("=== 9.")[0]
    assert "archive search top hit: Sounds fun. What stack are you thinking about?" in archive
    assert re.search(r"restored; default search finds it again \(at rank [123]\): Sounds fun\. What stack", archive)
    assert "memory_archived    1" in out and "note_operation" in out
    graph = out.split("=== 10. memory graph")[1].split("=== 11.")[0]
    assert "2 superseded by the notes" in graph  # green tea and PostgreSQL; "my best work early" (same turn) stays
    lifted = re.findall(r"search lifted (\S+) to rank (\d) through the graph \(rank (\d+) without it\): reached from "
                        r"(\S+) via reference:", graph)
    assert lifted, graph  # the graph term alone lifts a turn into the top five
    assert all(int(rank) < int(without) for _, rank, without, _ in lifted), lifted
