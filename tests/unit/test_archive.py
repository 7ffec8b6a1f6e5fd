"""Archive projection and its effect on retrieval: archived memories leave default search, stay findable."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest

from events.model import MemoryArchived, MemoryRestored
from projections.folds.policy import DEFAULT_POLICY
from projections.folds.state import ShardState, digest, fold
from projections.queries.retrieval import FusionConfig, fuse
from tests.builders import STAGES_OFF, T0, embedding, message, stream, touch

NO_RETENTION = FusionConfig(retention_weight=0.0, episode_weight=0.0, **STAGES_OFF)


def archived(*ids: str, reason: str = "retention_floor", days: float = 30) -> MemoryArchived:
    return MemoryArchived(memory_ids=ids, reason=reason, at=T0 + timedelta(days=days), policy="default",
                          retentions=tuple(0.01 for _ in ids))


def base(*extra):
    return stream(
        ("m1", message("I adopted a puppy named Biscuit", "c1", turn_id="D1:1")),
        ("v1", embedding("m1", [1.0, 0.0])),
        ("m2", message("The puppy loves the beach", "c2", turn_id="D1:2")),
        ("v2", embedding("m2", [0.8, 0.6])),
        *extra,
    )


def test_an_archival_event_moves_memories_out_of_default_retrieval_only():
    memory = fold(ShardState(), base(("a1", archived("m1")))).user("acme", "alice")
    entry = memory.archive.archived["m1"]
    assert (entry.reason, entry.retention, entry.event_id) == ("retention_floor", 0.01, "a1")

    dense = [("m1", 0.99), ("m2", 0.8)]
    assert [h.memory_id for h in fuse(memory, "puppy", dense, 5, NO_RETENTION)] == ["m2"]
    in_archive = fuse(memory, "puppy", dense, 5, NO_RETENTION, scope="archive")
    assert [(h.memory_id, h.breakdown["archived"]) for h in in_archive] == [("m1", "retention_floor")]
    assert {h.memory_id for h in fuse(memory, "puppy", dense, 5, NO_RETENTION, scope="all")} == {"m1", "m2"}
    assert memory.messages.by_id["m1"].text == "I adopted a puppy named Biscuit"  # nothing was deleted


def test_restore_returns_a_memory_and_a_later_archival_counts_again():
    envs = base(("a1", archived("m1")), ("r1", MemoryRestored(memory_ids=("m1",), at=T0 + timedelta(days=31),
                                                                reason="asked")))
    memory = fold(ShardState(), envs).user("acme", "alice")
    assert not memory.archive.is_archived("m1") and memory.archive.restored == {"m1": 1}
    again = fold(ShardState(), [*envs, *stream(("a2", archived("m1", reason="manual", days=40)), first_seq=len(envs) + 1)])
    assert again.user("acme", "alice").archive.archived["m1"].reason == "manual"


def test_an_lfu_eviction_leaves_the_tier_but_not_default_retrieval():
    evicted = MemoryArchived(memory_ids=("m1", "m2"), reason="lfu_eviction", at=T0, policy="mid-term")
    memory = fold(ShardState(), base(("a1", evicted))).user("acme", "alice")
    assert [memory.archive.evicted[m].retention for m in ("m1", "m2")] == [None, None]
    assert not memory.archive.archived
    hits = fuse(memory, "puppy", [("m1", 0.99), ("m2", 0.8)], 5, NO_RETENTION)
    assert {h.memory_id for h in hits} == {"m1", "m2"}


def test_archival_is_part_of_the_replay_digest():
    assert digest(fold(ShardState(), base(("a1", archived("m1")))))["archive"] != digest(fold(ShardState(), base()))["archive"]


def test_retention_term_breaks_a_tie_in_favour_of_the_reinforced_memory():
    # Two memories equally relevant to the query (same dense and lexical ranks swapped) ...
    envs = base(("t1", touch("m2", reason="used")))
    memory = fold(ShardState(), envs).user("acme", "alice")
    dense = [("m1", 0.9), ("m2", 0.9)]
    config = FusionConfig(rrf_k=5, lexical_weight=1.0, episode_weight=0.0, retention_weight=0.1, **STAGES_OFF)
    now = T0 + timedelta(days=40)  # the touch was recorded on day 31
    plain = fuse(memory, "puppy", dense, 5, FusionConfig(rrf_k=5, lexical_weight=1.0, episode_weight=0.0,
                                                         retention_weight=0.0, **STAGES_OFF))
    assert plain[0].score == pytest.approx(plain[1].score)
    hits = fuse(memory, "puppy", dense, 5, config, now=now, policy=DEFAULT_POLICY)
    assert hits[0].memory_id == "m2"  # used on day 31: more retention than m1, untouched since day 0
    before_touch = fuse(memory, "puppy", dense, 5, config, now=T0 + timedelta(days=20), policy=DEFAULT_POLICY)
    assert before_touch[0].breakdown["retention"] == before_touch[1].breakdown["retention"]  # time travel
    r = {h.memory_id: h.breakdown["retention"] for h in hits}
    assert r["m2"] > r["m1"]
    assert hits[0].score - plain[[h.memory_id for h in plain].index("m2")].score == pytest.approx(
        0.1 * r["m2"] / 6, abs=1e-6)


def test_retention_term_needs_a_time_and_a_policy():
    memory = fold(ShardState(), base()).user("acme", "alice")
    hits = fuse(memory, "puppy", [("m1", 0.9)], 5, FusionConfig())
    assert all("retention" not in h.breakdown for h in hits)
    assert not math.isnan(hits[0].score)
