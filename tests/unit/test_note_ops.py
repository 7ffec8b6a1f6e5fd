"""The offline memory-operation decider (rules-v1): seed 000 supersession, seed 002 ADD/UPDATE/BOOST/SKIP; EN, ZH."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import count

import pytest

from events.envelope import Envelope, PendingEvent, seal
from events.model import MessageRecorded, NoteContent, NoteOperation
from projections.decisions.note_ops import DECIDER_ID, decide_note_operations
from projections.folds.notes import NoteState, fold

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)


def msg(text: str, minutes: int = 0, *, role: str = "user", speaker: str | None = None) -> MessageRecorded:
    return MessageRecorded(conversation_id="c", role=role, speaker=speaker, text=text,
                           occurred_at=T0 + timedelta(minutes=minutes), client_message_id=f"client-{minutes}")


class Session:
    """A user's log: messages are recorded, the decider runs on each batch against the folded notes."""

    def __init__(self) -> None:
        self.envelopes: list[Envelope] = []
        self.state = NoteState()
        self.ops: list[tuple[str, NoteOperation]] = []
        self._ids = (f"op{i}" for i in count(1))
        self._previous: str | None = None

    def _append(self, event_id: str, event) -> None:
        env = seal(PendingEvent("acme", "alice", event_id, event), len(self.envelopes) + 1, T0 + timedelta(days=1))
        self.envelopes.append(env)
        self.state = fold(self.state, [env])

    def say(self, *messages: tuple[str, MessageRecorded]) -> list[tuple[str, NoteOperation]]:
        for event_id, message in messages:
            self._append(event_id, message)
        ops = decide_note_operations(self.state.active(), messages, lambda: next(self._ids),
                                     previous_text=self._previous)
        for event_id, op in ops:
            self._append(event_id, op)
        self._previous = messages[-1][1].text
        self.ops += ops
        return ops

    def active_texts(self) -> list[str]:
        return [n.text for n in self.state.active()]


SEED_000 = {
    "en": ("the project uses PostgreSQL", "we decided to switch to MySQL", "The project uses PostgreSQL",
           "Decision: switch to MySQL"),
    "zh": ("项目使用PostgreSQL", "我们决定改用MySQL", "项目使用PostgreSQL", "决定：改用MySQL"),
    "zh-spaced": ("项目使用 PostgreSQL", "我们决定改用 MySQL", "项目使用 PostgreSQL", "决定：改用 MySQL"),
}


@pytest.mark.parametrize("lang", SEED_000)
@pytest.mark.parametrize("batched", [False, True], ids=["turn-by-turn", "one-batch"])
def test_seed_000_postgresql_is_superseded_by_mysql(lang, batched):
    first, second, old_text, new_text = SEED_000[lang]
    session = Session()
    if batched:
        session.say(("m1", msg(first)), ("m2", msg(second, 5)))
    else:
        session.say(("m1", msg(first)))
        session.say(("m2", msg(second, 5)))
    (add, update) = session.ops
    assert (add[1].op, update[1].op, update[1].target_note_id) == ("add", "update", add[0])
    old, new = session.state.notes[add[0]], session.state.notes[update[0]]
    closed_at = T0 + timedelta(minutes=5)
    assert (old.text, old.status, old.valid_to, old.superseded_by) == (old_text, "superseded", closed_at, update[0])
    assert (new.text, new.status, new.version, new.supersedes, new.valid_to) == (new_text, "active", 2, add[0], None)
    assert new.language == ("en" if lang == "en" else "zh")
    assert session.active_texts() == [new_text]
    assert not any("PostgreSQL" in t for t in session.active_texts())
    assert [n.note_id for n in session.state.history(add[0])] == [add[0], update[0]]
    op = update[1]
    assert (op.relation, op.decider, op.source_message_ids, op.valid_from) == (
        "supersedes", DECIDER_ID, ("m2",), T0 + timedelta(minutes=5))
    assert op.reason.startswith(f"switch: {new_text!r} supersedes note {old_text!r}")


