"""The offline note reviewer (rules-v1): seed 002 promotion review at 2.5, retraction review below 0.5."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from events.envelope import PendingEvent, seal
from events.model import Event, NoteContent, NoteOperation
from projections.decisions.review import REVIEWER_ID, review_notes, transient
from projections.folds.notes import NoteState, fold, importance
from projections.rules.extraction import extract_notes

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)


def day(n: float) -> datetime:
    return T0 + timedelta(days=n)


class Log:
    def __init__(self) -> None:
        self.state = NoteState()
        self.seq = 0

    def append(self, event_id: str, event: Event) -> None:
        self.seq += 1
        self.state = fold(self.state, [seal(PendingEvent("acme", "alice", event_id, event), self.seq, day(0))])

    def note(self, note_id: str, said: str, *, boosts: int = 0) -> None:
        """Record the note extracted from ``said`` at T0, then ``boosts`` restatements on days 1, 2, ..."""
        (c,) = extract_notes(said)
        content = NoteContent(category=c.category, text=c.text, key_terms=c.key_terms, polarity=c.polarity,
                              slot=c.slot, value=c.value, language=c.language)
        self.append(note_id, NoteOperation(op="add", note=content, source_message_ids=(f"m-{note_id}",),
                                           valid_from=T0, reason="new note", decider="rules-v1"))
        for i in range(1, boosts + 1):
            self.boost(note_id, day(i), f"{note_id}-b{i}")

    def boost(self, note_id: str, at: datetime, event_id: str) -> None:
        self.append(event_id, NoteOperation(op="boost", target_note_id=note_id, valid_from=at, reason="restated",
                                            decider="rules-v1"))

    def review(self, now: datetime) -> list:
        reviews = review_notes(self.state, now)
        for i, r in enumerate(reviews):
            self.append(f"review-{now.isoformat()}-{i}", r)
        return reviews


@pytest.mark.parametrize(
    "said",
    ["I love spicy hotpot", "We decided to use PostgreSQL", "We must never deploy on Fridays", "My name is Ann",
     "My birthday is March 3rd", "我住在北京", "我最喜欢的颜色是蓝色"],
)
def test_a_stable_note_at_2_5_is_promoted_to_core_once(said):
    log = Log()
    log.note("n", said, boosts=5)
    (review,) = log.review(day(5))
    assert (review.note_id, review.trigger, review.decision, review.importance, review.reviewer, review.at) == (
        "n", "promotion", "promote", 2.5, REVIEWER_ID, day(5))
    assert "becomes core" in review.reason
    assert log.state.notes["n"].lifecycle == "core"
    assert log.review(day(5)) == [] and log.review(day(300)) == []
    assert importance(log.state.notes["n"], day(300)) == 2.5  # core never decays


def test_below_the_threshold_nothing_is_reviewed():
    log = Log()
    log.note("n", "I love spicy hotpot", boosts=4)
    assert importance(log.state.notes["n"], day(4)) == 2.2
    assert log.review(day(4)) == []


@pytest.mark.parametrize("said", ["My mood is tense", "我的心情是紧张", "I'm a nervous person"])
def test_a_transient_state_is_kept_and_reviewed_again_only_after_new_reinforcement(said):
    log = Log()
    log.note("n", said, boosts=5)
    (review,) = log.review(day(5))
    assert (review.trigger, review.decision) == ("promotion", "keep")
    assert "transient state" in review.reason
    assert log.state.notes["n"].lifecycle == "fact"
    assert log.review(day(5)) == [] and log.review(day(6)) == []  # the same crossing
    log.boost("n", day(6), "again")
    (again,) = log.review(day(6))
    assert (again.decision, again.importance) == ("keep", 2.8)


def test_an_open_fact_without_a_slot_is_kept():
    log = Log()
    log.note("n", "I have two cats", boosts=5)
    (review,) = log.review(day(5))
    assert (review.decision, log.state.notes["n"].lifecycle) == ("keep", "fact")
    assert "open statement" in review.reason


def test_an_unreinforced_old_note_is_deleted_below_0_5():
    log = Log()
    log.note("n", "I live in Paris")
    assert log.review(day(97)) == []  # 0.95^13 = 0.5133
    (review,) = log.review(day(98))  # 0.95^14 = 0.4877
    assert (review.trigger, review.decision, review.importance) == ("retraction", "delete", 0.487674979)
    assert "never reinforced in 98 day(s)" in review.reason
    note = log.state.notes["n"]
    assert (note.status, note.valid_to) == ("retracted", day(98))
    assert log.review(day(98)) == [] and log.review(day(500)) == []


def test_a_reinforced_note_is_kept_and_restarts_at_0_5():
    log = Log()
    log.note("n", "I live in Paris", boosts=1)  # 1.3 on day 1
    assert log.review(day(133)) == []  # 1.3 · 0.95^18 = 0.516
    (review,) = log.review(day(134))  # 1.3 · 0.95^19 = 0.4906
    assert (review.trigger, review.decision, review.importance) == ("retraction", "keep", 0.490559683)
    assert importance(log.state.notes["n"], day(134)) == 0.5
    assert log.review(day(134)) == [] and log.review(day(140)) == []
    (later,) = log.review(day(141))  # 0.5 · 0.95 after another idle week
    assert (later.decision, later.importance) == ("keep", 0.475)


def test_who_the_user_is_is_not_forgotten_for_lack_of_use():
    log = Log()
    log.note("n", "My name is Ann")
    (review,) = log.review(day(98))
    assert (review.trigger, review.decision) == ("retraction", "keep")
    assert log.state.notes["n"].status == "active"


@pytest.mark.parametrize("said", ["Never deploy on Fridays", "I am allergic to peanuts", "我对花生过敏"])
def test_a_constraint_does_not_fade_so_no_retraction_review_is_ever_due(said):
    log = Log()
    log.note("n", said)
    assert log.state.notes["n"].category == "constraint"
    assert importance(log.state.notes["n"], day(500)) == 1.0
    assert log.review(day(98)) == [] and log.review(day(500)) == []
    assert log.state.notes["n"].status == "active"


def test_reviews_are_in_log_order_and_skip_notes_not_yet_stated():
    log = Log()
    log.note("a", "I live in Paris")
    log.note("b", "I love spicy hotpot")
    for i in range(7):  # decayed to 0.95^14 first: 0.4877 + 7 · 0.3 = 2.5877
        log.boost("b", day(98), f"b{i}")
    assert [(r.note_id, r.trigger) for r in review_notes(log.state, day(98))] == [("a", "retraction"),
                                                                                 ("b", "promotion")]
    late = NoteOperation(op="add", note=NoteContent(category="fact", text="The user lives in Rome", slot="residence"),
                         valid_from=day(200), reason="new note", decider="rules-v1")
    log.append("late", late)
    assert all(r.note_id != "late" for r in review_notes(log.state, day(150)))


def test_transient_reads_states_and_time_words():
    log = Log()
    for note_id, said in [("a", "My mood is tense"), ("b", "我的心情是紧张"), ("c", "I love spicy hotpot"),
                          ("d", "我住在北京")]:
        log.note(note_id, said)
    assert [transient(log.state.notes[k]) for k in "abcd"] == ["tense", "紧张", None, None]
