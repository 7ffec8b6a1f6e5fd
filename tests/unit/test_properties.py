"""Properties of the log encoding and of the folds, over generated events.

- every event kind round-trips through the Arrow envelope encoding;
- replay is a no-op: folding ``log.scan()`` gives the live state's digest;
- fold is associative over concatenation.
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from events.crypto import PayloadCipher
from events.duckdb_log import DuckDBEventLog
from events.envelope import ENVELOPE_SCHEMA, PendingEvent, from_arrow, seal, to_arrow
from events.erasure_events import UserForgotten
from events.feedback_events import FeedbackDetected
from events.learning_events import AdjustmentReverted, MemoryAdjusted, PolicyChanged, PolicyProposalRejected
from events.graph_events import (
    GraphConclusionRecorded,
    GraphEdgeLinked,
    GraphLabelsEmbedded,
    GraphMemoriesConsolidated,
    GraphMemoryStaged,
    GraphMemoryStatusChanged,
    GraphNodesMerged,
    GraphNodesUnmerged,
    GraphProposalRejected,
)
from events.keystore import KeyStore
from events.log import InMemoryEventLog
from events.model import (
    MEMORY_TYPES,
    ROLES,
    EmbedderSwitched,
    EpisodeTitled,
    LlmCallRecorded,
    MemoryArchived,
    MemoryRestored,
    MemoryTouched,
    MessageClassified,
    MessageEmbedded,
    MessageRecorded,
    MessageSuperseded,
    NoteContent,
    NoteOperation,
    NoteReviewed,
    ProfileDistilled,
)
from events.registry import EVENT_TYPES
from projections.folds.state import ShardState, digest, fold

CHINESE = st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF)
PHRASES = st.sampled_from(
    ["我喜欢在周末去爬山", "今天天气很好", "I went hiking 在周末", "北京烤鸭 is great", "puppy"]
)
TEXT = st.one_of(
    PHRASES,
    st.text(st.one_of(CHINESE, st.characters(codec="utf-8")), min_size=1, max_size=30),
    st.tuples(PHRASES, st.text(min_size=1, max_size=10)).map(" ".join),
)
IDS = st.text(st.characters(codec="utf-8"), min_size=1, max_size=12)
OFFSETS = st.sampled_from([UTC, timezone(timedelta(hours=8)), timezone(timedelta(hours=-5, minutes=-30))])
WHEN = st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2100, 1, 1), timezones=OFFSETS)
METADATA = st.dictionaries(
    st.text(max_size=8),
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**63), max_value=2**63 - 1),
        st.floats(allow_nan=False, allow_infinity=False),
        TEXT,
    ),
    max_size=3,
)

message_recorded = st.builds(
    MessageRecorded,
    conversation_id=IDS,
    role=st.sampled_from(ROLES),
    speaker=st.none() | TEXT,
    text=TEXT,
    occurred_at=WHEN,
    client_message_id=IDS,
    turn_id=st.none() | IDS,
    metadata=METADATA,
)


@st.composite
def message_embedded(draw, message_ids=IDS):
    model_id = draw(IDS)
    dim = 1 + sum(map(ord, model_id)) % 8  # one size per model, as a real log has (the deciders refuse others)
    return MessageEmbedded(
        message_event_id=draw(message_ids),
        model_id=model_id,
        dim=dim,
        vector=draw(st.binary(min_size=4 * dim, max_size=4 * dim)),
        input_text=draw(TEXT),
    )


def memory_touched(memory_ids=IDS):
    ids = st.lists(memory_ids, min_size=1, max_size=4).map(tuple)
    return ids.flatmap(
        lambda mids: st.builds(
            MemoryTouched,
            reason=st.sampled_from(["search_hit", "context", "used"]),
            query_id=IDS,
            query=TEXT,
            memory_ids=st.just(mids),
            ranks=st.just(tuple(range(1, len(mids) + 1))),
            scores=st.just(tuple(1.0 / r for r in range(1, len(mids) + 1))),
        )
    )


message_classified = st.builds(
    MessageClassified,
    message_event_id=IDS,
    memory_type=st.sampled_from(MEMORY_TYPES),
    confidence=st.floats(0.0, 1.0),
    classifier=st.sampled_from(["rules-v1", "llm:qwen2.5"]),
    key_terms=st.none() | st.lists(TEXT, max_size=4).map(tuple),
)

llm_call_recorded = st.builds(
    LlmCallRecorded,
    purpose=st.sampled_from(["note_extraction", "classification"]),
    model=IDS,
    base_url=st.just("http://127.0.0.1:8000/v1"),
    prompt_sha256=st.text("0123456789abcdef", min_size=64, max_size=64),
    messages_json=TEXT,
    parameters=st.dictionaries(IDS, st.none() | st.integers() | st.booleans() | TEXT, max_size=3),
    raw_output=st.none() | TEXT,
    parsed_json=st.none() | TEXT,
    error=st.none() | TEXT,
    attempts=st.integers(1, 5),
    latency_ms=st.floats(0.0, 1e6),
)

note_content = st.builds(
    NoteContent,
    category=st.sampled_from(["preference", "decision", "constraint", "fact"]),
    text=TEXT,
    subject=IDS,
    key_terms=st.lists(TEXT, max_size=3).map(tuple),
    polarity=st.sampled_from(["positive", "negative"]),
    slot=st.none() | IDS,
    value=st.none() | TEXT,
    confidence=st.floats(0.0, 1.0),
    language=st.sampled_from(["en", "zh"]),
    lifecycle=st.sampled_from(["core", "fact", "episode", "system"]),
)
note_operation = st.one_of(
    st.builds(NoteOperation, op=st.just("add"), note=note_content, source_message_ids=st.lists(IDS, max_size=2).map(tuple),
              valid_from=WHEN, reason=TEXT, decider=st.just("rules-v1")),
    st.builds(NoteOperation, op=st.just("update"), target_note_id=IDS, note=note_content, valid_from=WHEN,
              relation=st.none() | st.just("supersedes"), reason=TEXT, decider=st.just("llm:m"), llm_call_id=IDS),
    st.builds(NoteOperation, op=st.sampled_from(["boost", "delete"]), target_note_id=IDS, valid_from=WHEN,
              reason=TEXT, decider=st.just("rules-v1")),
    st.builds(NoteOperation, op=st.just("skip"), valid_from=WHEN, reason=TEXT, decider=st.just("rules-v1")),
)
message_superseded = st.builds(
    MessageSuperseded, message_event_ids=st.lists(IDS, min_size=1, max_size=3).map(tuple), by_message_event_id=IDS,
    valid_from=WHEN, reason=TEXT, decider=st.just("turn-change-v1"),
)
note_reviewed = st.builds(
    NoteReviewed, note_id=IDS, trigger=st.sampled_from(["promotion", "retraction"]),
    importance=st.floats(0.0, 10.0), decision=st.sampled_from(["promote", "keep", "delete"]), reason=TEXT,
    reviewer=st.just("rules-v1"), at=WHEN,
)
memory_archived = st.lists(IDS, min_size=1, max_size=3).map(tuple).flatmap(
    lambda ids: st.builds(
        MemoryArchived, memory_ids=st.just(ids),
        reason=st.sampled_from(["retention_floor", "category_rule", "lfu_eviction", "manual"]), at=WHEN,
        policy=IDS, retentions=st.just(tuple(0.1 for _ in ids)) | st.just(()), detail=TEXT,
    )
)
memory_restored = st.builds(MemoryRestored, memory_ids=st.lists(IDS, min_size=1, max_size=3).map(tuple), at=WHEN, reason=TEXT)
profile_distilled = st.builds(
    ProfileDistilled, session_id=IDS, page_ids=st.lists(IDS, min_size=1, max_size=3).map(tuple),
    traits=st.dictionaries(IDS, TEXT, max_size=2), user_knowledge=st.lists(TEXT, max_size=2).map(tuple),
    assistant_knowledge=st.lists(TEXT, max_size=2).map(tuple), heat=st.floats(0.0, 100.0), at=WHEN,
    distiller=st.just("rules-v1"),
)
episode_titled = st.builds(
    EpisodeTitled, episode_id=IDS, member_ids=st.lists(IDS, min_size=1, max_size=3).map(tuple), title=TEXT,
    summary=TEXT, titler=st.just("llm:m"), llm_call_id=st.none() | IDS,
)

LABELS = st.sampled_from(["yoga class", "瑜伽课", "puppy", "support group"])


@st.composite
def graph_memory_staged(draw):
    topic, obj = draw(LABELS), draw(st.none() | LABELS)
    dim = draw(st.integers(1, 4))
    labels = [topic] + ([obj] if obj else [])
    return GraphMemoryStaged(
        subject=draw(TEXT), memory_type=draw(st.sampled_from(["event", "fact", "relation", "opinion"])), topic=topic,
        object=obj, attributes=draw(st.dictionaries(IDS.filter(str.strip), TEXT.filter(str.strip), max_size=2)), importance=draw(st.floats(0.0, 1.0)),
        source_message_ids=draw(st.lists(IDS, max_size=2).map(tuple)), occurred_at=draw(WHEN),
        extractor="rules-v1", dim=dim, llm_call_id=draw(st.none() | IDS), reason=draw(st.none() | TEXT),
        vectors={label: draw(st.binary(min_size=4 * dim, max_size=4 * dim)) for label in labels},
    )


@st.composite
def graph_labels_embedded(draw):
    dim = draw(st.integers(1, 4))
    labels = draw(st.lists(LABELS, min_size=1, max_size=3, unique=True))
    return GraphLabelsEmbedded(dim=dim, vectors={x: draw(st.binary(min_size=4 * dim, max_size=4 * dim)) for x in labels},
                               model_id=draw(st.sampled_from(["", "sentence-transformers/all-MiniLM-L6-v2"])))


embedder_switched = st.builds(
    EmbedderSwitched, embedder=st.sampled_from(["minilm", "multilingual-e5-small", "openai:m"]),
    model_id=st.sampled_from(["sentence-transformers/all-MiniLM-L6-v2", "openai:m"]), dim=st.integers(1, 4096),
    previous_model_id=st.sampled_from(["", "palimpsest/hash-384"]),
)


graph_events = st.one_of(
    graph_memory_staged(),
    graph_labels_embedded(),
    st.builds(GraphMemoriesConsolidated, batch_id=IDS, memory_ids=st.lists(IDS, min_size=1, max_size=3).map(tuple)),
    st.builds(GraphNodesMerged, merge_id=IDS, kept_node_id=st.just("topic:yoga"),
              merged_node_ids=st.just(("topic:yoga class",)), similarity=st.floats(-1.0, 1.0), reason=TEXT),
    st.builds(GraphNodesUnmerged, merge_id=IDS, reason=TEXT),
    st.builds(GraphEdgeLinked, source_id=st.just("m1"), target_id=st.just("m2"),
              relation_type=st.sampled_from(["causality", "reference"]), relation=TEXT, occurred_at=WHEN,
              reason=TEXT, discovered_by=st.just("tool:link_memories"), llm_call_id=st.none() | IDS),
    st.builds(GraphMemoryStatusChanged, memory_id=IDS, status=st.just("archived"), reason=TEXT),
    st.builds(GraphConclusionRecorded, conclusion_id=IDS, cluster_key=IDS, statement=TEXT,
              confidence=st.floats(0.0, 1.0), source_memory_ids=st.lists(IDS, min_size=1, max_size=3).map(tuple),
              version=st.just(1)),
    st.builds(GraphProposalRejected, llm_call_id=IDS, proposed=st.sampled_from(["create_memory", "causal_link"]),
              proposal=TEXT, reason=TEXT, decider=st.just("llm:m"), source_message_ids=st.lists(IDS, max_size=2).map(tuple)),
)

feedback_detected = st.sampled_from(["negative", "positive", "neutral", "mixed"]).flatmap(
    lambda kind: st.builds(
        FeedbackDetected, user_input=TEXT, agent_response=TEXT, context_window=st.lists(TEXT, max_size=2).map(tuple),
        feedback_detected=st.just(kind != "neutral"), type=st.just(kind), confidence=st.floats(0.0, 1.0),
        targets=st.lists(st.sampled_from(["reasoning", "final_answer", "style", "tool_choice"]), max_size=2).map(tuple),
        action_hints=st.lists(st.sampled_from(["penalty", "invalidate", "prefer"]), max_size=2).map(tuple),
        memory_ids=st.lists(IDS, max_size=3).map(tuple), cues=st.lists(TEXT, max_size=2).map(tuple),
        judge=st.just("feedback-rules-v1"), llm_call_id=st.none() | IDS, at=st.none() | WHEN,
    )
)

user_forgotten = st.builds(UserForgotten, key_generation=st.integers(1, 10), through_seq=st.integers(0, 2**40),
                           at=st.datetimes(timezones=OFFSETS))
WEIGHTS = st.dictionaries(st.sampled_from(["retention_weight", "note_weight"]), st.floats(0.0, 2.0), min_size=1)
learning_events = st.one_of(
    st.builds(MemoryAdjusted, action=st.sampled_from(["penalty", "invalidate"]), layer=st.sampled_from(["working", "stable"]),
              target_ids=st.lists(IDS, min_size=1, max_size=3).map(tuple), factor=st.floats(0.01, 1.0),
              until=st.none() | WHEN, signal_ids=st.lists(IDS, min_size=1, max_size=2).map(tuple), at=WHEN, reason=TEXT,
              dispatcher=st.just("dispatcher-v1")),
    st.builds(MemoryAdjusted, action=st.just("prefer"), layer=st.sampled_from(["working", "stable"]),
              skill=st.sampled_from(["style", "tool_choice"]), preference=TEXT, weight=st.floats(0.0, 1.0),
              version=st.integers(1, 5), signal_ids=st.lists(IDS, min_size=1, max_size=2).map(tuple), at=WHEN,
              reason=TEXT, dispatcher=st.just("dispatcher-v1")),
    st.builds(AdjustmentReverted, adjustment_id=IDS, at=WHEN, reason=TEXT),
    st.builds(PolicyChanged, parameters=WEIGHTS, previous=WEIGHTS, metric=TEXT, before=st.floats(0.0, 1.0),
              after=st.floats(0.0, 1.0), queries=st.integers(0, 50), trigger=TEXT, reverts=st.none() | IDS, at=WHEN,
              reason=TEXT, controller=st.just("molt-v1")),
    st.builds(PolicyProposalRejected, parameters=WEIGHTS, previous=WEIGHTS, metric=TEXT, before=st.floats(0.0, 1.0),
              after=st.floats(0.0, 1.0), queries=st.integers(0, 50), trigger=TEXT, at=WHEN, reason=TEXT,
              controller=st.just("molt-v1")),
)

ANY_EVENT = st.one_of(
    message_recorded, message_embedded(), memory_touched(), message_classified, llm_call_recorded, note_operation,
    message_superseded, note_reviewed, memory_archived, memory_restored, profile_distilled, episode_titled, graph_events,
    feedback_detected, learning_events, user_forgotten, embedder_switched,
)


def test_the_strategies_cover_every_event_kind():
    # If a new kind is added to the model, this fails until the round-trip generates it.
    assert set(EVENT_TYPES) == {
        "message_recorded", "message_embedded", "memory_touched", "message_classified", "llm_call_recorded",
        "note_operation", "message_superseded", "note_reviewed", "memory_archived", "memory_restored", "profile_distilled", "episode_titled",
        "graph_memory_staged", "graph_labels_embedded", "graph_memories_consolidated", "graph_nodes_merged", "graph_nodes_unmerged",
        "graph_edge_linked", "graph_memory_status_changed", "graph_conclusion_recorded", "graph_proposal_rejected",
        "feedback_detected", "memory_adjusted", "adjustment_reverted", "policy_changed", "policy_proposal_rejected",
        "user_forgotten", "embedder_switched",
    }


@given(
    events=st.lists(
        st.tuples(ANY_EVENT, IDS, IDS, st.integers(1, 2**62), st.none() | IDS, st.none() | IDS), min_size=1, max_size=5
    ),
    recorded_at=st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)),
)
@settings(max_examples=150)
def test_every_event_kind_round_trips_through_the_arrow_envelope(events, recorded_at):
    envelopes = [
        seal(PendingEvent(tenant, user, f"e{i}", event, causation, correlation), seq, recorded_at)
        for i, (event, tenant, user, seq, causation, correlation) in enumerate(events)
    ]

    table = to_arrow(envelopes)

    assert table.schema == ENVELOPE_SCHEMA
    assert from_arrow(table) == envelopes


@given(events=st.lists(st.tuples(ANY_EVENT, st.sampled_from(["acme", "globex"]), st.sampled_from(["alice", "bob"])),
                       min_size=1, max_size=5))
@settings(max_examples=100)
def test_every_event_kind_round_trips_sealed_under_its_users_key(events):
    envelopes = [seal(PendingEvent(tenant, user, f"e{i}", event), i + 1, datetime(2024, 5, 1, tzinfo=UTC))
                 for i, (event, tenant, user) in enumerate(events)]
    with tempfile.TemporaryDirectory() as tmp:
        cipher = PayloadCipher(KeyStore(Path(tmp) / "shard.keys", bytes(32)))

        table = to_arrow(envelopes, cipher)

        stored = table.column("sealed").to_pylist()
        assert [p is not None for p in stored] == [e.kind != "user_forgotten" for e in envelopes]
        assert all(p[0] == 2 and bytes(e.event.model_dump_json(), "utf-8") not in p
                   for p, e in zip(stored, envelopes) if p is not None)
        assert from_arrow(table, cipher) == envelopes


STREAMS = [("acme", "alice"), ("acme", "bob"), ("globex", "alice")]


@st.composite
def histories(draw, max_batches=6):
    """Batches of pending events over a few streams; embeddings and touches refer to earlier messages."""
    batches, message_ids, n = [], [], 0
    for _ in range(draw(st.integers(1, max_batches))):
        batch = []
        for _ in range(draw(st.integers(1, 5))):
            tenant, user = draw(st.sampled_from(STREAMS))
            known = st.sampled_from(message_ids) if message_ids else IDS
            event = draw(st.one_of(message_recorded, message_embedded(known), memory_touched(known)))
            event_id = f"ev-{n}"
            n += 1
            if isinstance(event, MessageRecorded):
                message_ids.append(event_id)
            batch.append(PendingEvent(tenant, user, event_id, event))
        batches.append(batch)
    return batches


@given(histories())
@settings(max_examples=40)
def test_replay_of_the_durable_log_is_a_no_op(batches):
    with tempfile.TemporaryDirectory() as tmp:
        log = DuckDBEventLog(Path(tmp) / "shard.duckdb")
        try:
            live = ShardState()
            for batch in batches:
                fold(live, log.append(batch))

            rebuilt = fold(ShardState(), log.scan())

            assert digest(rebuilt) == digest(live)
            assert rebuilt.events_applied == log.count() == sum(map(len, batches))
        finally:
            log.close()


def _envelopes(batches) -> list:
    log = InMemoryEventLog()
    for batch in batches:
        log.append(batch)
    return list(log.scan())


@given(histories(), st.data())
@settings(max_examples=60)
def test_fold_is_associative_over_concatenation(batches, data):
    envelopes = _envelopes(batches)
    cut = data.draw(st.integers(0, len(envelopes)), label="cut")
    a, b = envelopes[:cut], envelopes[cut:]

    assert digest(fold(fold(ShardState(), a), b)) == digest(fold(ShardState(), a + b))


@given(histories())
@settings(max_examples=30)
def test_fold_state_matches_the_log_message_for_message(batches):
    # Guards the digest against being insensitive: the folded messages are exactly the recorded ones.
    envelopes = _envelopes(batches)
    state = fold(ShardState(), envelopes)
    for stream in STREAMS:
        expected = [e.event.text for e in envelopes if e.stream == stream and e.kind == "message_recorded"]
        memory = state.user(*stream)
        got = [memory.messages.by_id[i].text for i in memory.messages.order] if memory else []
        assert got == expected
        embedded = [e.event for e in envelopes if e.stream == stream and e.kind == "message_embedded"]
        active = embedded[0].model_id if embedded else ""  # no switch in these histories: the first model's
        vectors_expected = {e.message_event_id: e.vector for e in embedded if e.model_id == active}
        got_vectors = {k: r.vector.tobytes() for k, r in memory.vectors.rows.items()} if memory else {}
        assert got_vectors == vectors_expected
