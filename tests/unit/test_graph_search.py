"""Graph-expanded retrieval: seeds, BFS depth and relation filters, hand-computed scores, filters that do not cut
paths, provenance, and the auto mode's English and Chinese cues.
"""

from __future__ import annotations

import math
from datetime import timedelta

import pytest

from events.errors import InvalidInputError
from events.graph_events import GraphEdgeLinked, GraphMemoryStatusChanged
from projections.queries.graph_search import (
    GraphSearchConfig,
    expansion_depth,
    needs_expansion,
    search,
    search_graph,
    top_similarity,
)
from tests.builders import touch
from tests.graph_builders import E0, E1, E2, E3, T0, graph, memory, unit

NOW = T0 + timedelta(days=30)


def link(eid: str, source: str, target: str, relation_type: str, relation: str) -> tuple[str, GraphEdgeLinked]:
    return eid, GraphEdgeLinked(source_id=source, target_id=target, relation_type=relation_type, relation=relation,
                                occurred_at=T0, reason="told so", discovered_by="tool:link_memories")


CHAIN = [
    ("m1", memory("I", "mood", "bad", topic_vec=E0, importance=0.8, turn="t1")),
    ("m2", memory("I", "sleep", "poor", topic_vec=E1, importance=0.6, at=T0 - timedelta(hours=10), turn="t2")),
    ("m3", memory("I", "coffee", "late", memory_type="fact", topic_vec=E2, at=T0 - timedelta(hours=12), turn="t3")),
    ("m4", memory("I", "argument", "Bob", memory_type="relation", topic_vec=E3, at=T0 + timedelta(hours=1))),
    link("c1", "m2", "m1", "causality", "caused"),
    link("c2", "m3", "m2", "causality", "caused"),
    link("r1", "m1", "m4", "reference", "related"),
]


def found(hits) -> dict[str, int]:
    return {h.memory_id: h.distance for h in hits}


def test_depth_limits_the_bfs_and_paths_record_the_hops():
    state = graph(*CHAIN)
    assert found(search_graph(state, E0, now=NOW, depth=0)) == {"m1": 0}
    assert found(search_graph(state, E0, now=NOW, depth=1)) == {"m1": 0, "m2": 1, "m4": 1}
    hits = {h.memory_id: h for h in search_graph(state, E0, now=NOW, depth=2)}
    assert {m: h.distance for m, h in hits.items()} == {"m1": 0, "m2": 1, "m4": 1, "m3": 2}
    assert hits["m3"].path == ("m1", "m2", "m3")  # walked against the edges' direction: effect → cause
    assert hits["m3"].via == ("causality:caused", "causality:caused")
    assert (hits["m3"].turn_ids, hits["m3"].message_ids) == (("t3",), ("msg-t3",))


@pytest.mark.parametrize(
    ("relation_filter", "expected"),
    [
        (("causality",), {"m1", "m2", "m3"}),
        (("caused",), {"m1", "m2", "m3"}),
        (("related",), {"m1", "m4"}),
        (("reference", "causality"), {"m1", "m2", "m3", "m4"}),
        ((), {"m1"}),
    ],
)
def test_relation_filters_name_edge_types_or_relation_names(relation_filter, expected):
    state = graph(*CHAIN)
    assert set(found(search_graph(state, E0, now=NOW, depth=2, relation_filter=relation_filter))) == expected


def test_memories_sharing_a_topic_or_object_are_one_hop_apart_but_subjects_are_not_hops():
    state = graph(("m1", memory("I", "walk", "park", topic_vec=E0)), ("m2", memory("Bob", "picnic", "park", topic_vec=E1)),
                  ("m3", memory("Cy", "picnic", "lake")), ("m4", memory("I", "read", "book", topic_vec=E2)))
    hits = {h.memory_id: h for h in search_graph(state, E0, now=NOW, depth=2)}
    assert {m: h.distance for m, h in hits.items()} == {"m1": 0, "m2": 1, "m3": 2}
    assert hits["m3"].via == ("shared_node:park", "shared_node:picnic")
    assert set(found(search_graph(state, E0, now=NOW, depth=2, relation_filter=("causality",)))) == {"m1"}
    assert set(found(search_graph(state, E0, now=NOW, depth=2, relation_filter=("shared_node",)))) == {"m1", "m2", "m3"}


