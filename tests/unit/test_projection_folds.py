"""Projection folds: fold(initial, events) == expected, for each projection."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest

from projections.adapters.embedding import HASH_ID
from projections.folds.lexical import BM25Params, LexicalIndex
from projections.folds.messages import MessageStore, StoredMessage
from projections.folds.state import ProjectionOrderError, ShardState, digest, evolve, fold
from projections.folds.touches import AccessStats, TouchLog
from tests.builders import RECORDED_AT, T0, embedding, message, stream, touch


def test_messages_fold_keeps_every_message_in_log_order_with_its_client_id():
    envs = stream(
        ("m1", message("I adopted a puppy", "c1", speaker="Alice", turn_id="D1:1")),
        ("v1", embedding("m1", [1.0, 0.0])),
        ("m2", message("Nice!", "c2", conversation_id="conv-2", role="assistant", occurred_at=T0 + timedelta(hours=1))),
        ("t1", touch("m1")),
    )

    state = fold(ShardState(), envs)

    assert list(state.users) == [("acme", "alice")]
    memory = state.user("acme", "alice")
    assert memory.head == 4
    assert memory.messages == MessageStore(
        by_id={
            "m1": StoredMessage(
                event_id="m1", seq=1, conversation_id="conv-1", turn_id="D1:1", role="user",
                speaker="Alice", text="I adopted a puppy", occurred_at=T0, client_message_id="c1",
            ),
            "m2": StoredMessage(
                event_id="m2", seq=3, conversation_id="conv-2", turn_id=None, role="assistant",
                speaker=None, text="Nice!", occurred_at=T0 + timedelta(hours=1), client_message_id="c2",
            ),
        },
        order=["m1", "m2"],
        client_ids={"c1": "m1", "c2": "m2"},
    )
    assert memory.messages.by_id["m1"].index_text == "Alice: I adopted a puppy"


def test_streams_fold_into_separate_user_memories():
    envs = stream(("a1", message("tea", "c1"))) + stream(("b1", message("coffee", "c1")), tenant="globex")

    state = fold(ShardState(), envs)

    assert sorted(state.users) == [("acme", "alice"), ("globex", "alice")]
    assert [m.text for m in state.user("acme", "alice").messages.by_id.values()] == ["tea"]
    assert [m.text for m in state.user("globex", "alice").messages.by_id.values()] == ["coffee"]
    assert state.user("acme", "bob") is None
    assert state.events_applied == 2


@pytest.fixture
def tiny_corpus() -> ShardState:
    # Tokens: [apple, banana], [apple, cherry, cherry], [banana, date]: N=3, avgdl=7/3.
    return fold(
        ShardState(),
        stream(
            ("d0", message("apple banana", "c0")),
            ("d1", message("apple cherry cherry", "c1")),
            ("d2", message("banana date", "c2")),
        ),
    )


def test_lexical_fold_builds_postings_and_lengths(tiny_corpus):
    assert tiny_corpus.user("acme", "alice").lexical == LexicalIndex(
        doc_ids=["d0", "d1", "d2"],
        doc_len=[2, 3, 2],
        postings={"apple": {0: 1, 1: 1}, "banana": {0: 1, 2: 1}, "cherry": {1: 2}, "date": {2: 1}},
        total_len=7,
    )


def test_lexical_fold_indexes_the_speaker_name():
    state = fold(ShardState(), stream(("m1", message("I went hiking", "c1", speaker="Caroline"))))
    assert state.user("acme", "alice").lexical.postings == {"caroline": {0: 1}, "went": {0: 1}, "hik": {0: 1}}


# Hand-computed BM25 (k1=1.2, b=0.75, idf = ln(1 + (N - df + 0.5) / (df + 0.5))):
#   "cherry" in d1: idf = ln(8/3) = 0.980829; tf=2, dl=3:
#       0.980829 * 2 * 2.2 / (2 + 1.2 * (0.25 + 0.75 * 3 / (7/3))) = 1.248328
#   "apple"/"banana": idf = ln(1.6) = 0.470004; tf=1, dl=2 -> 0.499176; dl=3 -> 0.420817
def test_bm25_single_term_score_matches_hand_computation(tiny_corpus):
    assert tiny_corpus.user("acme", "alice").lexical.search("cherry", k=10) == [("d1", pytest.approx(1.248328, abs=1e-6))]


def test_bm25_ranks_documents_matching_more_terms_first(tiny_corpus):
    hits = tiny_corpus.user("acme", "alice").lexical.search("apple banana", k=10)
    assert hits == [
        ("d0", pytest.approx(0.998353, abs=1e-6)),
        ("d2", pytest.approx(0.499176, abs=1e-6)),
        ("d1", pytest.approx(0.420817, abs=1e-6)),
    ]


def test_bm25_uses_the_params_it_is_given(tiny_corpus):
    # b=0 removes length normalisation: 0.980829 * 2 * 2.2 / (2 + 1.2) = 1.348640
    hits = tiny_corpus.user("acme", "alice").lexical.search("cherry", k=10, params=BM25Params(k1=1.2, b=0.0))
    assert hits == [("d1", pytest.approx(1.348640, abs=1e-6))]


def test_bm25_truncates_to_k_and_ignores_unknown_terms(tiny_corpus):
    lexical = tiny_corpus.user("acme", "alice").lexical
    assert [doc for doc, _ in lexical.search("apple banana", k=2)] == ["d0", "d2"]
    assert lexical.search("zebra", k=5) == []
    assert LexicalIndex().search("apple", k=5) == []


def test_vectors_fold_keeps_the_latest_embedding_per_message_and_model():
    envs = stream(
        ("m1", message("first", "c1")),
        ("v1", embedding("m1", [1.0, 0.0, 0.0])),
        ("m2", message("second", "c2")),
        ("v2", embedding("m2", [0.0, 1.0, 0.0])),
        ("v3", embedding("m1", [0.0, 0.0, 1.0], model_id="other-model")),
        ("v4", embedding("m2", [1.0, 0.0, 0.0])),
    )

    vectors = fold(ShardState(), envs).user("acme", "alice").vectors
    rows = vectors.rows

    assert vectors.active == HASH_ID and sorted(rows) == ["m1", "m2"]
    assert (rows["m1"].event_id, rows["m1"].seq, rows["m1"].model_id) == ("v1", 2, HASH_ID)
    assert (rows["m2"].event_id, rows["m2"].seq) == ("v4", 6)  # the same model again: the latest wins
    np.testing.assert_array_equal(rows["m2"].vector, np.array([1.0, 0.0, 0.0], dtype=np.float32))
    other = vectors.of_model("other-model")["m1"]
    assert (other.memory_id, other.event_id, other.seq, other.model_id) == ("m1", "v3", 5, "other-model")
    np.testing.assert_array_equal(other.vector, np.array([0.0, 0.0, 1.0], dtype=np.float32))


def test_a_switch_makes_the_other_models_vectors_the_searched_ones_and_back():
    from events.model import EmbedderSwitched

    envs = stream(
        ("m1", message("first", "c1")),
        ("v1", embedding("m1", [1.0, 0.0, 0.0])),
        ("v2", embedding("m1", [0.0, 1.0, 0.0], model_id="other-model")),
        ("s1", EmbedderSwitched(embedder="openai:other", model_id="other-model", dim=3, previous_model_id=HASH_ID)),
    )
    state = fold(ShardState(), envs)
    vectors = state.user("acme", "alice").vectors
    assert vectors.active == "other-model" and vectors.rows["m1"].event_id == "v2"
    assert vectors.of_model(HASH_ID)["m1"].event_id == "v1"
    one_model = fold(ShardState(), envs[:2]).user("acme", "alice").vectors.canonical()
    assert one_model == [("m1", "v1", 2, HASH_ID, np.array([1, 0, 0], dtype="<f4").tobytes())]  # the old form
    back = stream(*[(e.event_id, e.event) for e in envs],
                  ("s2", EmbedderSwitched(embedder="hash", model_id=HASH_ID, dim=3, previous_model_id="other-model")))
    vectors = fold(ShardState(), back).user("acme", "alice").vectors
    assert vectors.active == HASH_ID and vectors.rows["m1"].event_id == "v1"
    assert vectors.of_model("other-model")["m1"].event_id == "v2"


def test_touches_fold_counts_every_memory_of_a_query_by_reason():
    envs = stream(
        ("m1", message("first", "c1")),
        ("m2", message("second", "c2")),
        ("t1", touch("m1", "m2", reason="search_hit")),
        ("t2", touch("m1", reason="context")),
    )

    touches = fold(ShardState(), envs).user("acme", "alice").touches

    assert touches == TouchLog(
        stats={
            "m1": AccessStats(
                count=2, by_reason={"search_hit": 1, "context": 1}, last_touched_at=RECORDED_AT + timedelta(seconds=3)
            ),
            "m2": AccessStats(
                count=1, by_reason={"search_hit": 1}, last_touched_at=RECORDED_AT + timedelta(seconds=2)
            ),
        },
        total=3,
    )


def test_fold_rejects_a_seq_gap():
    envs = stream(("m1", message("one", "c1"))) + stream(("m3", message("three", "c3")), first_seq=3)
    with pytest.raises(ProjectionOrderError, match="got seq 3 after 1"):
        fold(ShardState(), envs)


def test_fold_rejects_a_stream_that_does_not_start_at_one():
    with pytest.raises(ProjectionOrderError, match="got seq 2 after 0"):
        fold(ShardState(), stream(("m2", message("two", "c2")), first_seq=2))


def test_fold_rejects_an_envelope_applied_twice():
    envs = stream(("m1", message("one", "c1")))
    state = fold(ShardState(), envs)
    with pytest.raises(ProjectionOrderError):
        fold(state, envs)


def _base_events(text: str = "I adopted a puppy", reason: str = "search_hit"):
    return stream(
        ("m1", message(text, "c1")),
        ("v1", embedding("m1", [0.6, 0.8])),
        ("t1", touch("m1", reason=reason)),
    )


def test_digest_is_equal_for_two_folds_of_the_same_events():
    assert digest(fold(ShardState(), _base_events())) == digest(fold(ShardState(), _base_events()))


def test_digest_changes_only_in_the_projections_an_event_change_reaches():
    base = digest(fold(ShardState(), _base_events()))
    other_text = digest(fold(ShardState(), _base_events(text="I adopted a kitten")))
    other_touch = digest(fold(ShardState(), _base_events(reason="context")))

    assert set(base) == {"messages", "lexical", "vectors", "touches", "archive", "notes", "profile", "retention", "graph", "titles", "feedback",
                         "adjustments", "molt", "erasure",
                         "episodes", "tiers", "working", "combined"}
    # The text reaches the pages' keywords in the tiers too ("puppy" → "kitten"); no note is stated in either.
    assert {k for k in base if base[k] != other_text[k]} == {"messages", "lexical", "tiers", "combined"}
    # A context touch counts as an access under the default policy: it reinforces retention too.
    assert {k for k in base if base[k] != other_touch[k]} == {"touches", "retention", "combined"}


def test_digest_distinguishes_streams():
    same_events_other_user = stream(
        ("m1", message("I adopted a puppy", "c1")), ("v1", embedding("m1", [0.6, 0.8])), ("t1", touch("m1")), user_id="bob"
    )
    base = digest(fold(ShardState(), _base_events()))
    assert base["combined"] != digest(fold(ShardState(), same_events_other_user))["combined"]


def test_fold_of_interleaved_streams_equals_evolving_one_envelope_at_a_time():
    alice = stream(("m1", message("I adopted a puppy", "c1")), ("v1", embedding("m1", [0.6, 0.8])),
                   ("m2", message("我喜欢在周末去爬山", "c2")), ("v2", embedding("m2", [0.8, 0.6])), ("t1", touch("m1", "m2")))
    bob = stream(("n1", message("We chose PostgreSQL", "d1")), ("w1", embedding("n1", [1.0, 0.0])), ("u1", touch("n1")),
                 tenant="acme", user_id="bob")
    interleaved = [alice[0], alice[1], bob[0], alice[2], bob[1], bob[2], alice[3], alice[4]]
    one_by_one = ShardState()
    for env in interleaved:
        evolve(one_by_one, env)

    batched = fold(ShardState(), interleaved)

    assert digest(batched) == digest(one_by_one)
    assert {s: m.head for s, m in batched.users.items()} == {("acme", "alice"): 5, ("acme", "bob"): 3}


def test_fold_rejects_a_gap_before_applying_any_envelope_of_the_run():
    envs = stream(("m1", message("one", "c1"))) + stream(("m3", message("three", "c3")), first_seq=3)
    state = ShardState()
    with pytest.raises(ProjectionOrderError, match="got seq 3 after 1"):
        fold(state, envs)
    assert state.users[("acme", "alice")].head == 0


def test_user_forgotten_empties_the_user_in_fold_and_evolve_alike_and_keeps_only_its_erasure():
    from events.erasure_events import PayloadErased, UserForgotten

    forgotten = UserForgotten(key_generation=1, through_seq=3, at=RECORDED_AT)
    live = stream(("m1", message("I adopted a puppy", "c1")), ("v1", embedding("m1", [0.6, 0.8])),
                  ("t1", touch("m1")), ("f1", forgotten), ("m2", message("我搬到了里斯本", "c2")))
    # Replay after the key is gone: the first three payloads no longer open.
    replayed = [*stream(*((e.event_id, PayloadErased(key_generation=1)) for e in live[:3])), *live[3:]]
    one_by_one = ShardState()
    for env in live:
        evolve(one_by_one, env)

    folded, refolded = fold(ShardState(), live), fold(ShardState(), replayed)

    assert digest(folded) == digest(one_by_one) == digest(refolded)
    memory = folded.users[("acme", "alice")]
    assert [m.text for m in memory.messages.by_id.values()] == ["我搬到了里斯本"]
    assert memory.touches.total == 0 and memory.head == 5
    assert [(e.seq, e.through_seq) for e in memory.erasure.erasures] == [(4, 3)]
    assert digest(fold(ShardState(), live[:3]))["erasure"] != digest(folded)["erasure"]
