"""Retention fold and queries: numbers against hand-computed values, reinforcement, exemption, seed rules."""

from __future__ import annotations

import math
from datetime import datetime

import pytest

from events.model import MemoryRestored
from projections.folds.policy import DEFAULT_POLICY, SEED_000_STABILITY_DAYS, CategoryRule, RetentionPolicy
from projections.folds.retention import (
    PolicyMismatchError,
    RetentionState,
    archival_candidates,
    fold,
    retention,
    retention_scores,
    retention_table,
)
from tests.retention_builders import classified, day, remembered, timeline, touch

NO_BONUS = DEFAULT_POLICY.replace(name="no-bonus", access_bonus_weight=0.0)


def project(*entries, policy: RetentionPolicy = DEFAULT_POLICY) -> RetentionState:
    return fold(RetentionState(), timeline(*entries), policy)


def typed(memory_type: str, at: float = 0.0, mid: str = "m1", **metadata) -> list[tuple]:
    """A message on day ``at`` and its classification."""
    return [(at, mid, remembered(f"text {mid}", f"c-{mid}", at=at, **metadata)), (at, f"k-{mid}", classified(mid, memory_type))]


def r(state: RetentionState, mid: str, at: float, policy: RetentionPolicy = DEFAULT_POLICY) -> float:
    return retention(state.items[mid], day(at), policy)


# -- the curve ----------------------------------------------------------------


def test_decision_untouched_for_45_days_keeps_e_to_the_minus_half():
    state = project(*typed("decision"))
    assert r(state, "m1", 45) == pytest.approx(math.exp(-0.5))


@pytest.mark.parametrize("memory_type", sorted(SEED_000_STABILITY_DAYS))
def test_every_type_keeps_one_over_e_after_one_stability_period(memory_type):
    stability = SEED_000_STABILITY_DAYS[memory_type]
    state = project(*typed(memory_type))
    assert state.items["m1"].stability == stability
    assert r(state, "m1", stability) == pytest.approx(math.exp(-1))
    assert r(state, "m1", 0) == pytest.approx(1.0)


def test_unclassified_message_decays_as_unknown_with_14_days():
    state = project((0, "m1", remembered("hello there", "c1")))
    assert state.items["m1"].memory_type == "unknown"
    assert r(state, "m1", 14) == pytest.approx(math.exp(-1))


def test_seed_002_stabilities_for_preference_and_fact():
    assert SEED_000_STABILITY_DAYS["preference"] == 90.0
    assert SEED_000_STABILITY_DAYS["fact"] == 100.0  # seed 001: λ_fact = 0.01 / day


def test_now_before_creation_counts_as_no_time_passed_and_naive_now_is_rejected():
    state = project(*typed("error", at=10))
    assert r(state, "m1", 5) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="timezone-aware"):
        retention(state.items["m1"], datetime(2024, 6, 1), DEFAULT_POLICY)


# -- reinforcement ------------------------------------------------------------


def test_counted_touch_resets_delta_t_and_multiplies_stability_by_1_3():
    state = project(*typed("decision"), (30, "t1", touch("m1", reason="context")), policy=NO_BONUS)
    item = state.items["m1"]
    assert (item.access_count, item.last_access, item.stability) == (1, day(30), pytest.approx(117.0))
    assert r(state, "m1", 75, NO_BONUS) == pytest.approx(math.exp(-45 / 117))


def test_used_touches_count_and_compound():
    state = project(*typed("decision"), (10, "t1", touch("m1", reason="context")), (20, "t2", touch("m1", reason="used")))
    item = state.items["m1"]
    assert item.stability == pytest.approx(90 * 1.3**2)
    assert r(state, "m1", 20 + 90 * 1.69) == pytest.approx(math.exp(-1) * (1 + math.log(3)))


