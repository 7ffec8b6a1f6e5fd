"""Graph exports: GraphML that xml.etree and networkx read, and an HTML page that fetches nothing and names no URL."""

from __future__ import annotations

import io
import json
import re
import xml.etree.ElementTree as ET

import pytest

from events.graph_events import GraphConclusionRecorded, GraphEdgeLinked, GraphNodesMerged
from projections.queries.graph_export import EDGE_COLOURS, GRAPHML_NS, NODE_COLOURS, to_graphml, to_html, view_data
from tests.graph_builders import E0, T0, at_cosine, graph, memory

NS = {"g": GRAPHML_NS}


def sample():
    return graph(
        ("m1", memory("I", "mood", "bad", topic_vec=E0, attributes={"time": "today"}, turn="t1")),
        ("m2", memory("I", "sleep", "poor", minutes=5)),
        ("m3", memory("I", "Mood ", "grumpy", topic_vec=at_cosine(0.99), minutes=9)),
        ("e1", GraphEdgeLinked(source_id="m2", target_id="m1", relation_type="causality", relation="caused",
                               occurred_at=T0, reason="told so", discovered_by="tool:link_memories")),
        ("c1", GraphConclusionRecorded(conclusion_id="c1", cluster_key="subject:i|topic:mood", statement="I · mood",
                                       confidence=0.5, source_memory_ids=("m1", "m3"), version=1)),
    )


def test_graphml_parses_and_holds_every_vertex_and_edge_with_its_attributes():
    root = ET.fromstring(to_graphml(sample()))
    graph_el = root.find("g:graph", NS)
    assert graph_el.get("edgedefault") == "directed"
    nodes = {n.get("id"): {d.get("key"): d.text for d in n.findall("g:data", NS)} for n in graph_el.findall("g:node", NS)}
    assert set(nodes) == {"subject:i", "topic:mood", "object:bad", "attribute:time", "value:today", "topic:sleep",
                          "object:poor", "object:grumpy", "memory:m1", "memory:m2", "memory:m3", "conclusion:c1"}
    assert nodes["topic:mood"] == {"n_label": "mood", "n_kind": "topic", "n_memory_ids": "m1 m3"}
    assert nodes["memory:m1"]["n_turn_ids"] == "t1" and nodes["memory:m1"]["n_memory_type"] == "event"
    edges = {e.get("id"): (e.get("source"), e.get("target"), {d.get("key"): d.text for d in e.findall("g:data", NS)})
             for e in graph_el.findall("g:edge", NS)}
    assert edges["e1"][:2] == ("memory:m2", "memory:m1")
    assert edges["e1"][2]["e_edge_type"] == "causality" and edges["e1"][2]["e_relation"] == "caused"
    assert edges["m1/member"][:2] == ("memory:m1", "topic:mood")
    assert edges["c1/source/m3"][:2] == ("conclusion:c1", "memory:m3")
    assert len(edges) == (4 + 2 + 2) + 3 + 1 + 2  # structural (only m1 has an attribute), members, linked, sources


def test_graphml_shows_merged_nodes_once():
    merged = graph(("m1", memory("I", "dinner", topic_vec=E0)), ("m2", memory("I", "supper", topic_vec=E0)),
                   ("g", GraphNodesMerged(merge_id="g", kept_node_id="topic:dinner", merged_node_ids=("topic:supper",),
                                          similarity=1.0, reason="r")))
    root = ET.fromstring(to_graphml(merged))
    ids = {n.get("id") for n in root.iter(f"{{{GRAPHML_NS}}}node")}
    assert "topic:supper" not in ids and "topic:dinner" in ids


def test_networkx_reads_the_graphml():
    nx = pytest.importorskip("networkx")
    g = nx.read_graphml(io.StringIO(to_graphml(sample())))
    assert g.number_of_nodes() == 12 and g.is_directed()
    assert g.nodes["topic:mood"]["kind"] == "topic"
    assert g.nodes["memory:m1"]["importance"] == 0.5
    assert any(d.get("relation") == "caused" for _, _, d in g.edges(data=True))


def embedded(page: str) -> dict:
    match = re.search(r'<script type="application/json" id="graph-data">(.*?)</script>', page, re.DOTALL)
    return json.loads(match.group(1))


def test_the_html_page_is_self_contained_and_names_no_url():
    state = sample()
    hostile = graph(("x", memory("I", "read", "</script><script>alert(1)</script> https://evil.example/x")),
                    state=state)
    page = to_html(hostile, title="Alice <& co>")
    assert not re.search(r"https?://", page, re.IGNORECASE)
    assert not re.search(r"<(link|img|iframe)\b|\bsrc\s*=|@import|url\(", page, re.IGNORECASE)
    assert page.count("<script") == 2 and "alert(1)</script>" not in page
    assert "<title>Alice &lt;&amp; co&gt;</title>" in page
    data = embedded(page)
    assert {n["kind"] for n in data["nodes"]} == {"subject", "topic", "object", "attribute", "value", "memory",
                                                  "conclusion"}
    assert {e["type"] for e in data["edges"]} == {"memory_type", "core_relation", "attribute", "causality",
                                                  "member", "source"}
    assert data["nodeColours"] == NODE_COLOURS and data["edgeColours"] == EDGE_COLOURS
    assert any(n["label"].endswith("https://evil.example/x") for n in data["nodes"])  # intact once decoded


def test_the_view_data_is_what_the_page_embeds_and_names_each_memory_s_source_message():
    state = sample()
    data = view_data(state)
    assert embedded(to_html(state)) == data
    ids = {n["id"] for n in data["nodes"]}
    assert all(e["source"] in ids and e["target"] in ids for e in data["edges"])
    by_id = {n["id"]: n for n in data["nodes"]}
    assert by_id["memory:m1"]["message_ids"] == ["msg-t1"] and by_id["memory:m2"]["message_ids"] == []
    assert "turn_ids: t1" in by_id["memory:m1"]["info"] and by_id["topic:mood"]["message_ids"] == []
    assert "PalimpsestGraph.mount(" in to_html(state)  # the shared component, inlined
