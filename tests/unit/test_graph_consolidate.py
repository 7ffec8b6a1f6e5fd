"""Graph consolidation as pure decisions: merge thresholds, relation discovery, abstraction with versions,
decay archival, and the combined batch (deterministic, idempotent, non-mutating, order-free across users).
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest

from events.errors import InvalidInputError
from events.graph_events import (
    GraphConclusionRecorded,
    GraphEdgeLinked,
    GraphMemoriesConsolidated,
    GraphMemoryStatusChanged,
    GraphNodesMerged,
    GraphNodesUnmerged,
)
from projections.folds.graph import GraphState
from projections.decisions.graph_consolidate import (
    ConsolidationConfig,
    abstract_conclusions,
    consolidate,
    decay_updates,
    decay_value,
    dedup_nodes,
    discover_relations,
)
from tests.graph_builders import E0, E1, E2, E3, T0, at_cosine, graph, memory


def consolidated(*ids: str) -> tuple[str, GraphMemoriesConsolidated]:
    return f"batch-{'-'.join(ids)}", GraphMemoriesConsolidated(batch_id="b", memory_ids=ids)


def merges(state: GraphState, **kw) -> list[tuple[str, str, float]]:
    return [(m.kept_node_id, m.merged_node_ids[0], round(m.similarity, 2)) for m in dedup_nodes(state, **kw)]


# -- node de-duplication ---------------------------------------------------------


def test_above_095_nodes_merge_whatever_their_types_and_neighbourhoods():
    state = graph(("m1", memory("I", "dinner", topic_vec=E0)),
                  ("m2", memory("Bob", "eat", "supper", object_vec=at_cosine(0.96))))
    assert merges(state) == [("topic:dinner", "object:supper", 0.96)]


def test_between_085_and_095_nodes_merge_only_with_the_same_type_and_agreeing_neighbourhoods():
    agree = graph(("m1", memory("I", "dinner", "rice", topic_vec=E0)),
                  ("m2", memory("I", "supper", "rice", topic_vec=at_cosine(0.90))))
    assert merges(agree) == [("topic:dinner", "topic:supper", 0.9)]
    other_type = graph(("m1", memory("I", "dinner", "rice", topic_vec=E0)),
                       ("m2", memory("I", "eat", "supper", object_vec=at_cosine(0.90))))
    assert merges(other_type) == []
    assert merges(other_type, config=ConsolidationConfig(neighbourhood_jaccard=0.0)) == []  # the type alone decides
    disagree = graph(("m1", memory("I", "dinner", "rice", topic_vec=E0)),
                     ("m2", memory("Bob", "supper", "noodles", topic_vec=at_cosine(0.90))))
    assert merges(disagree) == []
    # {I, rice} vs {I, noodles}: Jaccard 1/3, enough only when the configured bar is lower
    partial = graph(("m1", memory("I", "dinner", "rice", topic_vec=E0)),
                    ("m2", memory("I", "supper", "noodles", topic_vec=at_cosine(0.90))))
    assert merges(partial) == []
    assert merges(partial, config=ConsolidationConfig(neighbourhood_jaccard=0.3)) == [("topic:dinner", "topic:supper", 0.9)]


def test_below_085_nodes_never_merge():
    state = graph(("m1", memory("I", "dinner", "rice", topic_vec=E0)),
                  ("m2", memory("I", "supper", "rice", topic_vec=at_cosine(0.80))))
    assert merges(state) == []
    assert merges(state, config=ConsolidationConfig(neighbourhood_jaccard=0.0)) == []


def test_the_first_seen_node_is_kept_and_a_node_merges_once_per_pass():
    state = graph(("m1", memory("I", "b", topic_vec=at_cosine(0.99))), ("m2", memory("I", "a", topic_vec=E0)),
                  ("m3", memory("I", "c", topic_vec=at_cosine(0.97, E2))))
    assert merges(state) == [("topic:b", "topic:a", 0.99), ("topic:b", "topic:c", 0.96)]


def test_an_undone_merge_is_not_proposed_again_and_focus_limits_the_pairs():
    base = [("m1", memory("I", "dinner", topic_vec=E0)), ("m2", memory("I", "supper", topic_vec=at_cosine(0.97))),
            ("m3", memory("I", "lunch", topic_vec=at_cosine(0.97, E2)))]
    state = graph(*base)
    assert merges(state, node_ids=["topic:lunch"]) == [("topic:dinner", "topic:lunch", 0.97)]
    undone = graph(*base, ("g", GraphNodesMerged(merge_id="g", kept_node_id="topic:dinner",
                                                 merged_node_ids=("topic:supper",), similarity=0.97, reason="r")),
                   ("u", GraphNodesUnmerged(merge_id="g", reason="not the same meal")))
    assert [(k, g) for k, g, _ in merges(undone)] == [("topic:dinner", "topic:lunch")]


# -- relation discovery ------------------------------------------------------------


def links(events: list[GraphEdgeLinked]) -> list[tuple[str, str, str]]:
    return [(e.source_id, e.target_id, e.relation) for e in events]


def test_temporally_close_memories_of_one_subject_and_memories_sharing_nodes_are_linked():
    state = graph(("m1", memory("I", "insomnia", minutes=0)), ("m2", memory("I", "tired", minutes=30)),
                  ("m3", memory("I", "coffee", minutes=200)), ("m4", memory("Bob", "call", minutes=31)),
                  ("m5", memory("Bob", "buy", "coffee beans", minutes=500)),
                  ("m6", memory("I", "grind", "coffee beans", minutes=900)))
    found = discover_relations(state, ["m2", "m6"])
    assert links(found) == [("m1", "m2", "close_in_time"), ("m5", "m6", "related")]
    assert all(e.relation_type == "reference" and e.discovered_by == "consolidate:rules-v1" for e in found)
    assert found[0].occurred_at == T0 + timedelta(minutes=30) and found[0].importance == 0.3
    assert "coffee beans" in found[1].reason


def test_existing_links_and_inactive_memories_are_skipped():
    state = graph(("m1", memory("I", "run", "park", minutes=0)), ("m2", memory("I", "walk", "park", minutes=10)),
                  ("m3", memory("I", "picnic", "park", minutes=20)),
                  ("e", GraphEdgeLinked(source_id="m2", target_id="m1", relation_type="reference", relation="related",
                                        occurred_at=T0, reason="r", discovered_by="x")),
                  ("s", GraphMemoryStatusChanged(memory_id="m3", status="archived", reason="r")))
    assert links(discover_relations(state, ["m2"])) == [("m1", "m2", "close_in_time")]


# -- abstraction -------------------------------------------------------------------


def gym(i: int, place: str = "gym") -> tuple[str, object]:
    return f"m{i}", memory("I", "workout", "weights" if i != 3 else "running", attributes={"place": place},
                           at=T0 + timedelta(days=i))


def test_a_dense_cluster_of_events_yields_a_conclusion_with_conditions_confidence_and_sources():
    state = graph(gym(1), gym(2), gym(3, place="park"), ("f", memory("I", "workout", memory_type="fact")),
                  consolidated("m1", "m2", "m3", "f"))
    (c,) = abstract_conclusions(state, new_id=lambda key: f"id:{key}")
    assert c.cluster_key == "subject:i|topic:workout"
    assert c.conclusion_id == "id:conclusion/subject:i|topic:workout/v1"
    assert c.source_memory_ids == ("m1", "m2", "m3") and (c.version, c.supersedes) == (1, None)
    assert c.conditions == ("place = gym",)  # 2 of 3 ≥ half; "park" is 1 of 3
    assert c.confidence == pytest.approx(3 / (3 + 2) * (2 / 3))
    assert c.statement.startswith("I · workout · weights (recurring: 3 events, 2024-05-02 to 2024-05-04")
    assert abstract_conclusions(graph(gym(1), gym(2), consolidated("m1", "m2"))) == []  # 2 < 3 members
    assert abstract_conclusions(graph(gym(1), gym(2), gym(3))) == []  # still staged


def test_a_changed_cluster_gets_a_new_version_that_supersedes_and_an_unchanged_one_gets_none():
    first = [gym(1), gym(2), gym(3), consolidated("m1", "m2", "m3")]
    (v1,) = abstract_conclusions(graph(*first), new_id=lambda key: "c1")
    state = graph(*first, ("c1", v1), gym(4), consolidated("m4"))
    assert abstract_conclusions(graph(*first, ("c1", v1))) == []
    (v2,) = abstract_conclusions(state, new_id=lambda key: "c2")
    assert (v2.version, v2.supersedes, v2.source_memory_ids) == (2, "c1", ("m1", "m2", "m3", "m4"))
    assert abstract_conclusions(graph(*first, ("c1", v1), gym(4), consolidated("m4"), ("c2", v2))) == []


# -- decay ---------------------------------------------------------------------------


def test_decay_archives_only_consolidated_memories_below_the_floor():
    state = graph(("old", memory("I", "snack", importance=0.3)), ("fact", memory("I", "name", memory_type="fact")),
                  ("new", memory("I", "tea", importance=0.3, at=T0 + timedelta(days=100))),
                  ("staged", memory("I", "cake", importance=0.3)), consolidated("old", "fact", "new"))
    now = T0 + timedelta(days=100)
    assert decay_value(state.memories["old"], now) == pytest.approx(0.3 * math.exp(-0.05 * 100))
    assert [(c.memory_id, c.status) for c in decay_updates(state, now)] == [("old", "archived")]


# -- the combined batch ---------------------------------------------------------------


def meals(user: str) -> GraphState:
    return graph(("m1", memory(user, "dinner", "rice", topic_vec=E0, minutes=0)),
                 ("m2", memory(user, "dinner", "rice", topic_vec=E0, at=T0 + timedelta(days=1))),
                 ("m3", memory(user, "supper", "rice", topic_vec=at_cosine(0.9), at=T0 + timedelta(days=2))),
                 ("m4", memory(user, "email", "work", topic_vec=E3, at=T0 + timedelta(days=2, minutes=20))),
                 consolidated("m1", "m2"), user_id=user)


def test_consolidate_merges_then_links_then_marks_then_abstracts_with_keyed_ids():
    state = meals("ann")
    before = state.canonical()
    events = consolidate(state, ["m3", "m4", "m1", "unknown"], new_id=lambda key: f"ann/{key}")
    assert state.canonical() == before  # pure: the input state is not touched
    kinds = [type(e).__name__ for _, e in events]
    assert kinds == ["GraphNodesMerged", "GraphEdgeLinked", "GraphEdgeLinked", "GraphEdgeLinked",
                     "GraphMemoriesConsolidated", "GraphConclusionRecorded"]
    ids = [eid for eid, _ in events]
    prefix = ids[0].split("/")[1]
    assert all(eid.startswith(f"ann/{prefix}/") for eid in ids) and len(set(ids)) == len(ids)
    merge, batch, conclusion = events[0][1], events[4][1], events[5][1]
    assert (merge.kept_node_id, merge.merged_node_ids, merge.merge_id) == ("topic:dinner", ("topic:supper",), ids[0])
    assert links([e for _, e in events[1:4]]) == [("m3", "m4", "close_in_time"), ("m2", "m3", "related"),
                                                  ("m1", "m3", "related")]
    assert batch.memory_ids == ("m3", "m4") and batch.batch_id == ids[4]
    # the merge made "supper" a "dinner": three dinners form a cluster
    assert conclusion.source_memory_ids == ("m1", "m2", "m3")
    assert consolidate(state, ["m3", "m4"], new_id=lambda key: f"ann/{key}") == events


def test_consolidate_is_idempotent_once_its_events_are_applied():
    state = meals("ann")
    events = consolidate(state, ["m3", "m4"], new_id=lambda key: f"ann/{key}")
    after = graph(*events, state=state, user_id="ann")
    assert consolidate(after, ["m3", "m4"]) == []
    assert abstract_conclusions(after) == [] and dedup_nodes(after) == []


def test_disjoint_users_give_the_same_events_in_any_order_and_in_parallel():
    users = {"ann": meals("ann"), "bob": graph(("m1", memory("bob", "tea", topic_vec=E1)),
                                               ("m2", memory("bob", "chai", topic_vec=at_cosine(0.97, E2)))),
             "cy": meals("cy")}

    def run(user: str) -> list:
        return consolidate(users[user], ["m1", "m2", "m3", "m4"], new_id=lambda key: f"{user}/{key}",
                           now=T0 + timedelta(days=400))

    forward = {u: run(u) for u in ["ann", "bob", "cy"]}
    backward = {u: run(u) for u in ["cy", "bob", "ann"]}
    with ThreadPoolExecutor(max_workers=3) as pool:
        parallel = dict(zip(users, pool.map(run, users), strict=True))
    assert forward == backward == parallel
    assert all(forward[u] for u in users)
    assert any(isinstance(e, GraphMemoryStatusChanged) for _, e in forward["ann"])  # decay ran on a year-old batch
    assert [e.conclusion_id for _, e in forward["ann"] if isinstance(e, GraphConclusionRecorded)] == \
           [eid for eid, e in forward["ann"] if isinstance(e, GraphConclusionRecorded)]


def test_bad_configs_are_rejected_with_the_fields_named():
    with pytest.raises(InvalidInputError, match="merge_above"):
        ConsolidationConfig(merge_above=0.8, candidate_above=0.85)
    with pytest.raises(InvalidInputError, match="abstraction_min_members"):
        ConsolidationConfig(abstraction_min_members=1)
