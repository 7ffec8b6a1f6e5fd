"""The memory-graph fold: subgraphs of staged memories, deterministic node ids, merges and exact unmerges,
touches, consolidation flags, statuses, conclusion versions, and the graph events' validation and JSON round-trip.
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from pydantic import ValidationError

from events.graph_events import (
    GRAPH_EVENT_TYPES,
    GraphConclusionRecorded,
    GraphEdgeLinked,
    GraphLabelsEmbedded,
    GraphMemoriesConsolidated,
    GraphMemoryStaged,
    GraphMemoryStatusChanged,
    GraphNodesMerged,
    GraphNodesUnmerged,
    GraphProposalRejected,
)
from projections.folds.graph import GraphState, fold, node_id
from tests.builders import stream, touch
from tests.graph_builders import E0, E1, E2, T0, at_cosine, graph, memory


def merged(merge_id: str, kept: str, *gone: str, similarity: float = 0.96) -> tuple[str, GraphNodesMerged]:
    return merge_id, GraphNodesMerged(merge_id=merge_id, kept_node_id=kept, merged_node_ids=gone,
                                      similarity=similarity, reason="test")


def unmerged(merge_id: str) -> tuple[str, GraphNodesUnmerged]:
    return f"undo-{merge_id}", GraphNodesUnmerged(merge_id=merge_id, reason="wrong merge")


def view_summary(state: GraphState) -> tuple:
    view = state.view()
    return (sorted((n.node_id, n.memory_ids) for n in view.nodes.values()), sorted(view.memory_nodes.items()),
            sorted((e.edge_id, e.source_id, e.target_id) for e in view.edges))


def test_a_staged_memory_is_a_subgraph_with_typed_edges_and_provenance():
    state = graph(("m1", memory("I", "Dinner", "rice", topic_vec=E0, object_vec=E1, importance=0.7,
                                attributes={"place": "home"}, turn="t1")))
    m = state.memories["m1"]
    assert m.node_ids == ("subject:i", "topic:dinner", "object:rice", "attribute:place", "value:home")
    assert m.edge_ids == ("m1/type", "m1/core", "m1/attr/place", "m1/value/place")
    edges = {e.edge_id: (e.source_id, e.target_id, e.edge_type, e.relation) for e in state.edges.values()}
    assert edges == {
        "m1/type": ("subject:i", "topic:dinner", "memory_type", "event"),
        "m1/core": ("topic:dinner", "object:rice", "core_relation", "is"),
        "m1/attr/place": ("object:rice", "attribute:place", "attribute", "has"),
        "m1/value/place": ("attribute:place", "value:home", "attribute", "place"),
    }
    assert all(e.importance == 0.7 and e.memory_id == "m1" and e.occurred_at == T0 for e in state.edges.values())
    assert (m.memory_type, m.staged, m.status, m.access_count, m.last_accessed) == ("event", True, "active", 0, None)
    assert (m.source_turn_ids, m.source_message_ids) == (("t1",), ("msg-t1",))
    assert np.array_equal(state.nodes["topic:dinner"].vector, E0)
    assert state.nodes["subject:i"].vector is None and state.nodes["topic:dinner"].label == "Dinner"


def test_node_ids_are_deterministic_so_memories_share_nodes_and_the_first_vector_wins():
    assert node_id("topic", "  Eat\tDinner ") == node_id("topic", "eat dinner") == "topic:eat dinner"
    assert node_id("object", "ＲＩＣＥ") == "object:rice"  # NFKC: full-width letters
    state = graph(("m1", memory("I", "eat", "Rice", object_vec=E0)), ("m2", memory("Bob", "cook", "rice", object_vec=E1)))
    assert state.nodes["object:rice"].memory_ids == ("m1", "m2")
    assert np.array_equal(state.nodes["object:rice"].vector, E0)
    assert len(state.nodes) == 5


def test_a_merge_redirects_the_merged_node_to_the_kept_node():
    state = graph(("m1", memory("I", "dinner", topic_vec=E0)), ("m2", memory("I", "supper", topic_vec=at_cosine(0.96))),
                  merged("g1", "topic:dinner", "topic:supper"))
    view = state.view()
    assert "topic:supper" not in view.nodes
    assert view.nodes["topic:dinner"].memory_ids == ("m1", "m2")
    assert view.nodes["topic:dinner"].merged_ids == ("topic:supper",)
    assert view.memory_nodes["m2"] == ("subject:i", "topic:dinner")
    assert {(e.source_id, e.target_id) for e in view.edges} == {("subject:i", "topic:dinner")}
    assert state.nodes["topic:supper"].memory_ids == ("m2",)  # the raw record is untouched


def test_unmerge_restores_exactly_the_state_without_the_merge_apart_from_its_history():
    pairs = [
        ("m1", memory("I", "dinner", "rice", topic_vec=E0)),
        ("m2", memory("I", "supper", "rice", topic_vec=at_cosine(0.96), minutes=5)),
        merged("g1", "topic:dinner", "topic:supper"),
        ("m3", memory("I", "supper", "noodles", minutes=10)),  # staged while the merge holds
        ("e1", GraphEdgeLinked(source_id="topic:supper", target_id="m1", source_kind="node", relation_type="reference",
                               relation="mentions", occurred_at=T0, reason="test", discovered_by="test")),
        ("t1", touch("m2", "m3")),
        unmerged("g1"),
        ("m4", memory("I", "supper", minutes=20)),
    ]
    with_merge = stream(*pairs)
    during = fold(GraphState(), with_merge[:6])
    assert during.view().memory_nodes["m3"][1] == "topic:dinner"
    without = [env for env in with_merge if env.event_id not in ("g1", "undo-g1")]
    a, b = fold(GraphState(), with_merge), fold(GraphState(), without)
    assert a.canonical(history=False) == b.canonical(history=False)
    assert a.canonical() != b.canonical()
    assert view_summary(a) == view_summary(b)
    assert a.merges["g1"].undone and a.aliases == {}
    assert a.blocked_pairs() == {frozenset(("topic:dinner", "topic:supper"))}


def test_unmerging_one_of_two_chained_merges_keeps_the_other():
    pairs = [
        ("m1", memory("I", "a", topic_vec=E0)),
        ("m2", memory("I", "b", topic_vec=E0)),
        ("m3", memory("I", "c", topic_vec=E0)),
        merged("g1", "topic:a", "topic:b"),
        merged("g2", "topic:c", "topic:a"),
        unmerged("g1"),
    ]
    envs = stream(*pairs)
    chained = fold(GraphState(), envs[:5])
    assert chained.resolve("topic:b") == "topic:c"
    a = fold(GraphState(), envs)
    b = fold(GraphState(), [env for env in envs if env.event_id not in ("g1", "undo-g1")])
    assert a.canonical(history=False) == b.canonical(history=False)
    assert a.resolve("topic:b") == "topic:b" and a.resolve("topic:a") == "topic:c"


def test_merges_naming_unknown_nodes_and_repeated_or_unknown_unmerges_change_nothing():
    base = [("m1", memory("I", "a", topic_vec=E0)), ("m2", memory("I", "b", topic_vec=E0))]
    plain = graph(*base)
    noisy = graph(*base, merged("g1", "topic:nowhere", "topic:a"), merged("g2", "topic:a", "topic:nowhere"),
                  unmerged("g9"), merged("g3", "topic:a", "topic:b"), unmerged("g3"), unmerged("g3"))
    assert noisy.canonical(history=False) == plain.canonical(history=False)
    assert noisy.merges["g2"].applied == () and noisy.merges["g3"].applied == ("topic:b",)


def test_touches_count_once_per_query_for_graph_memories_only():
    state = graph(("m1", memory("I", "a")), ("m2", memory("I", "b")),
                  ("t1", touch("m1", "m1", "x")), ("t2", touch("m1", "m2")))
    m1, m2 = state.memories["m1"], state.memories["m2"]
    assert (m1.access_count, m2.access_count) == (2, 1)
    assert m1.last_accessed == m2.last_accessed > m1.created_at
    assert "x" not in state.memories


def test_consolidation_status_and_conclusion_versions_are_folded():
    c1 = GraphConclusionRecorded(conclusion_id="c1", cluster_key="k", statement="s", confidence=0.6,
                                 source_memory_ids=("m1",), version=1)
    c2 = GraphConclusionRecorded(conclusion_id="c2", cluster_key="k", statement="s2", confidence=0.7,
                                 source_memory_ids=("m1", "m2"), version=2, supersedes="c1")
    state = graph(("m1", memory("I", "a")), ("m2", memory("I", "b")),
                  ("b1", GraphMemoriesConsolidated(batch_id="b1", memory_ids=("m1", "zz"))),
                  ("s1", GraphMemoryStatusChanged(memory_id="m2", status="superseded", reason="newer", superseded_by="m1")),
                  ("c1", c1), ("c2", c2))
    assert (state.memories["m1"].consolidated, state.memories["m1"].batch_id, state.memories["m2"].staged) == (True, "b1", True)
    assert (state.memories["m2"].status, state.memories["m2"].superseded_by) == ("superseded", "m1")
    assert state.conclusions["c1"].superseded_by == "c2"
    assert [c.conclusion_id for c in state.current_conclusions().values()] == ["c2"]


def test_edges_to_unknown_endpoints_stay_in_the_log_but_out_of_the_view():
    state = graph(("m1", memory("I", "a")),
                  ("e1", GraphEdgeLinked(source_id="m1", target_id="ghost", relation_type="causality", relation="caused",
                                         occurred_at=T0, reason="r", discovered_by="tool:link_memories")))
    assert "e1" in state.edges and all(e.edge_id != "e1" for e in state.view().edges)


def test_fold_over_a_concatenation_is_the_fold_of_its_parts():
    envs = stream(("m1", memory("I", "a", topic_vec=E0)), ("m2", memory("I", "b", topic_vec=E2, minutes=3)),
                  merged("g1", "topic:a", "topic:b"), ("t1", touch("m2")), unmerged("g1"))
    whole = fold(GraphState(), envs)
    for cut in range(len(envs) + 1):
        assert fold(fold(GraphState(), envs[:cut]), envs[cut:]).canonical() == whole.canonical()


def test_every_graph_event_round_trips_through_json():
    samples = [
        memory("我", "吃饭", "白米饭", topic_vec=E0, object_vec=E1, attributes={"时间": "今天"}, turn="t1"),
        GraphMemoriesConsolidated(batch_id="b", memory_ids=("m1",)),
        GraphLabelsEmbedded(dim=4, vectors={"吃饭": E2.tobytes()}),
        GraphNodesMerged(merge_id="g", kept_node_id="topic:a", merged_node_ids=("topic:b",), similarity=0.9, reason="r"),
        GraphNodesUnmerged(merge_id="g", reason="r"),
        GraphEdgeLinked(source_id="m1", target_id="m2", relation_type="causality", relation="导致",
                        occurred_at=T0 + timedelta(hours=1), reason="r", discovered_by="tool:link_memories"),
        GraphMemoryStatusChanged(memory_id="m1", status="archived", reason="r"),
        GraphConclusionRecorded(conclusion_id="c", cluster_key="k", statement="s", conditions=("a = b",),
                                confidence=0.5, source_memory_ids=("m1",), version=1),
        GraphProposalRejected(llm_call_id="c1", proposed="create_memory", proposal="{}", reason="r", decider="llm:m"),
    ]
    assert {type(e).kind for e in samples} == set(GRAPH_EVENT_TYPES)
    for event in samples:
        cls = GRAPH_EVENT_TYPES[event.kind]
        assert cls.model_validate_json(event.model_dump_json()) == event
    assert np.array_equal(samples[0].vector("吃饭"), E0)


@pytest.mark.parametrize(
    "build",
    [
        lambda: GraphMemoryStaged(subject="I", memory_type="event", topic="a", occurred_at=T0, extractor="x",
                                  dim=3, vectors={"a": E0.tobytes()}),
        lambda: GraphMemoryStaged(subject="I", memory_type="event", topic="a", occurred_at=T0, extractor="x",
                                  dim=4, vectors={"b": E0.tobytes()}),
        lambda: GraphMemoryStaged(subject="I", memory_type="event", topic="a", occurred_at=T0.replace(tzinfo=None),
                                  extractor="x"),
        lambda: GraphMemoryStaged(subject="I", memory_type="habit", topic="a", occurred_at=T0, extractor="x"),
        lambda: GraphConclusionRecorded(conclusion_id="c", cluster_key="k", statement="s", confidence=0.5,
                                        source_memory_ids=("m",), version=2),
        lambda: GraphNodesMerged(merge_id="g", kept_node_id="a", merged_node_ids=("a",), similarity=1.0, reason="r"),
        lambda: GraphLabelsEmbedded(dim=3, vectors={}),
        lambda: GraphLabelsEmbedded(dim=3, vectors={"a": E0.tobytes()}),
        lambda: GraphLabelsEmbedded(dim=4, vectors={" ": E0.tobytes()}),
        lambda: GraphEdgeLinked(source_id="m1", target_id="m1", relation_type="reference", relation="r",
                                occurred_at=T0, reason="r", discovered_by="x"),
    ],
)
def test_malformed_graph_events_are_rejected(build):
    with pytest.raises(ValidationError):
        build()


def test_labels_embedded_later_fill_only_the_nodes_without_a_vector():
    labels = GraphLabelsEmbedded(dim=4, vectors={"Dinner": E2.tobytes(), "rice": E2.tobytes(), "ghost": E2.tobytes()})
    envs = stream(("m1", memory("I", "dinner", "Rice")), ("m2", memory("I", "lunch", topic_vec=E0, minutes=1)),
                  ("v1", labels), ("m3", memory("I", "tea", minutes=2)))
    state = fold(GraphState(), envs)
    assert np.array_equal(state.nodes["topic:dinner"].vector, E2)  # labels match nodes as node ids do (case)
    assert np.array_equal(state.nodes["object:rice"].vector, E2)
    assert np.array_equal(state.nodes["topic:lunch"].vector, E0)  # the first recorded vector stays
    assert "topic:ghost" not in state.nodes and "object:ghost" not in state.nodes  # no node is made
    assert state.unembedded_labels() == ["tea"]
    ids, matrix = state.node_matrix(4)
    assert sorted(ids) == ["object:rice", "topic:dinner", "topic:lunch"] and matrix.shape == (3, 4)
    for cut in range(len(envs) + 1):  # a snapshot taken anywhere, then the rest, is the whole fold
        assert fold(fold(GraphState(), envs[:cut]), envs[cut:]).canonical() == state.canonical()
