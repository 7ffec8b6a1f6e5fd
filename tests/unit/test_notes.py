"""The notes projection: versions, supersession, time travel, search and importance (seed 002 numbers)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from events.envelope import Envelope, PendingEvent, seal
from events.model import Event, MemoryTouched, NoteContent, NoteOperation, NoteReviewed
from projections.folds.notes import NotePolicy, NoteState, evolve, fold, importance

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)


def day(n: float) -> datetime:
    return T0 + timedelta(days=n)


def content(text: str, **fields) -> NoteContent:
    return NoteContent(category=fields.pop("category", "decision"), text=text, **fields)


def add(text: str, at: datetime = T0, source: str = "m1", **fields) -> NoteOperation:
    return NoteOperation(op="add", note=content(text, **fields), source_message_ids=(source,), valid_from=at,
                         reason="new note", decider="rules-v1")


def op(kind: str, target: str, at: datetime, text: str | None = None, source: str = "m2") -> NoteOperation:
    return NoteOperation(op=kind, target_note_id=target, note=content(text) if text else None,
                         source_message_ids=(source,), valid_from=at, relation="supersedes" if text else None,
                         reason=f"{kind} for the test", decider="rules-v1")


def review(note_id: str, trigger: str, decision: str, at: datetime, value: float = 1.0) -> NoteReviewed:
    return NoteReviewed(note_id=note_id, trigger=trigger, importance=value, decision=decision, reason="test",
                        reviewer="rules-v1", at=at)


def used(*ids: str) -> MemoryTouched:
    return MemoryTouched(reason="used", query_id="q", query="q", memory_ids=ids, ranks=tuple(range(1, len(ids) + 1)),
                         scores=(1.0,) * len(ids))


def log(*events: tuple[str, Event] | tuple[str, Event, datetime]) -> list[Envelope]:
    """Seal (event id, event[, recorded_at]) as consecutive envelopes of one stream."""
    out = []
    for seq, (event_id, event, *at) in enumerate(events, start=1):
        out.append(seal(PendingEvent("acme", "alice", event_id, event), seq, at[0] if at else day(seq / 1000)))
    return out


def state_of(*events) -> NoteState:
    return fold(NoteState(), log(*events))


PG_MYSQL = (
    ("pg", add("The project uses PostgreSQL", key_terms=("postgresql",))),
    ("my", op("update", "pg", day(1), "Decision: switch to MySQL")),
)


def test_add_creates_version_one_named_by_its_event_id():
    state = state_of(("n1", add("The user prefers tea", category="preference", key_terms=("tea",), language="en")))
    (note,) = state.active()
    assert (note.note_id, note.text, note.category, note.key_terms, note.version, note.status) == (
        "n1", "The user prefers tea", "preference", ("tea",), 1, "active")
    assert (note.source_message_ids, note.valid_from, note.valid_to, note.supersedes, note.superseded_by) == (
        ("m1",), T0, None, None, None)
    assert (note.lifecycle, note.seq, note.decider, note.reason, note.boosts, note.uses) == (
        "fact", 1, "rules-v1", "new note", 0, 0)


def test_update_supersedes_the_target_and_creates_the_next_version():
    state = state_of(*PG_MYSQL)
    old, new = state.notes["pg"], state.notes["my"]
    assert (old.status, old.valid_to, old.superseded_by) == ("superseded", day(1), "my")
    assert (new.status, new.version, new.supersedes, new.valid_from, new.source_message_ids) == (
        "active", 2, "pg", day(1), ("m2",))
    assert [n.note_id for n in state.active()] == ["my"]


def test_history_follows_the_chain_both_ways_from_any_version():
    state = state_of(*PG_MYSQL, ("lite", op("update", "my", day(2), "Decision: switch to SQLite")),
                     ("other", add("The user lives in Berlin", category="fact")))
    chain = ["pg", "my", "lite"]
    for note_id in chain:
        assert [n.note_id for n in state.history(note_id)] == chain
    assert [n.version for n in state.history("my")] == [1, 2, 3]
    assert [n.note_id for n in state.history("other")] == ["other"]
    assert state.history("nope") == []


def test_time_travel_sees_the_note_that_was_valid_then():
    state = state_of(*PG_MYSQL, ("gone", add("The user lives in Paris", at=day(0.5), category="fact")),
                     ("del", op("delete", "gone", day(3))))
    assert [n.note_id for n in state.active(T0 - timedelta(seconds=1))] == []
    assert [n.note_id for n in state.active(T0)] == ["pg"]
    assert [n.note_id for n in state.active(day(0.9))] == ["pg", "gone"]
    assert [n.note_id for n in state.active(day(1))] == ["my", "gone"]  # valid_to is exclusive
    assert [n.note_id for n in state.active(day(3))] == ["my"]
    assert [n.note_id for n in state.active()] == ["my"]


def test_delete_retracts_without_removing():
    state = state_of(("n", add("The user lives in Paris", category="fact")), ("d", op("delete", "n", day(2))))
    note = state.notes["n"]
    assert (note.status, note.valid_to, note.superseded_by) == ("retracted", day(2), None)
    assert state.active() == [] and state.history("n") == [note]


def test_boost_reinforces_and_collects_its_source():
    state = state_of(("n", add("The user loves hotpot", category="preference")), ("b", op("boost", "n", day(1))))
    note = state.notes["n"]
    assert (note.boosts, note.uses, note.last_reinforced, note.reinforced_at) == (1, 0, day(1), (day(1),))
    assert note.source_message_ids == ("m1", "m2")
    assert [n.note_id for n in state.by_source("m2")] == ["n"]


def test_skip_and_ops_on_unknown_or_closed_targets_change_nothing():
    base = log(*PG_MYSQL)
    before = fold(NoteState(), base).canonical()
    noise = [
        ("s", NoteOperation(op="skip", valid_from=day(2), reason="merge", decider="rules-v1")),
        ("u", op("update", "missing", day(2), "Decision: use Oracle")),
        ("b", op("boost", "missing", day(2))),
        ("d", op("delete", "missing", day(2))),
        ("u2", op("update", "pg", day(2), "Decision: use Oracle")),  # pg is already superseded
        ("d2", op("delete", "pg", day(2))),
        ("r", review("missing", "promotion", "promote", day(2))),
    ]
    more = [seal(PendingEvent("acme", "alice", eid, ev), 3 + i, day(2)) for i, (eid, ev) in enumerate(noise)]
    after = fold(fold(NoteState(), base), more)
    assert after.canonical()[0] == before[0]
    assert set(after.notes) == {"pg", "my"}


def test_used_touches_count_once_per_event_and_other_reasons_do_not():
    context = MemoryTouched(reason="context", query_id="q", query="q", memory_ids=("n",), ranks=(1,), scores=(1.0,))
    state = state_of(("n", add("The user loves hotpot", category="preference")),
                     ("t1", used("n", "n", "msg-1"), day(3)), ("t2", context, day(4)), ("t3", used("n"), day(5)))
    note = state.notes["n"]
    assert (note.uses, note.boosts, note.last_reinforced, note.reinforced_at) == (2, 0, day(5), (day(3), day(5)))


def test_reviews_promote_keep_and_delete():
    state = state_of(
        ("a", add("The user's name is Ann", category="fact", slot="name")),
        ("b", add("The user's mood is tense", category="fact")),
        ("c", add("The user lives in Paris", category="fact")),
        ("d", add("The user has two cats", category="fact")),
        ("ra", review("a", "promotion", "promote", day(1), 2.5)),
        ("rb", review("b", "promotion", "keep", day(1), 2.5)),
        ("rc", review("c", "retraction", "delete", day(99), 0.48)),
        ("rd", review("d", "retraction", "keep", day(99), 0.48)),
    )
    a, b, c, d = (state.notes[k] for k in "abcd")
    assert (a.lifecycle, a.status, a.promotion_mark) == ("core", "active", 0)
    assert (b.lifecycle, b.promotion_mark) == ("fact", 0)
    assert (c.status, c.valid_to) == ("retracted", day(99))
    assert (d.status, d.importance_reset_at) == ("active", day(99))
    assert importance(d, day(99)) == 0.5


def test_search_ranks_active_notes_and_can_include_closed_versions():
    state = state_of(*PG_MYSQL, ("tea", add("The user prefers tea", category="preference", key_terms=("tea",))),
                     ("zh", add("用户住在北京", category="fact", key_terms=("北京",), language="zh")))
    assert [nid for nid, _ in state.search("which database, mysql?", 5)] == ["my"]
    assert state.search("postgresql", 5) == []
    (hit,) = state.search("postgresql", 5, include_inactive=True)
    assert hit[0] == "pg" and hit[1] > 0
    assert [nid for nid, _ in state.search("北京", 5)] == ["zh"]
    assert [nid for nid, _ in state.search("tea mysql", 1)] in (["tea"], ["my"])
    assert len(state.search("tea mysql", 5)) == 2


def test_by_source_finds_every_note_a_message_stated():
    state = state_of(("a", add("The user prefers tea", source="m7")), ("b", add("The user lives in Rome", source="m7")),
                     ("c", add("The user likes jazz", source="m8")))
    assert [n.note_id for n in state.by_source("m7")] == ["a", "b"]
    assert state.by_source("m9") == []


def test_fold_is_deterministic_and_splits_over_concatenation():
    events = log(*PG_MYSQL, ("b", op("boost", "my", day(3))), ("t", used("my"), day(4)),
                 ("r", review("my", "promotion", "keep", day(5), 2.5)), ("zh", add("项目使用 Redis", language="zh")))
    once, twice = fold(NoteState(), events), fold(NoteState(), events)
    assert once.canonical() == twice.canonical()
    assert repr(once.canonical()) == repr(twice.canonical())
    split = fold(fold(NoteState(), events[:3]), events[3:])
    assert split.canonical() == once.canonical()
    state = NoteState()
    for env in events:
        state = evolve(state, env)
    assert state.canonical() == once.canonical()


# -- importance, by hand (seed 002: start 1.0, +0.3 per boost/use, fact ×0.95 per 7 idle days) --


@pytest.mark.parametrize(
    ("days_idle", "expected"),
    [(0, 1.0), (6.99, 1.0), (7, 0.95), (13.9, 0.95), (14, 0.9025), (21, 0.857375), (98, 0.487674979)],
)
def test_an_idle_fact_decays_by_0_95_per_full_week(days_idle, expected):
    note = state_of(("n", add("The user lives in Paris", category="fact"))).notes["n"]
    assert importance(note, day(days_idle)) == pytest.approx(expected, abs=1e-9)


def test_boosts_and_uses_add_0_3_to_the_value_at_that_moment():
    state = state_of(("n", add("The user loves hotpot", category="preference")),
                     ("b1", op("boost", "n", day(1))), ("b2", op("boost", "n", day(2))))
    note = state.notes["n"]
    assert importance(note, day(2)) == 1.6
    assert importance(note, day(0.5)) == 1.0  # reinforcements after "now" do not count yet
    assert importance(note, day(9)) == pytest.approx(1.6 * 0.95)  # 7 idle days since the last boost
    late = state_of(("n", add("The user loves hotpot", category="preference")),
                    ("t", used("n"), day(10))).notes["n"]
    assert importance(late, day(10)) == pytest.approx(0.95 + 0.3)  # decayed first, then reinforced
    assert importance(late, day(17)) == pytest.approx(1.25 * 0.95)


def test_five_reinforcements_reach_the_promotion_threshold_exactly():
    boosts = [(f"b{i}", op("boost", "n", day(i))) for i in range(1, 6)]
    note = state_of(("n", add("The user loves hotpot", category="preference")), *boosts).notes["n"]
    assert importance(note, day(5)) == 2.5


def test_core_notes_never_decay():
    state = state_of(("n", add("The user's name is Ann", category="fact", slot="name")),
                     ("b", op("boost", "n", day(1))), ("p", review("n", "promotion", "promote", day(2), 2.5)))
    assert importance(state.notes["n"], day(400)) == 1.3
    system = state_of(("s", add("Answer in English", lifecycle="system"))).notes["s"]
    assert importance(system, day(400)) == 1.0


def test_a_kept_retraction_review_restarts_importance_at_0_5():
    state = state_of(("n", add("The user has two cats", category="fact")), ("b", op("boost", "n", T0)),
                     ("k", review("n", "retraction", "keep", day(133), 0.49)))
    note = state.notes["n"]
    assert importance(note, day(133)) == 0.5
    assert importance(note, day(140)) == 0.475
    boosted = fold(state, [seal(PendingEvent("acme", "alice", "b2", op("boost", "n", day(140))), 4, day(140))])
    assert importance(boosted.notes["n"], day(140)) == pytest.approx(0.775)


def test_importance_reads_the_policy_not_the_fold():
    note = state_of(("n", add("The user lives in Paris", category="fact"))).notes["n"]
    harsh = NotePolicy(fact_decay=0.5, decay_after_days=1, decay_every_days=1)
    assert importance(note, day(3), harsh) == 0.125
    assert NotePolicy().context_tokens == 500
    with pytest.raises(ValueError, match="timezone-aware"):
        importance(note, datetime(2024, 5, 9))
