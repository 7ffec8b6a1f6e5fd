"""Validation at the boundary: one bad message rejects the batch, and the error says where and how to fix it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from events.commands import RecordMessage, validate_messages
from events.errors import InvalidInputError
from tests.builders import command


def _batch_with(bad: dict) -> list:
    return [command("first message", 0), command("second message", 1), bad]


def _without(key: str) -> dict:
    item = command("x", 2)
    del item[key]
    return item


@pytest.mark.parametrize(
    ("bad", "location", "hint"),
    [
        (_without("text"), "messages[2].text", "give the message's text as a non-empty string"),
        (command("   \n\t", 2), "messages[2].text", "non-empty string"),
        (command(5, 2), "messages[2].text", "non-empty string"),
        (command("x", 2, occurred_at="2024-05-01T09:30:00"), "messages[2].occurred_at", "with a timezone offset"),
        (command("x", 2, occurred_at=datetime(2024, 5, 1, 9, 30)), "messages[2].occurred_at", "with a timezone offset"),
        (command("x", 2, occurred_at="last tuesday"), "messages[2].occurred_at", "ISO-8601"),
        (_without("occurred_at"), "messages[2].occurred_at", "ISO-8601"),
        (command("x", 2, role="robot"), "messages[2].role", "use one of: user, assistant, system, tool"),
        (command("x", 2, tenant=""), "messages[2].tenant", "non-empty tenant id"),
        (command("x", 2, speaker=["Alice"]), "messages[2].speaker", "speaker's name as a string"),
        (command("x", 2, colour="red"), "messages[2].colour", "unknown field; remove it"),
    ],
    ids=["missing-text", "blank-text", "text-not-a-string", "naive-timestamp-string", "naive-datetime",
         "unparsable-timestamp", "missing-timestamp", "unknown-role", "empty-tenant", "speaker-list", "extra-field"],
)
def test_one_invalid_message_rejects_the_batch_naming_the_field_and_the_fix(bad, location, hint):
    with pytest.raises(InvalidInputError) as info:
        validate_messages(_batch_with(bad))

    err = info.value
    assert [loc for loc, _ in err.problems] == [location]
    assert hint in err.problems[0][1]
    assert f"  - {location}: " in str(err)
    assert "nothing was written" in str(err)
    assert isinstance(err, ValueError)


def test_every_problem_in_the_batch_is_listed():
    batch = [command("ok", 0), command("", 1), command("x", 2, role="bot", occurred_at="soon")]
    with pytest.raises(InvalidInputError) as info:
        validate_messages(batch)
    assert sorted(loc for loc, _ in info.value.problems) == [
        "messages[1].text", "messages[2].occurred_at", "messages[2].role",
    ]
    assert str(info.value).startswith("rejected batch of 3 messages: 3 problem(s)")


def test_a_non_object_item_is_reported_by_position():
    with pytest.raises(InvalidInputError) as info:
        validate_messages([command("ok"), "just a string"])
    assert info.value.problems == (("messages[1]", "expected an object, got str"),)


def test_a_valid_batch_passes_with_defaults_filled_in():
    commands = validate_messages(
        [command("I adopted a puppy", 0, speaker="Alice", turn_id="D1:1", metadata={"mood": "happy", "n": 2}),
         command("我喜欢在周末去爬山", 1, role="assistant", conversation_id="c-2")]
    )
    assert [type(c) for c in commands] == [RecordMessage, RecordMessage]
    first, second = commands
    assert (first.conversation_id, first.role, first.speaker, first.turn_id) == ("default", "user", "Alice", "D1:1")
    assert first.occurred_at == datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
    assert first.metadata == {"mood": "happy", "n": 2}
    assert first.index_text() == "Alice: I adopted a puppy"
    assert (second.role, second.conversation_id, second.index_text()) == ("assistant", "c-2", "我喜欢在周末去爬山")


def test_already_validated_commands_pass_through_unchanged():
    cmd = RecordMessage.model_validate(command("hello"))
    assert validate_messages([cmd]) == [cmd]


def test_message_key_is_the_client_id_when_given():
    assert RecordMessage.model_validate(command("hello", client_message_id="msg-42")).message_key() == "msg-42"


def test_message_key_is_stable_and_content_addressed():
    key = RecordMessage.model_validate(command("I adopted a puppy", turn_id="D1:1")).message_key()

    # Pinned: if the key of a message changed across releases, re-adding stored messages would duplicate them.
    assert key == "sha1:61fc5e1245302fb18b3e50eb457595f78c297685"
    assert RecordMessage.model_validate(command("I adopted a puppy", turn_id="D1:1")).message_key() == key
    assert RecordMessage.model_validate(command("I adopted a kitten", turn_id="D1:1")).message_key() != key
    assert RecordMessage.model_validate(command("I adopted a puppy", turn_id="D1:2")).message_key() != key
    assert RecordMessage.model_validate(command("I adopted a puppy", 1, turn_id="D1:1")).message_key() != key


def test_message_key_does_not_depend_on_the_stream():
    # The key is scoped per (tenant, user) by the decider, not by the key itself.
    a = RecordMessage.model_validate(command("same", tenant="a"))
    b = RecordMessage.model_validate(command("same", tenant="b"))
    assert a.message_key() == b.message_key()


def test_message_key_depends_on_the_instant_not_on_its_timezone_spelling():
    utc = RecordMessage.model_validate(command("same", occurred_at="2024-05-01T09:00:00+00:00"))
    paris = RecordMessage.model_validate(command("same", occurred_at="2024-05-01T11:00:00+02:00"))
    assert utc.occurred_at == paris.occurred_at
    assert utc.message_key() == paris.message_key()
