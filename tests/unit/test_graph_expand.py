"""The fused ranking's graph term: expansion from the best hits over linked edges, and the lift it gives."""

from __future__ import annotations

from dataclasses import replace

import pytest

from events.graph_events import GraphEdgeLinked, GraphMemoryStatusChanged
from projections.folds.state import ShardState, fold
from projections.queries.graph_expand import expand_hits, message_memories
from projections.queries.retrieval import DEFAULT_FUSION, fuse
from tests.builders import STAGES_OFF, T0, message, stream
from tests.graph_builders import graph, memory


def link(eid: str, source: str, target: str, relation: str = "related") -> tuple[str, GraphEdgeLinked]:
    return eid, GraphEdgeLinked(source_id=source, target_id=target, relation_type="reference", relation=relation,
                                occurred_at=T0, reason="share a topic", discovered_by="consolidation")


CHAIN = [
    ("g1", memory("Mel", "camp", "mountains", turn="t1")),
    ("g2", memory("Mel", "camp", "beach", turn="t2")),
    ("g3", memory("Mel", "camp", "forest", turn="t3")),
    ("g4", memory("Mel", "paint", "sunset", turn="t4")),
    ("g5", memory("Mel", "paint", "lake", turn="t5")),  # shares nothing linked; shares "paint" with g4
    link("l1", "g1", "g2"),
    link("l2", "g2", "g3", "close_in_time"),
]


def test_turns_one_linked_hop_from_the_seed_turns_are_reached_and_the_seeds_are_not():
    state = graph(*CHAIN)
    reached = expand_hits(state, ["msg-t1"], depth=1)
    assert set(reached) == {"msg-t2"}
    r = reached["msg-t2"]
    assert (r.distance, r.graph_memory, r.seed_message, r.via) == (1, "g2", "msg-t1", ("reference:related",))
    assert set(expand_hits(state, ["msg-t1"], depth=2)) == {"msg-t2", "msg-t3"}
    assert set(expand_hits(state, ["msg-t1", "msg-t2"], depth=1)) == {"msg-t3"}  # a seed turn is never "reached"


def test_depth_zero_unknown_seeds_and_shared_nodes():
    state = graph(*CHAIN)
    assert expand_hits(state, ["msg-t1"], depth=0) == {}
    assert expand_hits(state, ["no-such-message"], depth=2) == {}
    assert expand_hits(state, ["msg-t4"], depth=1) == {}  # linked edges only by default
    shared = expand_hits(state, ["msg-t4"], depth=1, shared=True)
    assert set(shared) == {"msg-t5"} and shared["msg-t5"].via == ("shared_node:paint",)


def test_inactive_memories_are_neither_seeds_nor_hops():
    state = graph(*CHAIN, ("s1", GraphMemoryStatusChanged(memory_id="g2", status="archived", reason="decayed")))
    assert "msg-t2" not in message_memories(state)
    assert expand_hits(state, ["msg-t1"], depth=2) == {}


def _user(with_links: bool):
    texts = {"t1": "We camped in the mountains last week", "t2": "Another trip, this time the beach",
             "t3": "Mountains are cold at night", "t4": "I painted a sunset"}
    events = [(f"msg-{t}", message(text, f"c-{t}", turn_id=t)) for t, text in texts.items()]
    events += [(gid, ev) for gid, ev in CHAIN[:4]]
    if with_links:
        events.append(link("l1", "g1", "g2"))
    return fold(ShardState(), stream(*events)).user("acme", "alice")


def test_fuse_lifts_a_candidate_the_graph_reaches_from_the_best_hit():
    dense = [("msg-t1", 0.6), ("msg-t3", 0.5), ("msg-t4", 0.4), ("msg-t2", 0.3)]
    deep = replace(DEFAULT_FUSION, graph_mode="deep", graph_seeds=1, **STAGES_OFF)

    without = [h.memory_id for h in fuse(_user(with_links=False), "where did we camp?", dense, 4, deep)]
    hits = fuse(_user(with_links=True), "where did we camp?", dense, 4, deep)

    assert without.index("msg-t2") > without.index("msg-t3")
    assert [h.memory_id for h in hits][:2] == ["msg-t1", "msg-t2"]
    b = hits[1].breakdown
    assert (b["graph_rank"], b["graph_distance"], b["graph_memory"], b["graph_seed"]) == (1, 1, "g2", "msg-t1")
    assert b["graph_via"] == ["reference:related"]
    assert b["rrf"] == pytest.approx(hits[1].score, abs=1e-8)


def test_graph_weight_zero_and_fast_mode_switch_the_term_off():
    dense = [("msg-t1", 0.6), ("msg-t3", 0.5), ("msg-t4", 0.4), ("msg-t2", 0.3)]
    user = _user(with_links=True)
    for config in (replace(DEFAULT_FUSION, graph_weight=0.0), replace(DEFAULT_FUSION, graph_mode="fast")):
        hits = fuse(user, "where did we camp?", dense, 4, config)
        assert not any("graph_rank" in h.breakdown for h in hits)
