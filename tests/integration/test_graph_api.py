"""The memory graph through the public API and the CLI: tool calls, staging at ingest, consolidation on Ray,
graph-expanded search with provenance, and the HTML / GraphML export."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from datetime import UTC, datetime

import pytest

from events.errors import InvalidInputError
from palimpsest import Memory
from palimpsest.cli import main
from tests.builders import command

pytestmark = pytest.mark.integration
REFERENCE = datetime(2023, 5, 10, 14, 0, tzinfo=UTC)
TURNS = [
    command("I went to a LGBTQ support group yesterday and it was so powerful.", 0, speaker="Caroline",
            user_id="caroline", turn_id="D1:3", occurred_at="2023-05-08T13:56:00+00:00"),
    command("My sister adopted a puppy last week.", 1, speaker="Caroline", user_id="caroline", turn_id="D1:5",
            occurred_at="2023-05-08T14:00:00+00:00"),
    command("我昨天去了瑜伽课，感觉很放松。", 2, speaker="Caroline", user_id="caroline", turn_id="D1:7",
            occurred_at="2023-05-08T14:05:00+00:00"),
]


@pytest.fixture(scope="module")
def graph_store(ray_cluster, tmp_path_factory):
    mem = Memory.open(tmp_path_factory.mktemp("graph") / "store", num_shards=2, embedder="hash")
    mem.add_messages(TURNS, tenant="acme", user_id="caroline")
    yield mem
    mem.close()


def test_turns_stage_graph_memories_that_search_finds_with_their_turns(graph_store):
    result = graph_store.search_memories("acme", "caroline", query="support group", mode="fast", max_results=3)
    assert result["depth"] == 0
    top = result["hits"][0]
    assert "support group" in top["summary"] and list(top["turn_ids"]) == ["D1:3"] and top["distance"] == 0
    assert set(top["contributions"]) == {"semantic", "importance", "graph", "time_decay", "access"}


def test_create_memory_validates_stages_and_resolves_relative_times(graph_store):
    created = graph_store.create_memory("acme", "caroline", subject="Caroline", memory_type="event", topic="paint",
                                        object="sunrise painting", attributes={"time": "yesterday 8pm"},
                                        importance=0.8)
    assert created["staged"] is True
    found = graph_store.search_memories("acme", "caroline", query="sunrise painting", mode="fast", max_results=1)
    assert found["hits"][0]["memory_id"] == created["memory_id"]
    with pytest.raises(InvalidInputError) as err:
        graph_store.create_memory("acme", "caroline", subject="Caroline", memory_type="dream", topic="fly",
                                  importance=1.7)
    fields = {f for f, _ in err.value.problems}
    assert {"memory_type", "importance"} <= fields
    assert "outside [0, 1]" in str(err.value) or "between 0 and 1" in str(err.value)


def test_consolidation_runs_as_ray_tasks_and_links_memories(graph_store):
    report = graph_store.consolidate()
    assert report["users"] == 1 and report["staged"] >= 4 and report["events"] >= 1
    assert graph_store.consolidate()["staged"] == 0  # nothing left staged: a second round does nothing
    kinds = {e.kind for e in graph_store.events("acme", "caroline")}
    assert "graph_memories_consolidated" in kinds
    assert all(r.equal for r in graph_store.replay())


def test_link_memories_adds_a_causal_edge_that_deep_search_follows(graph_store):
    link = graph_store.link_memories("acme", "caroline", source_memory_description="support group",
                                     target_memory_description="yoga class 瑜伽课", relation_type="causality",
                                     relation="because")
    assert link["edge_id"]
    deep = graph_store.search_memories("acme", "caroline", query="why did Caroline go to the support group?",
                                       mode="auto", expand_depth=1, max_results=10)
    assert deep["depth"] == 1  # "why" asks for expansion
    assert any(h["distance"] == 1 for h in deep["hits"])


def test_cli_writes_the_graph_as_html_and_graphml_and_exports_tool_schemas(ray_cluster, tmp_path, capsys):
    store = str(tmp_path / "store")
    with Memory.open(store, num_shards=1, embedder="hash") as mem:
        mem.add_messages(TURNS, tenant="acme", user_id="caroline")
        # The CLI commands re-attach to this store's running actors instead of starting their own.
        out = tmp_path / "graph.html"
        assert main(["--store", store, "graph", "--tenant", "acme", "--user", "caroline", "--out", str(out)]) == 0
        html = out.read_text(encoding="utf-8")
        assert "<svg" in html and "http://" not in html and "https://" not in html
        ET.fromstring(out.with_suffix(".graphml").read_text(encoding="utf-8"))
        schemas = tmp_path / "tools.json"
        assert main(["tools", "--out", str(schemas)]) == 0
        names = [t["function"]["name"] for t in json.loads(schemas.read_text())["tools"]]
        assert names == ["create_memory", "link_memories", "search_memories"]
        capsys.readouterr()
        rc = main(["--store", store, "tool", "--tenant", "acme", "--user", "caroline", "search_memories",
                   '{"query": "puppy", "mode": "fast"}', "--json"])
        assert rc == 0 and "puppy" in capsys.readouterr().out
        rc = main(["--store", store, "tool", "--tenant", "acme", "--user", "caroline", "create_memory",
                   '{"subject": "Caroline", "memory_type": "event", "topic": "x", "importance": 3}'])
        assert rc == 2 and "importance" in capsys.readouterr().err
