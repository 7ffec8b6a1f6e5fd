"""Deciders: decide(state, command) -> events; a command already applied yields none."""

from __future__ import annotations

import numpy as np
import pytest

from actors.deciders import decide_record
from actors.reads import touches as decide_touches
from events.commands import validate_messages
from events.errors import InvalidInputError
from events.log import InMemoryEventLog
from events.model import (
    MemoryTouched,
    MessageClassified,
    MessageEmbedded,
    MessageRecorded,
    NoteOperation,
)
from projections.adapters.embedding import HASH_ID, HashEmbedder
from projections.folds.state import ShardState, fold
from projections.queries.retrieval import fuse
from tests.builders import command

EMBED = HashEmbedder()


def decide(state, items):
    commands = validate_messages(items)
    vectors = EMBED.encode([c.index_text() for c in commands])
    return decide_record(state, commands, vectors, HASH_ID, EMBED.dim)


def test_new_messages_yield_recorded_classified_and_embedded_events():
    pending, outcomes = decide(ShardState(), [command("I adopted a puppy", 0, speaker="Alice", client_message_id="c1")])

    # ... and the note the message states, in the same batch ("I adopted a puppy": a first-person event).
    assert [type(p.event) for p in pending] == [MessageRecorded, MessageClassified, MessageEmbedded, NoteOperation]
    recorded, classified, embedded, noted = pending
    assert (noted.event.op, noted.event.note.text, noted.event.source_message_ids) == (
        "add", "Alice adopted a puppy", (recorded.event_id,))
    assert noted.causation_id == recorded.event_id
    assert classified.event.message_event_id == recorded.event_id
    assert classified.event.classifier == "rules-v1"
    assert classified.event.key_terms == ("puppy",)  # recorded for the tier fold
    assert (classified.causation_id, classified.correlation_id) == (recorded.event_id, recorded.event_id)
    assert outcomes == [{"memory_id": recorded.event_id, "created": True}]
    assert (recorded.tenant, recorded.user_id, recorded.event.client_message_id) == ("acme", "alice", "c1")
    assert recorded.correlation_id == recorded.event_id
    assert embedded.event.message_event_id == recorded.event_id
    assert (embedded.causation_id, embedded.correlation_id) == (recorded.event_id, recorded.event_id)
    assert (embedded.event.model_id, embedded.event.dim) == (HASH_ID, 384)
    assert embedded.event.input_text == "Alice: I adopted a puppy"
    np.testing.assert_array_equal(embedded.event.array(), EMBED.encode(["Alice: I adopted a puppy"])[0])


def test_a_known_client_message_id_yields_no_events():
    log, state = InMemoryEventLog(), ShardState()
    pending, [first] = decide(state, [command("I adopted a puppy", client_message_id="c1")])
    fold(state, log.append(pending))

    again, [second] = decide(state, [command("I adopted a puppy", client_message_id="c1")])

    assert again == []
    assert second == {"memory_id": first["memory_id"], "created": False}


def test_a_known_message_without_client_id_is_recognised_by_content():
    state = ShardState()
    pending, [first] = decide(state, [command("I adopted a puppy")])
    fold(state, InMemoryEventLog().append(pending))

    again, [second] = decide(state, [command("I adopted a puppy")])

    assert again == [] and second == {"memory_id": first["memory_id"], "created": False}


def test_duplicates_within_one_batch_yield_one_message():
    pending, outcomes = decide(
        ShardState(),
        [command("tea", 0, client_message_id="c1"), command("coffee", 1), command("tea", 0, client_message_id="c1"),
         command("coffee", 1)],
    )

    recorded = [p for p in pending if isinstance(p.event, MessageRecorded)]
    assert [p.event.text for p in recorded] == ["tea", "coffee"]
    assert len(pending) == 6  # recorded, embedded and classified for each distinct message
    assert [o["created"] for o in outcomes] == [True, True, False, False]
    assert outcomes[2]["memory_id"] == outcomes[0]["memory_id"] and outcomes[3]["memory_id"] == outcomes[1]["memory_id"]


def test_the_same_client_id_in_another_stream_is_a_different_message():
    state = ShardState()
    pending, _ = decide(state, [command("tea", client_message_id="c1")])
    fold(state, InMemoryEventLog().append(pending))

    pending, outcomes = decide(state, [command("tea", client_message_id="c1", user_id="bob"),
                                       command("tea", client_message_id="c1", tenant="globex")])

    assert [o["created"] for o in outcomes] == [True, True]
    assert [(p.tenant, p.user_id) for p in pending if isinstance(p.event, MessageRecorded)] == [
        ("acme", "bob"), ("globex", "alice"),
    ]


def test_vectors_of_the_wrong_shape_are_rejected():
    commands = validate_messages([command("tea"), command("coffee", 1)])
    with pytest.raises(InvalidInputError, match="vectors") as info:
        decide_record(ShardState(), commands, np.zeros((1, 384), dtype=np.float32), HASH_ID, 384)
    assert info.value.problems[0][0] == "vectors"


def test_touches_are_one_event_per_query_in_hit_order():
    state = ShardState()
    pending, _ = decide(state, [command("I adopted a puppy", 0), command("my puppy is called Rex", 1)])
    fold(state, InMemoryEventLog().append(pending))
    hits = fuse(state.user("acme", "alice"), "puppy", [], k=5)

    [touch] = decide_touches("acme", "alice", "puppy", hits, "search_hit")

    query_id = touch.event.query_id
    assert (touch.tenant, touch.user_id, touch.correlation_id) == ("acme", "alice", query_id)
    assert touch.event == MemoryTouched(
        reason="search_hit", query_id=query_id, query="puppy",
        memory_ids=tuple(h.memory_id for h in hits),
        ranks=tuple(h.rank for h in hits),
        scores=tuple(h.score for h in hits),
    )
    assert touch.event.ranks == (1, 2)


def test_no_hits_no_touch_event():
    assert decide_touches("acme", "alice", "puppy", [], "search_hit") == []
