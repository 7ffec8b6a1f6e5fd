"""Replay's fast paths leave exactly the state of the plain ones.

- a projection's ``fold_run`` (a whole run of one user's events at once) equals its ``evolve`` on each event in
  turn, whatever the run is cut into;
- the tiers' :class:`SessionIndex` scores a page exactly (``==``, not approx) as ``similarities`` does, while
  sessions join, get visited, are distilled and leave;
- an envelope decoded from a stored row equals the one ``Envelope(...)`` builds.
"""

from __future__ import annotations

import math
from datetime import timedelta

import numpy as np
import pyarrow as pa
from hypothesis import given, settings

from events.envelope import ENVELOPE_SCHEMA, Envelope, PendingEvent, _stored, from_arrow, seal, to_arrow
from events.model import MemoryArchived, MemoryRestored, MessageClassified, ProfileDistilled
from projections.folds import retention, retention_run, tiers
from projections.folds.policy import DEFAULT_POLICY
from projections.folds.state import CONFIGURED_PROJECTIONS, HANDLED, PROJECTIONS, RUN_FOLDS, ShardState
from projections.folds.tier_index import SessionIndex
from projections.folds.tiers import TierConfig, TierState, similarities
from tests.builders import T0, embedding, message, touch
from tests.unit.test_state_routing import mixed_logs

SMALL = TierConfig(short_term_capacity=1, mid_term_capacity=3, session_similarity=0.5, session_keywords=2)


def _by_evolve(name: str, envelopes: list) -> object:
    evolve = PROJECTIONS.get(name) or CONFIGURED_PROJECTIONS[name][0]
    config = () if name in PROJECTIONS else (getattr(ShardState(), CONFIGURED_PROJECTIONS[name][1]),)
    value = type(getattr(_fresh(), name))()
    for env in envelopes:
        value = evolve(value, env, *config)
    return value


def _fresh():
    from projections.folds.state import UserMemory

    return UserMemory()


def _by_runs(name: str, envelopes: list, cuts: tuple[int, ...]) -> object:
    config = () if name in PROJECTIONS else (getattr(ShardState(), CONFIGURED_PROJECTIONS[name][1]),)
    value = type(getattr(_fresh(), name))()
    bounds = [0, *(c for c in cuts if 0 < c < len(envelopes)), len(envelopes)]
    for lo, hi in zip(bounds, bounds[1:]):
        if hi > lo:  # the shard fold hands a projection a run only when the run holds an event it reads
            value = RUN_FOLDS[name](value, envelopes[lo:hi], *config)
    return value