def test_scores_follow_the_formula_with_the_seed_weights():
    state = graph(*CHAIN, ("t1", touch("m1")), ("t2", touch("m1")), ("t3", touch("m1", "m1")))
    hits = {h.memory_id: h for h in search_graph(state, E0, now=NOW, depth=1)}
    m1, m2 = hits["m1"], hits["m2"]
    access = math.log(1 + 3) / math.log(1 + 10)  # three touch events (a repeat within one counts once); saturation 10
    assert m1.terms == pytest.approx({"semantic": 1.0, "importance": 0.8, "graph": 1.0, "time_decay": math.exp(-1),
                                      "access": access})
    assert m1.score == pytest.approx(0.4 + 0.2 * 0.8 + 0.2 + 0.1 * math.exp(-1) + 0.1 * access)
    assert m2.score == pytest.approx(0.2 * 0.6 + 0.2 * 0.5 + 0.1 * math.exp(-(30 + 10 / 24) / 30))
    assert m2.score == pytest.approx(sum(m2.contributions.values()))
    assert [h.memory_id for h in search_graph(state, E0, now=NOW, depth=1)] == ["m1", "m2", "m4"]
    only_semantic = GraphSearchConfig(alpha=1, beta=0, gamma=0, delta=0, epsilon=0)
    near = unit(1, 0.5)  # seeds both "mood" (0.894) and "sleep" (0.447 >= 0.3): m3 is one hop from m2
    assert {h.memory_id: round(h.score, 6) for h in search_graph(state, near, now=NOW, config=only_semantic)} == {
        "m1": round(1 / math.sqrt(1.25), 6), "m2": round(0.5 / math.sqrt(1.25), 6), "m3": 0.0, "m4": 0.0}


def test_type_and_time_filters_select_results_without_cutting_paths():
    state = graph(*CHAIN)
    (fact,) = search_graph(state, E0, now=NOW, depth=2, memory_types=("fact",))
    assert (fact.memory_id, fact.distance, fact.path) == ("m3", 2, ("m1", "m2", "m3"))
    window = (T0 - timedelta(hours=11), T0)
    assert set(found(search_graph(state, E0, now=NOW, depth=2, time_range=window))) == {"m1", "m2"}
    assert len(search_graph(state, E0, now=NOW, depth=2, max_results=2)) == 2


def test_inactive_memories_are_neither_returned_nor_walked_through():
    state = graph(*CHAIN, ("s", GraphMemoryStatusChanged(memory_id="m2", status="archived", reason="decayed")))
    assert set(found(search_graph(state, E0, now=NOW, depth=2))) == {"m1", "m4"}


def test_bad_depths_and_naive_times_are_rejected():
    state = graph(*CHAIN)
    with pytest.raises(InvalidInputError, match="depth"):
        search_graph(state, E0, now=NOW, depth=3)
    with pytest.raises(ValueError, match="timezone-aware"):
        search_graph(state, E0, now=NOW.replace(tzinfo=None))


@pytest.mark.parametrize(
    "query",
    ["Why am I in a bad mood?", "Is it because of the coffee?", "What is related to Bob?", "what caused the fight",
     "我为什么今天不开心?", "因为昨晚没睡好", "和小明有关的记忆", "这件事的原因是什么"],
)
def test_causal_and_relational_questions_expand_in_auto_mode(query):
    assert needs_expansion(query, 0.99)
    assert expansion_depth("auto", query, 0.99) == 1
    assert expansion_depth("fast", query, 0.99) == 0


@pytest.mark.parametrize("query", ["What did I eat today?", "Whyte street address", "我今天吃了什么"])
def test_plain_questions_expand_only_when_the_best_seed_is_weak(query):
    assert not needs_expansion(query, 0.9)
    assert needs_expansion(query, 0.5) and needs_expansion(query, None)
    assert expansion_depth("deep", query, 0.9) == 1
    with pytest.raises(InvalidInputError, match="mode"):
        expansion_depth("slow", query, 0.9)