@pytest.mark.parametrize(
    ("before", "after", "texts"),
    [
        ("My mood is tense", "My mood is relaxed now", ["The user's mood is tense", "The user's mood is relaxed"]),
        ("我的心情是紧张", "我的心情现在是放松", ["用户的心情是紧张", "用户的心情现在是放松"]),
    ],
    ids=["en", "zh"],
)
def test_a_change_over_time_keeps_both_notes(before, after, texts):
    session = Session()
    session.say(("m1", msg(before)))
    (op,) = session.say(("m2", msg(after, 10)))
    assert (op[1].op, op[1].relation) == ("add", "change_over_time")
    assert "kept alongside" in op[1].reason
    assert session.active_texts() == texts


@pytest.mark.parametrize(
    ("said", "again", "text"),
    [("I love spicy hotpot", "I really love spicy hotpot!", "The user loves spicy hotpot"),
     ("我喜欢喝咖啡", "我真的很喜欢喝咖啡", "用户喜欢喝咖啡"),
     ("My mood is relaxed now", "My mood is relaxed now", "The user's mood is relaxed")],
    ids=["en", "zh", "identical-state"],
)
def test_a_restatement_boosts_instead_of_adding_a_duplicate(said, again, text):
    session = Session()
    ((note_id, _),) = session.say(("m1", msg(said)))
    (boost,) = session.say(("m2", msg(again, 1)))
    assert (boost[1].op, boost[1].target_note_id, boost[1].relation) == ("boost", note_id, "reinforces")
    (note,) = session.state.active()
    assert (note.text, note.boosts, note.source_message_ids) == (text, 1, ("m1", "m2"))


def test_a_restatement_inside_the_same_message_is_merged():
    session = Session()
    (add, skip) = session.say(("m1", msg("我喜欢喝咖啡，我真的很喜欢喝咖啡")))
    assert (add[1].op, skip[1].op, skip[1].target_note_id) == ("add", "skip", add[0])
    assert skip[1].reason.startswith("merge:") and "m1" in skip[1].reason
    (note,) = session.state.active()
    assert (note.text, note.boosts) == ("用户喜欢喝咖啡", 0)


def test_a_message_already_behind_an_active_note_is_merged_when_decided_again():
    session = Session()
    messages = (("m1", msg("the project uses PostgreSQL")), ("m2", msg("we decided to switch to MySQL", 5)),
                ("m3", msg("I live in Paris", 6)))
    session.say(*messages)
    # m1 only lives on in a superseded note: the caller passes messages not yet decided (see by_source).
    assert [n.status for n in session.state.by_source("m1")] == ["superseded"]
    again = decide_note_operations(session.state.active(), messages[1:], lambda: "x")
    assert [(op.op, op.target_note_id) for _, op in again] == [("skip", "op2"), ("skip", "op3")]


def test_superseding_several_notes_updates_the_first_and_deletes_the_others():
    session = Session()
    session.say(("m1", msg("the project uses PostgreSQL")), ("m2", msg("We decided to use SQLite for tests", 1)))
    assert len(session.state.active()) == 2
    ops = session.say(("m3", msg("we decided to switch to MySQL", 2)))
    (update, delete) = ops
    assert (update[1].op, update[1].target_note_id) == ("update", "op1")
    assert (delete[1].op, delete[1].target_note_id) == ("delete", "op2")
    assert f"new note {update[0]}" in delete[1].reason
    assert session.active_texts() == ["Decision: switch to MySQL"]
    assert session.state.notes["op2"].status == "retracted"


def test_a_slot_fact_with_a_new_value_is_a_new_version():
    session = Session()
    session.say(("m1", msg("我住在北京")))
    ((new_id, op),) = session.say(("m2", msg("我住在上海", 60)))
    assert (op.op, op.target_note_id, op.relation) == ("update", "op1", "supersedes")
    assert op.reason.startswith("slot:")
    assert session.active_texts() == ["用户住在上海"]
    assert session.state.notes[new_id].slot == "residence"