@given(mixed_logs())
@settings(max_examples=10, deadline=None)  # test_state_routing folds more of these logs
def test_every_run_fold_equals_evolve_event_by_event(envelopes):
    stream = envelopes[0].stream
    mine = [e for e in envelopes if e.stream == stream]
    for name in RUN_FOLDS:
        read = [e for e in mine if isinstance(e.event, HANDLED[name])]
        want = _by_evolve(name, read).canonical()
        for cuts in ((), (len(read) // 2,), (1, 2, 3)):
            assert _by_runs(name, read, cuts).canonical() == want, (name, cuts)


def _at(minutes: float):
    return T0 + timedelta(minutes=minutes)


def _tier_log() -> list:
    """Pages on three topics (clustered vectors, overlapping terms), touches, a distillation, an LFU archival."""
    rng = np.random.default_rng(11)
    topics = [rng.normal(size=8) for _ in range(4)]
    items, n = [], 0
    for i in range(40):
        t = (i * 7) % 4 if i % 5 else i % 4
        v = topics[t] + 0.3 * rng.normal(size=8)
        items.append((f"m{i}", message(f"topic {t} line {i}", f"c{i}", occurred_at=_at(i))))
        items.append((f"k{i}", MessageClassified(message_event_id=f"m{i}", memory_type="fact", confidence=0.9,
                                                 classifier="rules-v1", key_terms=(f"t{t}", f"w{i % 3}"))))
        if i % 9 != 4:  # some pages enter without a vector
            items.append((f"e{i}", embedding(f"m{i}", (v / np.linalg.norm(v)).astype(np.float32))))
        if i % 4 == 3:
            items.append((f"q{i}", touch(*(f"m{j}" for j in range(max(0, i - 6), i)))))
        if i == 20:
            items.append((f"d{i}", ProfileDistilled(session_id="s-m0", page_ids=("m0",), heat=6.0, at=_at(i),
                                                    distiller="rules-v1")))
        if i == 30:
            items.append((f"r{i}", MemoryRestored(memory_ids=("m1", "m2"), at=_at(i), reason="asked")))
            items.append((f"a{i}", MemoryArchived(memory_ids=("m3",), reason="manual", at=_at(i))))
    for event_id, event in items:
        n += 1
        yield seal(PendingEvent("acme", "alice", event_id, event), n, _at(n / 10))


def test_tiers_fold_run_with_joins_visits_and_evictions_equals_evolve():
    envelopes = [e for e in _tier_log() if isinstance(e.event, tiers.HANDLES)]
    want = TierState()
    for env in envelopes:
        want = tiers.evolve(want, env, SMALL)
    assert want.pending_archival and len(want.active) == SMALL.mid_term_capacity  # evictions happened
    assert any(len(s.pages) > 1 for s in want.active.values())  # and pages joined sessions
    for cut in (0, 7, len(envelopes) // 2, len(envelopes)):
        got = tiers.fold_run(tiers.fold_run(TierState(), envelopes[:cut], SMALL), envelopes[cut:], SMALL)
        assert got.canonical() == want.canonical()


def test_session_index_scores_exactly_as_similarities_while_sessions_change():
    envelopes = [e for e in _tier_log() if isinstance(e.event, tiers.HANDLES)]
    state, index, checked = TierState(), SessionIndex(), 0
    for env in envelopes:
        state = tiers.evolve(state, env, SMALL)
        for page in state.short:
            got_sessions, got = index.similarities(state, page, SMALL)
            want_sessions = list(state.active.values())
            assert got_sessions == want_sessions
            if want_sessions:
                want = similarities(page, want_sessions, SMALL)
                assert got.tobytes() == want.tobytes()
                checked += 1
    assert checked > 30


def test_retention_run_counts_restores_and_ignores_uncounted_touches():
    envelopes = [e for e in _tier_log() if isinstance(e.event, retention.HANDLES)]
    envelopes.append(seal(PendingEvent("acme", "alice", "late", touch("m5", "m6", reason="context")),
                          envelopes[-1].seq + 1, _at(-5)))  # an access older than the last: inserted in order
    want = retention.RetentionState()
    for env in envelopes:
        want = retention.evolve(want, env, DEFAULT_POLICY)
    got = retention_run.fold_run(retention.RetentionState(), envelopes, DEFAULT_POLICY)
    assert got.canonical() == want.canonical()
    assert list(got.items) == list(want.items)  # the same order, too
    assert want.items["m1"].access_count >= 1 and math.isfinite(want.items["m1"].stability)


def test_a_decoded_row_is_the_envelope_the_constructor_builds():
    envelopes = list(_tier_log())[:25]
    decoded = from_arrow(to_arrow(envelopes).select(ENVELOPE_SCHEMA.names))
    assert decoded == envelopes
    e = envelopes[0]
    values = (e.tenant, e.user_id, e.seq, e.event_id, e.kind, e.schema_version, e.occurred_at, e.recorded_at,
              e.causation_id, e.correlation_id, e.event)
    assert _stored(*values) == Envelope(*values)
    assert isinstance(to_arrow(decoded), pa.Table)


def test_session_index_follows_joins_and_evictions():
    """Every page opens a session and (past the capacity) one leaves: the index appends, or rebuilds on an
    eviction, and scores exactly as ``similarities`` all along."""
    rng = np.random.default_rng(5)
    state, index, checked, n = TierState(), SessionIndex(), 0, 0
    for i in range(40):
        items = [(f"m{i}", message(f"line {i}", f"c{i}", occurred_at=_at(i))),
                 (f"k{i}", MessageClassified(message_event_id=f"m{i}", memory_type="fact", confidence=0.9,
                                             classifier="rules-v1", key_terms=(f"t{i}", f"w{i % 3}"))),
                 (f"e{i}", embedding(f"m{i}", rng.normal(size=8)))]
        if i % 6 == 5:
            items.append((f"q{i}", touch(f"m{i - 3}", f"m{i - 4}")))
        for event_id, event in items:
            n += 1
            state = tiers.evolve(state, seal(PendingEvent("acme", "alice", event_id, event), n, _at(n / 10)), SMALL)
            for page in state.short:
                got_sessions, got = index.similarities(state, page, SMALL)
                assert got_sessions == list(state.active.values())
                if got_sessions:
                    assert got.tobytes() == similarities(page, got_sessions, SMALL).tobytes()
                    checked += 1
    assert state.pending_archival and checked > 30


def test_graph_run_batches_touches_between_stagings_status_changes_and_edges_as_evolve_does():
    from events.graph_events import GraphEdgeLinked, GraphMemoriesConsolidated, GraphMemoryStatusChanged
    from projections.folds import graph, graph_run
    from tests.builders import stream
    from tests.graph_builders import memory

    link = GraphEdgeLinked(source_id="m1", target_id="m2", relation_type="causality", relation="caused",
                           occurred_at=T0, reason="r", discovered_by="tool:link_memories")
    envs = stream(("t0", touch("m1", "x")), ("m1", memory("I", "a")), ("t1", touch("m1", "m1", "x", "m2")),
                  ("m2", memory("I", "b", minutes=2)), ("t2", touch("m2", "m1")), ("e1", link), ("t3", touch("m2")),
                  ("s1", GraphMemoryStatusChanged(memory_id="m2", status="superseded", reason="newer",
                                                  superseded_by="m1")),
                  ("t4", touch("m2", "m1")), ("e1", link), ("b1", GraphMemoriesConsolidated(batch_id="b1",
                                                                                          memory_ids=("m1",))),
                  ("t5", touch("m1")))
    envs[-1] = seal(PendingEvent("acme", "alice", "t5", touch("m1")), envs[-1].seq, T0 - timedelta(days=1))
    want = graph.fold(graph.GraphState(), envs)
    assert want.memories["m1"].access_count == 4 and want.memories["m2"].access_count == 3
    for cut in range(len(envs) + 1):
        got = graph_run.fold_run(graph_run.fold_run(graph.GraphState(), envs[:cut]), envs[cut:])
        assert got.canonical() == want.canonical(), cut
        assert (got.last_seq, got.structure) == (want.last_seq, want.structure)
        assert got.edges == want.edges and list(got.memories) == list(want.memories)


def test_tier_run_counts_and_keywords_equal_the_plain_fold_with_long_sessions_and_ties():
    """Every page joins one session (one topic vector) with many key terms, repeats and ties: the run's
    position-kept counts and candidate top terms equal the dict-and-sort of every term, page after page."""
    config = TierConfig(short_term_capacity=1, session_similarity=0.5, session_keywords=4)
    v = np.ones(8, np.float32) / math.sqrt(8)
    items = []
    for i in range(30):
        terms = tuple(dict.fromkeys([f"t{(i * 3 + j) % 11}" for j in range(5)] + [f"n{i}", "t1"]))
        items += [(f"m{i}", message(f"line {i}", "c", occurred_at=_at(i))),
                  (f"k{i}", MessageClassified(message_event_id=f"m{i}", memory_type="fact", confidence=0.9,
                                              classifier="rules-v1", key_terms=terms)),
                  (f"e{i}", embedding(f"m{i}", v))]
    envelopes = [seal(PendingEvent("acme", "alice", eid, ev), n + 1, _at(n / 10)) for n, (eid, ev) in enumerate(items)]
    want = TierState()
    for env in envelopes:
        want = tiers.evolve(want, env, config)
    got = tiers.fold_run(TierState(), envelopes, config)
    assert got.canonical() == want.canonical()
    assert [s.keywords for s in got.active.values()] == [s.keywords for s in want.active.values()]
    assert len(next(iter(want.active.values())).keyword_counts) > 30


def test_tier_run_counts_each_visit_of_a_burst_of_touches_as_evolve_does():
    """Queries come in bursts: consecutive touches visiting the same sessions (one out of time order, one for a
    reason that does not visit) are applied per session at once, and count as many visits as evolve counts."""
    base = [e.event for e in _tier_log()]
    ids = [e.event_id for e in _tier_log()]
    items = []
    for event_id, event in zip(ids, base):
        items.append((event_id, event))
        if event_id in ("e9", "e19", "e29", "e39"):
            items += [(f"{event_id}-b1", touch("m1", "m5", "m8")), (f"{event_id}-b2", touch("m5", "m2", "m5")),
                      (f"{event_id}-b3", touch("m8", reason="context")), (f"{event_id}-b4", touch("m1", "m8"))]
    def when(n: int, eid: str) -> float:  # a burst's touches after every page, but its second out of order
        return -n if eid.endswith("-b2") else (60 + n if "-b" in eid else n / 10)

    envelopes = [seal(PendingEvent("acme", "alice", eid, ev), n + 1, _at(when(n, eid)))
                 for n, (eid, ev) in enumerate(items)]
    mine = [e for e in envelopes if isinstance(e.event, tiers.HANDLES)]
    want = TierState()
    for env in mine:
        want = tiers.evolve(want, env, SMALL)
    for cuts in ((), (len(mine) // 2,), tuple(range(1, len(mine), 7))):
        bounds = [0, *cuts, len(mine)]
        got = TierState()
        for lo, hi in zip(bounds, bounds[1:]):
            got = tiers.fold_run(got, mine[lo:hi], SMALL)
        assert got.canonical() == want.canonical(), cuts
    assert max(s.access_count for s in want.active.values()) >= 4


def test_working_run_applies_a_burst_of_rehearsals_before_the_next_message_can_evict():
    """Bursts of touches rehearse held items (one twice in a touch: once); the next message evicts the least
    rehearsed, so the burst must count in full before it: the run equals evolve, whatever the cuts."""
    from projections.folds import working

    config = working.WorkingConfig(capacity=5, rehearsal_reasons=("search_hit",))
    items = []
    for i in range(20):
        items.append((f"m{i}", message(f"line {i}", f"c{i}", conversation_id="c", occurred_at=_at(i))))
        if i % 3 == 2:
            items += [(f"q{i}a", touch(f"m{i - 2}", f"m{i}", f"m{i}")), (f"q{i}b", touch(f"m{i}", "gone")),
                      (f"q{i}c", touch(f"m{i - 1}", reason="context")), (f"q{i}d", touch(f"m{i - 2}"))]
    envelopes = [seal(PendingEvent("acme", "alice", eid, ev), n + 1, _at(n)) for n, (eid, ev) in enumerate(items)]
    want = working.WorkingState()
    for env in envelopes:
        want = working.evolve(want, env, config)
    for cuts in ((), (5,), tuple(range(1, len(envelopes), 3))):
        bounds = [0, *cuts, len(envelopes)]
        got = working.WorkingState()
        for lo, hi in zip(bounds, bounds[1:]):
            got = working.fold_run(got, envelopes[lo:hi], config)
        assert got.canonical() == want.canonical(), cuts
    assert max(item.rehearsals for item in want.conversations["c"]) >= 2


def test_a_window_mean_is_reused_only_for_the_very_same_vectors():
    from projections.folds import episodes

    rng = np.random.default_rng(3)
    a, b, c = (rng.normal(size=8) for _ in range(3))
    first = episodes._window_mean([a, b])
    assert episodes._window_mean([a, b]) is first  # the same objects: computed once
    copy = episodes._window_mean([a.copy(), b])  # equal values, another object: computed again, the same floats
    assert copy is not first and copy.tobytes() == first.tobytes()
    for window in ([b, c], [c], [a, b, c], [c, a]):
        assert episodes._window_mean(window).tobytes() == episodes.mean_direction(window).tobytes()
    assert episodes._window_mean([]) is None
