"""Consolidation as parallel Ray tasks on a real local Ray gives, user by user, what a sequential run gives.

Five users (two tenants, English and Chinese dialogues over a week) stage the
memories the offline extractor reads from their turns; topic and object labels
get small hashed vectors (dim 8, so unrelated labels collide now and then and
de-duplication has merges to make).
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from actors.consolidation import run_consolidation
from events.errors import InvalidInputError
from events.graph_events import GraphMemoryStaged
from projections.folds.graph import GraphState, fold
from projections.rules.graph_extract import extract_graph_memories
from projections.rules.text import tokenize
from tests.builders import stream

pytestmark = pytest.mark.integration

DIM = 8
START = datetime(2024, 5, 6, 8, 0, tzinfo=UTC)

DIALOGUES = {
    ("acme", "caroline"): ("Caroline", [
        "I went to a support group yesterday and it was really powerful.",
        "My sister adopted a puppy last week.",
        "I went to the yoga class again this morning.",
        "I think the new library is great.",
        "I went to yoga class with my sister on Monday.",
        "I love painting sunsets.",
        "I went to the pottery workshop yesterday.",
        "I went to the support group again today.",
    ]),
    ("acme", "melanie"): ("Melanie", [
        "I signed up for a pottery class last Friday.",
        "My kids love the beach.",
        "We went camping in the mountains last weekend.",
        "I painted a lake sunrise yesterday.",
        "I think the concert was amazing.",
        "I went camping with my family again yesterday.",
        "I read a book about birds this morning.",
        "We went camping at the lake last week.",
    ]),
    ("acme", "xiaohong"): ("小红", [
        "我昨天去了瑜伽课。",
        "我上周去了瑜伽课,然后吃了火锅。",
        "我妹妹养了一只小狗。",
        "我觉得新图书馆很好。",
        "我喜欢打篮球。",
        "我今天早上又去了瑜伽课。",
        "我昨天和朋友吃了火锅。",
    ]),
    ("acme", "xiaoming"): ("小明", [
        "我上周末去了海边。",
        "我喜欢打篮球。",
        "我昨天去了图书馆。",
        "我哥哥买了一辆新车。",
        "我今天又去了图书馆。",
        "我觉得这本书很有意思。",
        "我昨天晚上去了图书馆。",
    ]),
    # The same user id under another tenant: a separate graph, separate event ids.
    ("globex", "caroline"): ("Caroline", [
        "I went to a pottery workshop last Saturday.",
        "My brother bought a new car.",
        "I went to the gym this morning.",
        "I went to the gym again yesterday.",
        "I think the museum is wonderful.",
        "I went to the gym with my brother today.",
    ]),
}


def hashed(label: str) -> np.ndarray:
    """A bag-of-tokens vector hashed to DIM dimensions: deterministic, with collisions by design."""
    v = np.zeros(DIM, dtype=np.float64)
    for token in tokenize(label) or [label]:
        h = int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(), "little")
        v[h % DIM] += 1.0 if h >> 63 else -1.0
    norm = np.linalg.norm(v)
    return (v / norm if norm else v).astype("<f4")


def staged_memories(speaker: str, lines: list[str], first_turn: int = 0) -> list[tuple[str, GraphMemoryStaged]]:
    """(memory id, staged event) for every memory extracted from the turns, one turn per day and a half hour."""
    out = []
    for i, text in enumerate(lines, start=first_turn):
        at = START + timedelta(days=i // 2, minutes=30 * (i % 2))
        for j, c in enumerate(extract_graph_memories(text, speaker=speaker, occurred_at=at)):
            labels = [c.topic, *([c.object] if c.object else [])]
            out.append((f"{speaker}-t{i}-m{j}", GraphMemoryStaged(
                subject=c.subject, memory_type=c.memory_type, topic=c.topic, object=c.object,
                attributes=dict(c.attributes), importance=c.importance, source_turn_ids=(f"t{i}",),
                source_message_ids=(f"msg-{speaker}-{i}",), occurred_at=c.when.start if c.when else at,
                extractor=c.extractor, dim=DIM, vectors={label: hashed(label).tobytes() for label in labels},
            )))
    return out


def build(pairs_by_user: dict, states: dict | None = None) -> dict[tuple[str, str], GraphState]:
    """Fold each user's pairs into (a copy of) that user's state, continuing its stream."""
    out = {}
    for (tenant, user_id), pairs in pairs_by_user.items():
        state = (states or {}).get((tenant, user_id), GraphState()).copy()
        out[(tenant, user_id)] = fold(state, stream(*pairs, tenant=tenant, user_id=user_id,
                                                    first_seq=state.last_seq + 1))
    return out


def jobs_of(states: dict[tuple[str, str], GraphState]) -> list:
    return [(t, u, s, [mid for mid, m in s.memories.items() if m.staged]) for (t, u), s in states.items()]


def comparable(events_by_user: dict) -> dict:
    return {user: [(eid, type(e).__name__, e.model_dump()) for eid, e in events]
            for user, events in events_by_user.items()}


@pytest.fixture(scope="module")
def staged() -> dict[tuple[str, str], GraphState]:
    return build({user: staged_memories(speaker, lines) for user, (speaker, lines) in DIALOGUES.items()})


def test_the_users_stage_a_realistic_graph(staged):
    for user, state in staged.items():
        assert len(state.memories) >= 6, user
        assert all(m.staged for m in state.memories.values())
    kinds = {m.memory_type for s in staged.values() for m in s.memories.values()}
    assert kinds >= {"event", "fact", "relation", "opinion"}


def test_parallel_consolidation_gives_the_sequential_events_and_graph(ray_cluster, staged):
    before = {user: s.canonical() for user, s in staged.items()}
    parallel = run_consolidation(jobs_of(staged), max_in_flight=2)
    sequential = run_consolidation(jobs_of(staged), parallel=False)

    assert list(parallel) == list(staged)  # every user, in job order
    assert comparable(parallel) == comparable(sequential)
    assert {user: s.canonical() for user, s in staged.items()} == before  # the tasks read, never wrote

    kinds = {type(e).__name__ for events in parallel.values() for _, e in events}
    assert kinds >= {"GraphNodesMerged", "GraphEdgeLinked", "GraphMemoriesConsolidated", "GraphConclusionRecorded"}
    ids = [eid for events in parallel.values() for eid, _ in events]
    assert len(ids) == len(set(ids))  # keyed by tenant and user: no two users share an id

    folded_parallel = build(parallel, staged)
    folded_sequential = build(sequential, staged)
    for user in staged:
        assert folded_parallel[user].canonical() == folded_sequential[user].canonical()
        assert not any(m.staged for m in folded_parallel[user].memories.values())

    # Consolidating the same ids again, once the events are applied, decides nothing.
    again = run_consolidation([(t, u, folded_parallel[(t, u)], ids) for t, u, _, ids in jobs_of(staged)],
                              max_in_flight=2)
    assert again == {user: [] for user in staged}


def test_one_task_in_flight_gives_the_same_events(ray_cluster, staged):
    one = run_consolidation(jobs_of(staged), max_in_flight=1)
    assert comparable(one) == comparable(run_consolidation(jobs_of(staged), parallel=False))


def test_a_later_batch_consolidates_alike_in_parallel_and_in_sequence(ray_cluster, staged):
    consolidated = build(run_consolidation(jobs_of(staged), parallel=False), staged)
    more = {
        ("acme", "caroline"): staged_memories("Caroline", ["I went to the yoga class again yesterday.",
                                                           "I went to the support group this morning."], 20),
        ("acme", "xiaohong"): staged_memories("小红", ["我昨天又去了瑜伽课。", "我今天吃了火锅。"], 20),
        ("globex", "caroline"): staged_memories("Caroline", ["I went to the gym this morning."], 20),
    }
    later = build(more, consolidated)
    jobs = jobs_of(later)
    assert all(len(ids) == len(more[(t, u)]) for t, u, _, ids in jobs)  # only the new memories are staged

    parallel = run_consolidation(jobs, max_in_flight=2)
    assert comparable(parallel) == comparable(run_consolidation(jobs, parallel=False))
    assert any(type(e).__name__ == "GraphConclusionRecorded" and e.version > 1
               for events in parallel.values() for _, e in events)  # a grown cluster gets a new version


def test_two_jobs_for_one_user_are_rejected(ray_cluster, staged):
    user = ("acme", "caroline")
    job = (*user, staged[user], list(staged[user].memories))
    with pytest.raises(InvalidInputError, match="one job"):
        run_consolidation([job, job])
    with pytest.raises(InvalidInputError, match="max_in_flight"):
        run_consolidation([job], max_in_flight=0)
    assert run_consolidation([]) == {}