def test_a_memory_touched_thousands_of_times_keeps_a_finite_stability_in_both_folds():
    # 1.3 ** 2706 overflows a float: the fold raised OverflowError and the shard's writes stopped (found by a
    # benchmark that asked every question through four systems).
    from projections.folds.policy import STABILITY_CEILING_DAYS
    from projections.folds.state import ShardState, fold as shard_fold

    log = timeline(*typed("decision"), *[(1 + i / 1000, f"t{i}", touch("m1", reason="context")) for i in range(3000)])
    for item in (fold(RetentionState(), log, DEFAULT_POLICY).items["m1"],
                 shard_fold(ShardState(), log).users[("acme", "alice")].retention.items["m1"]):
        assert item.access_count == 3000 and item.stability == STABILITY_CEILING_DAYS
        assert retention(item, day(10_000), NO_BONUS) == 1.0
    row = retention_table(project(*typed("decision"), *[(1, f"t{i}", touch("m1", reason="used")) for i in range(2706)]),
                          day(5), NO_BONUS)[0]
    assert row.stability == STABILITY_CEILING_DAYS and row.retention == 1.0
    assert DEFAULT_POLICY.reinforced_stability("decision", 1) == pytest.approx(117.0)


def test_search_hit_is_recorded_but_does_not_reinforce_by_default():
    touched = project(*typed("decision"), (30, "t1", touch("m1", reason="search_hit")))
    untouched = project(*typed("decision"))
    item = touched.items["m1"]
    assert (item.access_count, item.last_access, item.stability, item.ignored_touches) == (0, None, 90.0, 1)
    assert r(touched, "m1", 45) == r(untouched, "m1", 45) == pytest.approx(math.exp(-0.5))


def test_search_hit_reinforces_when_the_policy_counts_it():
    policy = NO_BONUS.replace(reinforcing_reasons=("search_hit", "context", "used"))
    state = project(*typed("decision"), (30, "t1", touch("m1", reason="search_hit")), policy=policy)
    assert state.items["m1"].stability == pytest.approx(117.0)
    assert r(state, "m1", 75, policy) == pytest.approx(math.exp(-45 / 117))


def test_one_touch_event_reinforces_each_memory_once_and_ignores_unknown_ids():
    state = project(*typed("question"), (1, "t1", touch("m1", "m1", "note-9", reason="used")))
    assert state.items["m1"].access_count == 1
    assert set(state.items) == {"m1"}


def test_classification_after_touches_gives_the_same_stability_as_before():
    first = project(*typed("code"), (5, "t1", touch("m1", reason="used")))
    late = project((0, "m1", remembered("text m1", "c-m1")), (5, "t1", touch("m1", reason="used")),
                   (6, "k-m1", classified("m1", "code")))
    assert late.items["m1"].stability == first.items["m1"].stability == pytest.approx(60 * 1.3)


# -- access bonus and exemption -------------------------------------------------


def test_access_bonus_is_one_plus_log_one_plus_access_count():
    touches = [(1 + i, f"t{i}", touch("m1", reason="context")) for i in range(3)]
    with_bonus = project(*typed("config"), *touches)
    without = project(*typed("config"), *touches, policy=NO_BONUS)
    ratio = r(with_bonus, "m1", 50) / r(without, "m1", 50, NO_BONUS)
    assert ratio == pytest.approx(1 + math.log(1 + 3))
    assert r(without, "m1", 3 + 120 * 1.3**3, NO_BONUS) == pytest.approx(math.exp(-1))


def test_half_weight_access_bonus():
    policy = DEFAULT_POLICY.replace(access_bonus_weight=0.5)
    state = project(*typed("error"), (0, "t1", touch("m1", reason="used")), policy=policy)
    assert r(state, "m1", 0, policy) == pytest.approx(1 + 0.5 * math.log(2))


@pytest.mark.parametrize("flag", ["exempt", "compression_exempt"])
def test_exempt_message_never_decays_and_is_never_archived(flag):
    state = project(*typed("chitchat", **{flag: True}))
    assert r(state, "m1", 3650) == 1.0
    assert archival_candidates(state, day(3650), DEFAULT_POLICY) == []