def test_search_picks_the_depth_for_the_mode():
    state = graph(*CHAIN)
    assert top_similarity(state, E0) == pytest.approx(1.0)
    depth, hits = search(state, "Why am I in a bad mood?", E0, now=NOW)
    assert depth == 1 and set(found(hits)) == {"m1", "m2", "m4"}
    depth, hits = search(state, "How is my mood?", E0, now=NOW, relation_filter=("causality",))
    assert depth == 0 and set(found(hits)) == {"m1"}
    depth, hits = search(state, "How is my mood?", E0, now=NOW, mode="deep", relation_filter=("causality",))
    assert depth == 1 and set(found(hits)) == {"m1", "m2"}


def test_a_hub_node_shared_by_too_many_memories_is_no_hop():
    state = graph(("m1", memory("I", "walk", "park", topic_vec=E0)), ("m2", memory("Bob", "picnic", "park", topic_vec=E1)),
                  ("m3", memory("Cy", "run", "park")))
    assert set(found(search_graph(state, E0, now=NOW, depth=1))) == {"m1", "m2", "m3"}
    narrow = GraphSearchConfig(max_shared_fanout=2)  # "park" is shared by three memories: a hub under this config
    assert set(found(search_graph(state, E0, now=NOW, depth=1, config=narrow))) == {"m1"}


def test_the_query_words_found_in_a_memorys_labels_seed_it_without_any_vector():
    state = graph(("m1", memory("Mel", "go", "camping trip", turn="t1")), ("m2", memory("Mel", "paint", "sunset")),
                  ("m3", memory("Bob", "fix", "car")))
    hits = {h.memory_id: h for h in search_graph(state, E0, now=NOW, depth=0, query="Where did Mel go camping?")}
    assert set(hits) == {"m1"}  # covers mel, go, camp: every query word (m2 covers only "mel": under the minimum)
    assert hits["m1"].terms["semantic"] == pytest.approx(1.0)
    off = GraphSearchConfig(lexical_seed_min=0.0)
    assert search_graph(state, E0, now=NOW, depth=0, query="Where did Mel go camping?", config=off) == []
    assert search_graph(state, E0, now=NOW, depth=0, query="完全无关", config=GraphSearchConfig()) == []


def test_label_index_weighs_rare_words_more_and_handles_chinese():
    from projections.queries.graph_terms import LabelIndex

    state = graph(("m1", memory("小红", "去", "瑜伽课")), ("m2", memory("小红", "吃", "火锅")), ("m3", memory("小红", "买", "书")))
    scores = LabelIndex().sync(state.memories).scores("小红上周去了瑜伽课")
    assert scores["m1"] > scores["m2"] == scores["m3"] > 0  # 小红 is in every memory: a low idf


def test_vectors_a_read_brings_for_labels_not_embedded_yet_rank_as_the_recorded_ones_will():
    from events.graph_events import GraphLabelsEmbedded
    from projections.queries.graph_search import unembedded

    vectors = {"mood": E0, "sleep": E1, "coffee": E2, "argument": E3}
    bare = [(mid, memory(m.subject, m.topic, m.object, memory_type=m.memory_type, importance=m.importance,
                         at=m.occurred_at, turn=(m.source_turn_ids or (None,))[0])) if mid.startswith("m") else (mid, m)
            for mid, m in CHAIN]
    staged = graph(*bare)
    assert {labels[0] for labels in unembedded(staged).values()} == {"mood", "bad", "sleep", "poor", "coffee", "late",
                                                                      "argument", "Bob"}
    assert search(staged, "Why do I feel this way?", E0, now=NOW)[1] == []  # no vector, no word of theirs: nothing
    given = {label: vectors.get(label, E3) for labels in unembedded(staged).values() for label in labels}
    before = [vars_of(h) for h in search(staged, "Why do I feel this way?", E0, now=NOW, label_vectors=given)[1]]
    embedded = graph(("e1", GraphLabelsEmbedded(dim=4, vectors={k: v.tobytes() for k, v in given.items()})),
                     state=graph(*bare))
    assert unembedded(embedded) == {}
    after = [vars_of(h) for h in search(embedded, "Why do I feel this way?", E0, now=NOW)[1]]
    assert before and [h["memory_id"] for h in before] == [h["memory_id"] for h in after]
    for b, a in zip(before, after, strict=True):
        assert b["score"] == pytest.approx(a["score"], abs=1e-6) and b["distance"] == a["distance"]
    assert unembedded(staged)  # the read recorded nothing in the state it read


def vars_of(hit) -> dict:
    return {"memory_id": hit.memory_id, "score": hit.score, "distance": hit.distance}
