"""Working memory (M2, 7 ± 2 with rehearsal-count eviction) and the sensory buffer (M1, TTL) of seed 003."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from events.envelope import PendingEvent, seal
from events.errors import InvalidInputError
from projections.folds.working import (
    DEFAULT_WORKING,
    WorkingConfig,
    WorkingConfigMismatchError,
    WorkingState,
    fold,
    sensory_buffer,
    working_memory,
)
from tests.builders import T0, message, touch

FIVE = WorkingConfig(capacity=5)


def sec(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def said(i: int, second: float | None = None, conversation_id: str = "conv-1") -> tuple[float, str, object]:
    second = float(i) if second is None else second
    return (second, f"m{i}", message(f"turn {i}", f"c{i}", conversation_id=conversation_id, occurred_at=sec(second)))


def rehearsed(second: float, *ids: str, reason: str = "context") -> tuple[float, str, object]:
    return (second, f"t{second:g}-{'-'.join(ids)}", touch(*ids, reason=reason))


def project(*items, config: WorkingConfig = DEFAULT_WORKING) -> WorkingState:
    envs = [seal(PendingEvent("acme", "alice", eid, ev), n + 1, sec(s)) for n, (s, eid, ev) in enumerate(items)]
    return fold(WorkingState(), envs, config)


def held(state: WorkingState, conversation_id: str = "conv-1") -> list[str]:
    return [i.memory_id for i in working_memory(state, conversation_id)]


# -- config ------------------------------------------------------------------------------


@pytest.mark.parametrize("capacity", [4, 10, 0])
def test_capacity_outside_seven_plus_minus_two_is_refused(capacity):
    with pytest.raises(ValueError, match=r"capacity.*from 5 to 9"):
        WorkingConfig(capacity=capacity)


@pytest.mark.parametrize("capacity", [5, 7, 9])
def test_capacity_within_seven_plus_minus_two_is_accepted(capacity):
    assert WorkingConfig(capacity=capacity).capacity == capacity


def test_bad_ttl_and_reasons_are_refused():
    with pytest.raises(InvalidInputError, match="ttl_seconds"):
        WorkingConfig(ttl_seconds=0)
    with pytest.raises(InvalidInputError, match="rehearsal_reasons"):
        WorkingConfig(rehearsal_reasons=("glance",))


def test_defaults():
    assert (DEFAULT_WORKING.capacity, DEFAULT_WORKING.ttl_seconds) == (7, 30.0)


# -- working memory -------------------------------------------------------------------------


def test_without_rehearsal_the_oldest_item_leaves_first():
    state = project(*(said(i) for i in range(9)))
    assert held(state) == ["m2", "m3", "m4", "m5", "m6", "m7", "m8"]


def test_rehearsed_items_stay_and_the_least_rehearsed_leaves():
    state = project(*(said(i) for i in range(5)),
                    rehearsed(5, "m0", "m1"), rehearsed(6, "m0"), rehearsed(7, "m2", "m2"),  # m2 once per event
                    said(8), said(9), config=FIVE)
    # rehearsals: m0 2, m1 1, m2 1, m3 0, m4 0. m8 evicts m3 (0, oldest); m9 evicts m4 (0).
    assert held(state) == ["m0", "m1", "m2", "m8", "m9"]
    assert [i.rehearsals for i in working_memory(state, "conv-1")] == [2, 1, 1, 0, 0]
    # The next message: m8 and m9 tie at 0 rehearsals; m8 entered first and leaves.
    state = project(*(said(i) for i in range(5)), rehearsed(5, "m0", "m1"), rehearsed(6, "m0"),
                    rehearsed(7, "m2", "m2"), said(8), said(9), said(10), config=FIVE)
    assert held(state) == ["m0", "m1", "m2", "m9", "m10"]


def test_the_newcomer_enters_even_when_everything_else_is_rehearsed():
    state = project(*(said(i) for i in range(5)), rehearsed(5, "m0", "m1", "m2", "m3", "m4"),
                    rehearsed(6, "m4"), said(7), config=FIVE)
    assert held(state) == ["m1", "m2", "m3", "m4", "m7"]


def test_conversations_have_separate_working_memories():
    state = project(*(said(i, conversation_id="a") for i in range(6)), said(6, conversation_id="b"), config=FIVE)
    assert held(state, "a") == ["m1", "m2", "m3", "m4", "m5"]
    assert held(state, "b") == ["m6"]
    assert held(state, "nope") == []


def test_touches_of_evicted_items_and_other_reasons_do_nothing():
    only_used = WorkingConfig(capacity=5, rehearsal_reasons=("used",))
    state = project(*(said(i) for i in range(6)), rehearsed(6, "m0", "m1"), rehearsed(7, "m2", reason="search_hit"),
                    config=only_used)
    assert [(i.memory_id, i.rehearsals) for i in working_memory(state, "conv-1")] == [
        ("m1", 0), ("m2", 0), ("m3", 0), ("m4", 0), ("m5", 0)]


# -- sensory buffer ---------------------------------------------------------------------------


def test_sensory_buffer_keeps_messages_younger_than_the_ttl():
    state = project(said(0, 0), said(1, 12), said(2, 25), said(3, 40))
    assert [s.memory_id for s in sensory_buffer(state, sec(40))] == ["m1", "m2", "m3"]  # m0 is 40 s old
    assert [s.memory_id for s in sensory_buffer(state, sec(54.5))] == ["m2", "m3"]
    assert [s.memory_id for s in sensory_buffer(state, sec(55))] == ["m3"]  # m2 expires at exactly 25 + 30
    assert sensory_buffer(state, sec(70)) == ()  # m3 too, at 40 + 30


def test_sensory_buffer_uses_the_configured_ttl_and_filters_by_conversation():
    state = project(said(0, 0, "a"), said(1, 4, "b"), said(2, 8, "a"), config=WorkingConfig(ttl_seconds=5))
    assert [s.memory_id for s in sensory_buffer(state, sec(8))] == ["m1", "m2"]
    assert [s.memory_id for s in sensory_buffer(state, sec(8), conversation_id="a")] == ["m2"]


def test_the_fold_forgets_expired_sensory_items():
    state = project(said(0, 0), said(1, 20), said(2, 45))
    # At the latest message (45 s) everything from 15 s or earlier has expired for any later "now".
    assert [s.memory_id for s in state.sensory] == ["m1", "m2"]
    assert [s.memory_id for s in project(said(0, 0), said(1, 15), said(2, 45)).sensory] == ["m2"]


def test_sensory_buffer_needs_an_aware_now():
    with pytest.raises(ValueError, match="timezone-aware"):
        sensory_buffer(WorkingState(), datetime(2024, 5, 1, 9, 0))


# -- determinism --------------------------------------------------------------------------------


def test_fold_is_deterministic_resumable_and_config_bound():
    items = [*(said(i) for i in range(6)), rehearsed(6, "m3"), said(7, 40), said(8, 41, "b"), rehearsed(42, "m8")]
    envs = [seal(PendingEvent("acme", "alice", eid, ev), n + 1, sec(s)) for n, (s, eid, ev) in enumerate(items)]
    whole = fold(WorkingState(), envs, FIVE).canonical()
    for k in range(len(envs) + 1):
        assert fold(fold(WorkingState(), envs[:k], FIVE), envs[k:], FIVE).canonical() == whole
    assert whole != fold(WorkingState(), envs, DEFAULT_WORKING).canonical()
    with pytest.raises(WorkingConfigMismatchError, match="re-project"):
        fold(fold(WorkingState(), envs[:3], FIVE), envs[3:], DEFAULT_WORKING)