def test_exempt_type_never_decays():
    policy = DEFAULT_POLICY.replace(exempt_types=("config",))
    state = project(*typed("config"), *typed("chitchat", mid="m2"), policy=policy)
    assert r(state, "m1", 10_000, policy) == 1.0
    assert [row.memory_id for row in archival_candidates(state, day(10_000), policy)] == ["m2"]
    assert "type config is exempt" in retention_table(state, day(10_000), policy)[0].why


# -- archival ---------------------------------------------------------------


def test_a_touched_memory_outlives_an_untouched_one():
    state = project(*typed("chitchat", mid="a"), *typed("chitchat", mid="b"), (5, "t1", touch("b", reason="used")))
    assert r(state, "a", 10) == pytest.approx(math.exp(-10 / 3))  # 0.036 < 0.05
    assert r(state, "b", 10) == pytest.approx(math.exp(-5 / 3.9) * (1 + math.log(2)))
    assert [row.memory_id for row in archival_candidates(state, day(10), DEFAULT_POLICY)] == ["a"]
    assert r(state, "b", 10) > DEFAULT_POLICY.archive_floor


def test_archival_candidates_are_the_items_below_the_floor_weakest_first():
    state = project(*typed("question", mid="q"), *typed("chitchat", mid="c"), *typed("error", mid="e"),
                    *typed("chitchat", at=1, mid="c2"))
    assert [row.memory_id for row in archival_candidates(state, day(30), DEFAULT_POLICY)] == ["c", "c2", "q"]
    assert archival_candidates(state, day(5), DEFAULT_POLICY) == []
    assert retention_scores(state, day(30), DEFAULT_POLICY)["e"] == pytest.approx(math.exp(-1))


def test_retention_table_explains_each_item_in_log_order():
    state = project(*typed("decision"), *typed("chitchat", mid="m2"), (30, "t1", touch("m1", reason="context")),
                    (31, "t2", touch("m2")))
    rows = retention_table(state, day(60), NO_BONUS)
    assert [row.memory_id for row in rows] == ["m1", "m2"]
    first, second = rows
    assert (first.stability, first.delta_days, first.age_days, first.access_count) == (
        pytest.approx(117.0), 30.0, 60.0, 1)
    assert "S = 90 d × 1.3^1 = 117 d" in first.why and "since last access" in first.why
    assert "kept" in first.why
    assert second.ignored_touches == 1 and second.archive
    assert "since creation" in second.why and "archive: R < floor 0.05" in second.why


# -- policies and re-projection -------------------------------------------------

LOG = [*typed("chitchat", mid="c"), *typed("decision", mid="d"), (2, "t1", touch("c", reason="search_hit"))]
GENEROUS = DEFAULT_POLICY.replace(
    name="generous", reinforcing_reasons=("search_hit", "context", "used"), stability_days={"chitchat": 10.0}
)


def test_the_same_log_under_two_policies_gives_the_two_expected_projections():
    envs = timeline(*LOG)
    default_state = fold(RetentionState(), envs, DEFAULT_POLICY)
    generous_state = fold(RetentionState(), envs, GENEROUS)  # re-projection is this one line

    assert default_state.items["c"].stability == 3.0 and default_state.items["c"].access_count == 0
    assert generous_state.items["c"].stability == pytest.approx(13.0) and generous_state.items["c"].access_count == 1
    at = day(20)
    assert [row.memory_id for row in archival_candidates(default_state, at, DEFAULT_POLICY)] == ["c"]
    assert archival_candidates(generous_state, at, GENEROUS) == []
    assert retention(generous_state.items["c"], at, GENEROUS) == pytest.approx(math.exp(-18 / 13) * (1 + math.log(2)))
    assert retention(default_state.items["d"], at, DEFAULT_POLICY) == retention(generous_state.items["d"], at, GENEROUS)


