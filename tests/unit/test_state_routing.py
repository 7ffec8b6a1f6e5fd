"""The shard fold calls a projection only for the event classes it reads, and that changes nothing.

The reference below is the fold as first written: every projection's
``evolve`` for every event. Routed and unrouted folds of the same events
must give the same digest and the same per-event bookkeeping (configs held,
the graph's last seq).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from events.envelope import PendingEvent
from events.erasure_events import UserForgotten
from events.log import InMemoryEventLog
from events.model import MessageRecorded
from events.registry import EVENT_TYPES
from projections.folds.state import CONFIGURED_PROJECTIONS, HANDLED, PROJECTIONS, ShardState, UserMemory, digest, fold, route
from tests.unit.test_properties import ANY_EVENT, STREAMS, memory_touched, message_embedded, message_recorded


def fold_every_projection(state: ShardState, envelopes) -> ShardState:
    for env in envelopes:
        memory = state.users.setdefault(env.stream, UserMemory())
        if isinstance(env.event, UserForgotten):  # the user's projections start afresh, its erasure record kept
            memory = state.users[env.stream] = UserMemory(erasure=memory.erasure)
        for name, step in PROJECTIONS.items():
            setattr(memory, name, step(getattr(memory, name), env))
        for name, (step, config) in CONFIGURED_PROJECTIONS.items():
            setattr(memory, name, step(getattr(memory, name), env, getattr(state, config)))
        memory.head = env.seq
    return state


@st.composite
def mixed_logs(draw):
    """Every event kind over a few streams; embeddings and touches mostly name earlier messages."""
    log, message_ids = InMemoryEventLog(), []
    for n in range(draw(st.integers(1, 30))):
        tenant, user = draw(st.sampled_from(STREAMS[:1] * 3 + STREAMS[1:]))
        known = st.sampled_from(message_ids) if message_ids else st.just("none")
        event = draw(st.one_of(message_recorded, message_embedded(known), memory_touched(known), ANY_EVENT))
        if isinstance(event, MessageRecorded):
            message_ids.append(f"ev-{n}")
        log.append([PendingEvent(tenant, user, f"ev-{n}", event)])
    return list(log.scan())


def test_every_projection_declares_what_it_reads():
    assert set(HANDLED) == set(PROJECTIONS) | set(CONFIGURED_PROJECTIONS)
    assert all(route(cls) for kind, cls in EVENT_TYPES.items() if kind not in ("llm_call_recorded",
                                                                              "graph_proposal_rejected"))


@given(mixed_logs())
@settings(max_examples=80, deadline=None)
def test_routed_fold_equals_calling_every_projection(envelopes):
    routed, every = fold(ShardState(), envelopes), fold_every_projection(ShardState(), envelopes)

    assert digest(routed) == digest(every)
    for stream, memory in every.users.items():
        mine = routed.users[stream]
        assert mine.graph.last_seq == memory.graph.last_seq == memory.head
        assert mine.graph.structure == memory.graph.structure
        assert (mine.retention.fold_digest, mine.episodes.config, mine.tiers.config, mine.working.config) == (
            memory.retention.fold_digest, memory.episodes.config, memory.tiers.config, memory.working.config)
