"""Memory tiers (seed 004): short-term FIFO, session joining, heat against hand-computed values, LFU eviction
to pending archival, distillation and its reset, and fold determinism.

Every envelope here is recorded at ``T0 + minutes`` and messages occur at that time, so each expected
last-access time and heat below is computed by hand from the minutes.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

import numpy as np
import pytest

from events.envelope import PendingEvent, seal
from events.errors import InvalidInputError
from events.model import MemoryArchived, ProfileDistilled
from projections.folds.tiers import (
    DEFAULT_TIERS,
    TierConfig,
    TierConfigMismatchError,
    TierState,
    fold,
    heat,
    jaccard,
    session_of,
    sessions,
    sessions_due_for_distillation,
    short_term,
    similarity,
)
from tests.builders import T0, embedding, message, touch

E1, E2, E3, E4 = np.eye(4)
A = np.array([1.0, 0.0, 0.1, 0.0]) / math.sqrt(1.01)
B = np.array([0.1, 1.0, 0.0, 0.0]) / math.sqrt(1.01)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def page(i: int, text: str, vector=None, minute: float | None = None, role: str = "user") -> list[tuple]:
    """Message m<i> at ``minute`` (default i), followed by its embedding e<i> when ``vector`` is given."""
    minute = float(i) if minute is None else minute
    items = [(minute, f"m{i}", message(text, f"c{i}", role=role, occurred_at=at(minute)))]
    if vector is not None:
        items.append((minute, f"e{i}", embedding(f"m{i}", vector)))
    return items


def log(*items):
    """Seal (minute, event id, event) triples as one stream, recorded at T0 + minute."""
    flat = [x for item in items for x in (item if isinstance(item, list) else [item])]
    return [seal(PendingEvent("acme", "alice", eid, ev), n + 1, at(m)) for n, (m, eid, ev) in enumerate(flat)]


def project(*items, config: TierConfig = DEFAULT_TIERS) -> TierState:
    return fold(TierState(), log(*items), config)


def distilled(minute: float, session_id: str, *page_ids: str, heat_value: float = 6.0) -> ProfileDistilled:
    return ProfileDistilled(session_id=session_id, page_ids=page_ids, heat=heat_value, at=at(minute),
                            distiller="rules-v1")


def archived(minute: float, *memory_ids: str, reason: str = "lfu_eviction") -> MemoryArchived:
    return MemoryArchived(memory_ids=memory_ids, reason=reason, at=at(minute), policy="mid_term")


def session_ids(state: TierState) -> list[str]:
    return [s.session_id for s in sessions(state)]


ONE = TierConfig(short_term_capacity=1)
TOPICS = ["PostgreSQL vacuum", "hiking trip to the Alps", "sourdough bread recipe", "garden tomatoes watering"]


# -- config ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [("short_term_capacity", 0), ("mid_term_capacity", 0), ("tau_hours", 0.0), ("heat_threshold", -1.0),
     ("alpha", -0.5), ("keyword_weight", float("nan")), ("page_roles", ("robot",)), ("visit_reasons", ("glance",))],
)
def test_config_rejects_bad_values_naming_the_field(field, value):
    with pytest.raises(InvalidInputError) as err:
        TierConfig(**{field: value})
    assert field in str(err.value)
    assert err.value.problems[0][0] == field


def test_defaults_follow_memoryos():
    c = DEFAULT_TIERS
    assert (c.short_term_capacity, c.session_similarity, c.keyword_weight, c.heat_threshold) == (10, 0.6, 1.0, 5.0)
    assert (c.alpha, c.beta, c.gamma, c.tau_hours, c.mid_term_capacity) == (1.0, 1.0, 1.0, 24.0, 50)


# -- short-term -----------------------------------------------------------------


def test_short_term_keeps_the_last_pages_in_fifo_order():
    state = project(*(page(i, f"turn {i}", E1) for i in range(5)), config=TierConfig(short_term_capacity=3))
    assert [p.page_id for p in short_term(state)] == ["m2", "m3", "m4"]
    assert [s.page_ids for s in sessions(state)] == [("m0", "m1")]  # both pushed, same vector → one session


def test_a_page_enters_short_term_when_its_embedding_is_recorded():
    state = project(page(0, "PostgreSQL vacuum")[0])
    assert short_term(state) == ()
    assert state.awaiting is not None and state.awaiting.page_id == "m0"
    state = project(*page(0, "PostgreSQL vacuum", E1))
    assert [p.page_id for p in short_term(state)] == ["m0"]
    assert np.allclose(short_term(state)[0].vector, E1)
    assert short_term(state)[0].keywords == ("postgresql", "vacuum")


def test_a_message_without_embedding_enters_vectorless_when_the_next_message_arrives():
    state = project(page(0, "PostgreSQL vacuum")[0], *page(1, "hiking trip", E2))
    assert [(p.page_id, p.vector is None) for p in short_term(state)] == [("m0", True), ("m1", False)]


def test_only_page_roles_become_pages():
    state = project(*page(0, "You are a helpful assistant", E1, role="system"), *page(1, "PostgreSQL vacuum", E1))
    assert [p.page_id for p in short_term(state)] == ["m1"]


# -- mid-term sessions ------------------------------------------------------------


def test_similar_page_joins_a_session_and_a_different_one_opens_a_new_session():
    state = project(*page(0, "PostgreSQL vacuum", A), *page(1, "hiking trip", A), *page(2, "sourdough bread", B),
                    *page(3, "garden tomatoes", B), config=ONE)
    # m1 pushed m0 at minute 1 (opens s-m0); m2 pushed m1 at minute 2: cos = 1 → joins; m3 pushed m2 at minute 3:
    # cos(B, A) = 0.1 / 1.01 ≈ 0.099, no shared keyword → 0.099 < 0.6 → opens s-m2.
    assert session_ids(state) == ["s-m0", "s-m2"]
    s0, s2 = sessions(state)
    assert s0.page_ids == ("m0", "m1") and s2.page_ids == ("m2",)
    assert (s0.created_at, s0.last_access, s2.last_access) == (at(1), at(2), at(3))
    assert similarity(short_term(state)[0], s0, ONE) == pytest.approx(0.1 / 1.01)
    assert np.allclose(s0.centroid, A)
    assert session_of(state, "m1") is s0 and session_of(state, "m3") is None


def test_keyword_jaccard_alone_can_join_pages_without_vectors():
    # Session keywords {postgresql, index, tun}; page {postgresql, index}: Jaccard 2/3 ≥ 0.6 → joins.
    state = project(page(0, "PostgreSQL index tuning")[0], page(1, "PostgreSQL index")[0],
                    page(2, "Kafka consumer lag")[0], page(3, "garden")[0], config=ONE)
    assert [s.page_ids for s in sessions(state)] == [("m0", "m1")]
    # Page {postgresql, vacuum} against {postgresql, index, tun}: Jaccard 1/4 < 0.6 → opens its own session.
    assert jaccard(("postgresql", "vacuum"), ("postgresql", "index", "tun")) == 0.25
    state = project(page(0, "PostgreSQL index tuning")[0], page(1, "PostgreSQL vacuum")[0],
                    page(2, "Kafka consumer lag")[0], page(3, "garden")[0], config=ONE)
    assert [s.page_ids for s in sessions(state)] == [("m0",), ("m1",)]


def test_a_page_equally_similar_to_two_sessions_joins_the_older():
    between = (E1 + E2) / math.sqrt(2)  # cos 0.707 to both s-m0 (E1) and s-m1 (E2)
    state = project(*page(0, TOPICS[0], E1), *page(1, TOPICS[1], E2), *page(2, TOPICS[2], between),
                    *page(3, TOPICS[3], E4), config=ONE)
    assert [s.page_ids for s in sessions(state)] == [("m0", "m2"), ("m1",)]


def test_a_higher_threshold_keeps_the_pages_apart():
    strict = TierConfig(short_term_capacity=1, session_similarity=1.5)
    state = project(*page(0, "PostgreSQL vacuum", A), *page(1, "hiking trip", A), *page(2, "bread", A), config=strict)
    assert session_ids(state) == ["s-m0", "s-m1"]  # cos 1 + Jaccard 0 = 1 < 1.5


# -- heat ---------------------------------------------------------------------------


def hot_session(*extra, config: TierConfig = ONE) -> TierState:
    """s-m0 holding m0, m1 (last access minute 2), visited by touches at minutes 10 and 20; m2 in short-term."""
    return project(*page(0, "PostgreSQL vacuum", A), *page(1, "vacuum tuning", A), *page(2, "garden", B),
                   (10, "t1", touch("m0", "m1")),  # two pages of one session: one visit
                   (20, "t2", touch("m1", "m2")),  # m2 is still short-term: no session to visit
                   *extra, config=config)


def test_touches_count_one_visit_per_session_per_event_and_move_the_last_access():
    (s,) = sessions(hot_session())
    assert (s.visits, s.access_count, s.interaction_length, s.last_access) == (2, 2, 2, at(20))


def test_heat_is_alpha_visits_plus_beta_length_plus_gamma_recency():
    (s,) = sessions(hot_session())
    assert heat(s, at(20), ONE) == pytest.approx(2 + 2 + 1)
    assert heat(s, at(20) + timedelta(hours=24), ONE) == pytest.approx(4 + math.exp(-1))
    assert heat(s, at(0), ONE) == pytest.approx(5.0)  # a "now" before the last access counts as Δt = 0
    weighted = TierConfig(short_term_capacity=1, alpha=2.0, beta=0.5, gamma=3.0, tau_hours=12.0)
    (w,) = sessions(hot_session(config=weighted))
    assert heat(w, at(20) + timedelta(hours=24), weighted) == pytest.approx(2 * 2 + 0.5 * 2 + 3 * math.exp(-2))


def test_heat_needs_an_aware_now():
    (s,) = sessions(hot_session())
    with pytest.raises(ValueError, match="timezone-aware"):
        heat(s, datetime(2024, 5, 1, 9, 0), ONE)


def test_touch_reasons_outside_the_config_do_not_visit():
    only_used = TierConfig(short_term_capacity=1, visit_reasons=("used",))
    (s,) = sessions(hot_session(config=only_used))
    assert (s.visits, s.last_access) == (0, at(2))


# -- LFU eviction ------------------------------------------------------------------


LFU = TierConfig(short_term_capacity=1, mid_term_capacity=2)


def evicting(*extra) -> TierState:
    """s-m0 (touched once), s-m1, then s-m2 opens: three sessions for two places."""
    return project(*page(0, TOPICS[0], E1), *page(1, TOPICS[1], E2), *page(2, TOPICS[2], E3),
                   (5, "t1", touch("m0")), *page(6, TOPICS[3], E4), *extra, config=LFU)


def test_lfu_eviction_moves_the_least_used_session_to_pending_archival():
    state = evicting()
    # s-m1 and s-m2 both have 0 accesses; s-m1's last access (minute 2) is older than s-m2's (minute 6).
    assert session_ids(state) == ["s-m0", "s-m2"]
    assert state.pending_archival == {"s-m1": ("m1",)}
    assert session_of(state, "m1") is None


def test_archival_event_with_exactly_the_pages_clears_pending():
    assert evicting((7, "a1", archived(7, "m1", reason="retention_floor"))).pending_archival == {"s-m1": ("m1",)}
    assert evicting((7, "a1", archived(7, "m1", "m0"))).pending_archival == {"s-m1": ("m1",)}
    state = evicting((7, "a1", archived(7, "m1")))
    assert state.pending_archival == {}
    assert state.archived == ["s-m1"]


def test_lfu_counts_lifetime_accesses_which_distillation_does_not_reset():
    state = project(*page(0, TOPICS[0], E1), *page(1, TOPICS[1], E2), *page(2, TOPICS[2], E3),
                    (3, "t1", touch("m0")), (4, "t2", touch("m0")), (5, "d1", distilled(5, "s-m0", "m0")),
                    (6, "t3", touch("m1")), *page(7, TOPICS[3], E4), config=LFU)
    # visits: s-m0 0 (reset at minute 5), s-m1 1, s-m2 0; lifetime accesses: 2, 1, 0 → s-m2 leaves.
    assert [(s.session_id, s.visits, s.access_count) for s in sessions(state)] == [("s-m0", 0, 2), ("s-m1", 1, 1)]
    assert state.pending_archival == {"s-m2": ("m2",)}


def test_an_evicted_page_is_no_longer_visited():
    state = evicting((7, "t2", touch("m1")))
    assert [s.access_count for s in sessions(state)] == [1, 0]


# -- distillation -------------------------------------------------------------------


def test_hot_session_is_due_with_its_unanalysed_pages():
    state = hot_session()
    (due,) = sessions_due_for_distillation(state, at(20), ONE)
    assert (due.session_id, due.page_ids, due.heat) == ("s-m0", ("m0", "m1"), pytest.approx(5.0))
    assert sessions_due_for_distillation(state, at(20) + timedelta(hours=1), ONE) == []  # 4 + e^(−1/24) < 5


def test_profile_distilled_marks_pages_analysed_and_resets_heat_contributors():
    state = hot_session((30, "d1", distilled(30, "s-m0", "m0", "m1")))
    (s,) = sessions(state)
    assert [p.analysed for p in s.pages] == [True, True]
    assert (s.visits, s.interaction_length, s.access_count, s.last_access) == (0, 0, 2, at(30))
    assert heat(s, at(30), ONE) == pytest.approx(1.0)  # only recency is left
    assert sessions_due_for_distillation(state, at(30), ONE) == []


def test_partial_distillation_leaves_the_rest_due_later():
    state = hot_session((30, "d1", distilled(30, "s-m0", "m0")))
    (s,) = sessions(state)
    assert (s.unanalysed_page_ids, s.interaction_length) == (("m1",), 1)
    touches = [(31 + k, f"t{k + 3}", touch("m1")) for k in range(3)]
    state = hot_session((30, "d1", distilled(30, "s-m0", "m0")), *touches)
    (due,) = sessions_due_for_distillation(state, at(33), ONE)
    assert (due.page_ids, due.heat) == (("m1",), pytest.approx(3 + 1 + 1))


def test_distillation_of_an_evicted_session_changes_nothing():
    before = evicting()
    after = evicting((7, "d1", distilled(7, "s-m1", "m1")))
    assert after.canonical() == before.canonical()


# -- determinism ----------------------------------------------------------------------


def full_log():
    return log(*page(0, TOPICS[0], E1), *page(1, "vacuum tuning", E1), *page(2, TOPICS[1], E2),
               (3, "t1", touch("m0")), *page(4, TOPICS[2], E3), page(5, TOPICS[3])[0], *page(6, "PostgreSQL", E1),
               (7, "d1", distilled(7, "s-m0", "m0", "m1")), *page(8, "bread recipe", E3), (9, "a1", archived(9, "m2")))


def test_fold_is_deterministic_and_resumable_at_every_split_point():
    envs = full_log()
    whole = fold(TierState(), envs, LFU).canonical()
    assert fold(TierState(), envs, LFU).canonical() == whole
    for k in range(len(envs) + 1):
        assert fold(fold(TierState(), envs[:k], LFU), envs[k:], LFU).canonical() == whole
    assert whole != fold(TierState(), envs, ONE).canonical()


def test_evolving_with_another_config_is_refused():
    state = fold(TierState(), full_log()[:2], ONE)
    with pytest.raises(TierConfigMismatchError, match="re-project"):
        fold(state, full_log()[2:], LFU)


def test_similarities_in_one_product_equal_the_one_by_one_similarity():
    """The fold scores a page against every active session at once; each score is :func:`similarity`'s."""
    from projections.folds.tiers import Page, Session, similarities

    rng = np.random.default_rng(7)
    config = DEFAULT_TIERS
    unit = lambda v: v / np.linalg.norm(v)  # noqa: E731
    sessions = [
        Session(f"s{i}", (), T0, T0, centroid=unit(rng.normal(size=8)) if i % 3 else None,
                keywords=tuple(rng.choice(["tea", "run", "cat", "jazz", "paris"], size=2, replace=False)))
        for i in range(12)
    ] + [Session("other-model", (), T0, T0, centroid=unit(rng.normal(size=4)), keywords=("tea",))]
    for vector in (unit(rng.normal(size=8)).astype(np.float32), None, np.full(8, np.nan, np.float32)):
        page = Page("p", 1, "c", "user", T0, ("tea", "jazz"), vector)
        got = similarities(page, sessions, config)
        want = [similarity(page, s, config) for s in sessions]
        assert got == pytest.approx([w if not math.isnan(w) else -math.inf for w in want], abs=1e-12)
        assert int(np.argmax(got)) == max(range(len(want)), key=lambda i: (got[i], -i))