def test_a_state_refuses_a_policy_it_was_not_folded_with():
    state = fold(RetentionState(), timeline(*LOG), DEFAULT_POLICY)
    with pytest.raises(PolicyMismatchError, match="re-project"):
        retention_table(state, day(1), GENEROUS)
    with pytest.raises(PolicyMismatchError):
        fold(state, timeline((3, "t9", touch("c", reason="used"))), GENEROUS)
    query_only = DEFAULT_POLICY.replace(name="strict", archive_floor=0.5, access_bonus_weight=0.0)
    assert query_only.digest() != DEFAULT_POLICY.digest()
    assert query_only.fold_digest() == DEFAULT_POLICY.fold_digest()
    # the floor and the bonus are read at query time: the same state answers without re-folding
    assert [row.memory_id for row in archival_candidates(state, day(3), query_only)] == ["c"]


def test_fold_is_deterministic_and_respects_log_order():
    envs = timeline(*LOG, (3, "t2", touch("d", reason="used")), (4, "k2", classified("d", "config")))
    once = fold(RetentionState(), envs, DEFAULT_POLICY)
    again = fold(RetentionState(), envs, DEFAULT_POLICY)
    assert once.canonical() == again.canonical()
    for cut in range(len(envs) + 1):
        split = fold(fold(RetentionState(), envs[:cut], DEFAULT_POLICY), envs[cut:], DEFAULT_POLICY)
        assert split.canonical() == once.canonical()
    # the last classification in log order wins
    assert once.items["d"].memory_type == "config" and once.items["d"].stability == pytest.approx(120 * 1.3)
    swapped = project(*typed("config", mid="d"), (1, "k2", classified("d", "decision")))
    assert swapped.items["d"].memory_type == "decision"


# -- seed 000 Feature 1 acceptance tests, adapted --------------------------------


def test_seed_000_dynamic_score_decays_over_time():
    """A chitchat message scored 10 keeps less than 1 after 30 days (10 · e^(−10))."""
    policy = DEFAULT_POLICY.replace(name="tfidf-10", base_retention=10.0)
    state = project(*typed("chitchat", compression_exempt=False), policy=policy)
    score = r(state, "m1", 30, policy)
    assert score < 1.0
    assert score == pytest.approx(10 * math.exp(-10))


def test_seed_000_touch_resets_decay():
    """A touch (the memory was put into a context) never lowers the score, and here raises it."""
    before_state = project(*typed("unknown"))
    after_state = project(*typed("unknown"), (20, "t1", touch("m1", reason="context")))
    score_before = r(before_state, "m1", 20)
    score_after = r(after_state, "m1", 20)
    assert score_after >= score_before
    assert score_after == pytest.approx(1 + math.log(2))


# -- time travel: a query at ``now`` sees only what had happened by then ------------


def test_retention_at_a_time_before_a_touch_ignores_the_touch():
    state = project(*typed("decision"), (30, "t1", touch("m1", reason="context")), policy=NO_BONUS)
    before = {row.memory_id: row for row in retention_table(state, day(20), NO_BONUS)}["m1"]
    assert (before.access_count, before.stability) == (0, 90.0)
    assert before.retention == pytest.approx(math.exp(-20 / 90))
    after = {row.memory_id: row for row in retention_table(state, day(40), NO_BONUS)}["m1"]
    assert (after.access_count, after.stability) == (1, pytest.approx(117.0))
    assert after.retention == pytest.approx(math.exp(-10 / 117))


def test_retention_at_a_time_before_creation_omits_the_memory():
    state = project(*typed("decision"), (5, "m2", remembered("later", "c2", at=5)))
    assert [row.memory_id for row in retention_table(state, day(3), DEFAULT_POLICY)] == ["m1"]
    assert set(retention_scores(state, day(3), DEFAULT_POLICY)) == {"m1"}
    assert set(retention_scores(state, day(3), DEFAULT_POLICY, ["m1", "m2", "nope"])) == {"m1"}