def test_only_user_messages_state_facts_but_any_message_resolves_that():
    session = Session()
    assert session.say(("a1", msg("We decided to use Oracle, I love it", role="assistant"))) == []
    ((_, op),) = session.say(("m1", msg("Should we use PostgreSQL?", 1, role="assistant")),
                             ("m2", msg("Let's go with that.", 2)))
    assert (op.op, op.note.text, op.source_message_ids) == ("add", "Decision: go with PostgreSQL", ("m2",))
    # previous_text carries the last message of the batch before
    session.say(("m3", msg("How about MongoDB?", 3, role="assistant")))
    assert session.say(("m4", msg("Let's go with that.", 4)))[0][1].note.text == "Decision: go with MongoDB"


def test_the_speaker_is_the_subject_and_subjects_are_not_mixed():
    session = Session()
    session.say(("m1", msg("I like coffee", speaker="Alice")), ("m2", msg("I don't like coffee", 1, speaker="Bob")))
    assert session.active_texts() == ["Alice likes coffee", "Bob does not like coffee"]
    assert [n.subject for n in session.state.active()] == ["Alice", "Bob"]
    ((_, op),) = session.say(("m3", msg("I don't like coffee", 2, speaker="Alice")))
    assert (op.op, op.target_note_id) == ("update", "op1")


def test_every_operation_is_a_valid_event_with_its_source_time_and_reason():
    session = Session()
    ops = session.say(("m1", msg("I live in Paris. My name is Ann.")), ("m2", msg("I live in Berlin", 3)))
    assert [op.op for _, op in ops] == ["add", "add", "update"]
    for event_id, op in ops:
        NoteOperation.model_validate(op.model_dump())
        assert event_id.startswith("op") and op.reason and op.decider == "rules-v1"
    assert [op.source_message_ids for _, op in ops] == [("m1",), ("m1",), ("m2",)]
    assert ops[2][1].valid_from == T0 + timedelta(minutes=3)
    assert isinstance(ops[0][1].note, NoteContent) and ops[0][1].note.slot == "residence"
    assert ops[0][1].relation is None and ops[1][1].relation == "consistent"


# -- the sample dialogue's changes of mind, as phrased there ---------------------------------


def test_switch_to_one_thing_and_drop_another_supersedes_the_dropped_one():
    s = Session()
    s.say(("m1", msg("We decided to use PostgreSQL as the database, since the club's old site runs on it.")))
    [(_, op)] = s.say(("m2", msg("Change of plan on the database. The hosting team only supports MySQL, so we decided "
                                 "to switch to MySQL and drop PostgreSQL.", 5)))
    assert (op.op, op.target_note_id, op.relation) == ("update", "op1", "supersedes")
    assert s.active_texts() == ["Decision: switch to MySQL and drop PostgreSQL"]


def test_a_first_person_switch_of_habit_supersedes_the_preference_it_replaces():
    s = Session()
    s.say(("m1", msg("I do my best work early. I prefer green tea in the morning, never coffee.", speaker="Maya")))
    [(_, op)] = s.say(("m2", msg("Funny thing: since the launch crunch I switched to coffee in the morning.", 9,
                                 speaker="Maya")))
    assert (op.op, op.note.category, op.note.text) == ("update", "preference", "Maya switched to coffee in the morning")
    assert "tea" in op.reason and "coffee" in op.reason
    chain = s.state.history(op.target_note_id)
    assert [n.text for n in chain] == ["Maya prefers green tea in the morning", "Maya switched to coffee in the morning"]
    assert [n.status for n in chain] == ["superseded", "active"]


def test_moving_house_is_not_a_switch_of_habit():
    s = Session()
    [(_, op)] = s.say(("m1", msg("I moved to Berlin last year.")))
    assert op.note.category == "fact"


def test_a_chinese_dislike_of_a_food_is_a_negative_preference():
    s = Session()
    ops = s.say(("m1", msg("我最喜欢四川菜，麻婆豆腐一定要做。不过我不吃香菜，请记住。", speaker="Maya")))
    assert [(o.note.category, o.note.polarity, o.note.text) for _, o in ops][-1] == ("preference", "negative", "Maya不吃香菜")