def test_a_page_takes_the_key_terms_its_classification_recorded_not_todays_rules():
    """v2 logs record the key terms: the fold uses them even where today's rules would read others."""
    from events.model import MessageClassified

    recorded = page(0, "We adopted a puppy named Biscuit")[0]
    classified = (0.0, "k0", MessageClassified(message_event_id="m0", memory_type="fact", confidence=0.9,
                                               classifier="rules-v1", key_terms=("zebra", "biscuit")))
    state = project([recorded, classified, (0.0, "e0", embedding("m0", A))])
    [only] = short_term(state)
    assert only.keywords == ("zebra", "biscuit")


def test_a_v1_log_without_recorded_key_terms_reads_them_from_the_text_as_before():
    from events.model import MessageClassified
    from projections.rules.extraction import key_terms

    # v1 order (recorded, embedded, classified) and no key terms: the page is placed at its embedding.
    v1 = MessageClassified(message_event_id="m0", memory_type="fact", confidence=0.9, classifier="rules-v1")
    state = project([*page(0, "We adopted a puppy named Biscuit", A), (0.0, "k0", v1)])
    [only] = short_term(state)
    assert only.keywords == key_terms("We adopted a puppy named Biscuit") and only.keywords
    # ... and the same when no embedding ever comes (placed when the next message is recorded)
    state = project(page(0, "We adopted a puppy named Biscuit"), page(1, "ok"))
    assert short_term(state)[0].keywords == key_terms("We adopted a puppy named Biscuit")


def test_corrupt_vectors_fold_to_the_same_sessions_without_a_warning_one_by_one_and_as_a_run():
    import warnings

    from projections.folds.tiers import fold_run

    huge, inf, nan = np.full(8, 3e38, np.float32), np.array([np.inf, -np.inf] * 4, np.float32), np.full(8, np.nan)
    items = [page(1, "tea", huge), page(2, "tea", inf), page(3, "tea", nan), page(4, "tea", np.ones(8)),
             *[page(i, "jazz", huge) for i in range(5, 12)]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        one_by_one = project(*items)
        as_run = fold_run(TierState(), log(*items), DEFAULT_TIERS)
    assert session_ids(as_run) == session_ids(one_by_one) and as_run.page_session == one_by_one.page_session