RULED = DEFAULT_POLICY.replace(name="ruled", exempt_types=("preference",), categories={
    "episode": CategoryRule(multiplier=0.5, after_days=5.0, every_days=7.0), "core": CategoryRule(decays=False)})


@pytest.mark.parametrize("policy", [DEFAULT_POLICY, NO_BONUS, RULED], ids=["default", "no-bonus", "ruled"])
def test_the_rankings_retention_scores_equal_retention_of_the_item_as_it_was(policy):
    from projections.folds.retention import as_of

    entries = [*typed("decision"), *typed("chitchat", at=2, mid="m2", category="episode"),
               *typed("preference", at=4, mid="m3"), *typed("fact", at=5, mid="m4", category="core")]
    entries += [(d, f"t{d}", touch("m1" if d % 2 else "m2", reason="context")) for d in (6, 9, 13, 20, 31)]
    entries += [(25, "t25", touch("m3", reason="search_hit"))]
    state = project(*entries, policy=policy)
    for at in (0, 1, 3, 6, 7, 12.5, 20, 26, 31, 60):
        expected = {}
        for mid, item in state.items.items():
            past = as_of(item, day(at), policy)
            if past is not None:
                expected[mid] = retention(past, day(at), policy)
        assert retention_scores(state, day(at), policy, list(state.items)) == expected  # exactly, not approx


def test_the_rankings_retention_scores_follow_new_touches_and_other_time_zones_exactly():
    """The per-item figures :func:`retention_scores` keeps between queries follow the state as touches replace
    items, and a ``now`` in another time zone (or with microseconds) gives the same floats as :func:`retention`."""
    from datetime import timedelta, timezone

    from projections.folds.retention import as_of, evolve

    later = [(d, f"u{d}", touch("m1" if d % 3 else "m2", reason="context")) for d in (40, 44.25, 51)]
    log = timeline(*typed("decision"), *typed("chitchat", at=2, mid="m2"), (6, "t6", touch("m1", reason="context")),
                   *later)
    state = fold(RetentionState(), log[:5], DEFAULT_POLICY)
    east = timezone(timedelta(hours=5, minutes=30))
    nows = [day(at).astimezone(east) + timedelta(microseconds=us) for at in (3, 6, 39.5, 45, 70) for us in (0, 7)]
    for step in range(5, len(log) + 1):
        if step > 5:
            evolve(state, log[step - 1], DEFAULT_POLICY)
        for now in nows:
            expected = {mid: retention(past, now, DEFAULT_POLICY) for mid, item in state.items.items()
                        if (past := as_of(item, now, DEFAULT_POLICY)) is not None}
            assert retention_scores(state, now, DEFAULT_POLICY, list(state.items)) == expected
    assert state.items["m1"].access_count == 3 and state.items["m2"].access_count == 1


def test_the_figures_kept_for_the_rankings_retention_scores_go_with_their_state():
    import gc

    from projections.folds import retention as module

    state = project(*typed("decision"), (6, "t6", touch("m1", reason="context")))
    before = module.as_of(state.items["m1"], day(3), DEFAULT_POLICY)
    assert retention_scores(state, day(3), DEFAULT_POLICY, ["m1"]) == {"m1": retention(before, day(3), DEFAULT_POLICY)}
    key = id(state)
    assert key in module._PREPARED
    del state
    gc.collect()
    assert key not in module._PREPARED


def test_restoring_from_the_archive_counts_as_an_access():
    restored = MemoryRestored(memory_ids=("m1",), at=day(50), reason="asked for it")
    state = project(*typed("decision"), (50, "r1", restored), policy=NO_BONUS)
    item = state.items["m1"]
    assert (item.access_count, item.last_access, item.accesses) == (1, day(50), (day(50),))
    assert r(state, "m1", 50, NO_BONUS) == pytest.approx(1.0)
