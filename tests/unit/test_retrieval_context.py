"""Fusion of dense and lexical candidates, and context assembly under a token budget."""

from __future__ import annotations

import dataclasses
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from projections.adapters.tokens import TokenCounter
from projections.folds.lexical import BM25Params
from projections.folds.state import ShardState, fold
from projections.queries.context import assemble, body_line, format_line
from projections.queries.results import day_header
from projections.queries.retrieval import DEFAULT_FUSION, FusionConfig, Hit, fuse
from tests.builders import STAGES_OFF, T0, embedding, message, stream

UNRANKED = dataclasses.replace(DEFAULT_FUSION, ranker=None, cjk_ranker=None)  # the fusion's own order


# Classic RRF, spelled out so the hand-computed scores do not move when the tuned defaults do.
CLASSIC = FusionConfig(rrf_k=60, dense_weight=1.0, lexical_weight=1.0, episode_weight=0.0, bm25=BM25Params(k1=1.2, b=0.75),
                       **STAGES_OFF)


@pytest.fixture
def memory():
    envs = stream(
        ("m1", message("I adopted a puppy last week", "c1", speaker="Alice", turn_id="D1:1")),
        ("v1", embedding("m1", [1.0, 0.0])),
        ("m2", message("My sister works as a nurse in Boston and loves her job very much", "c2", turn_id="D1:2")),
        ("v2", embedding("m2", [0.0, 1.0])),
        ("m3", message("We went hiking", "c3", conversation_id="conv-2", occurred_at=T0 + timedelta(days=3))),
    )
    return fold(ShardState(), envs).user("acme", "alice")


def test_rrf_fuses_dense_and_lexical_ranks(memory):
    # dense ranks: ghost 1 (unknown to the projections), m2 2, m1 3; lexical "puppy": m1 1
    dense = [("ghost", 0.99), ("m2", 0.9), ("m1", 0.5)]

    hits = fuse(memory, "puppy", dense, k=10, config=CLASSIC)

    assert [(h.memory_id, h.rank) for h in hits] == [("m1", 1), ("m2", 2)]
    m1, m2 = hits
    assert m1.score == pytest.approx(1 / 63 + 1 / 61)
    assert m2.score == pytest.approx(1 / 62)
    assert set(m1.breakdown) == {"dense_rank", "dense_similarity", "lexical_rank", "bm25", "rrf"}
    assert (m1.breakdown["dense_rank"], m1.breakdown["dense_similarity"], m1.breakdown["lexical_rank"]) == (3, 0.5, 1)
    assert m1.breakdown["bm25"] == pytest.approx(memory.lexical.search("puppy", 1, CLASSIC.bm25)[0][1], abs=1e-6)
    assert m1.breakdown["rrf"] == pytest.approx(m1.score, abs=1e-8)
    assert m2.breakdown == {"dense_rank": 2, "dense_similarity": 0.9, "rrf": pytest.approx(1 / 62, abs=1e-8)}


def test_default_fusion_applies_its_own_weights_and_bm25_params(memory):
    cfg = dataclasses.replace(DEFAULT_FUSION, **STAGES_OFF)  # the fusion's own terms, before the later stages
    [m1, m2] = fuse(memory, "puppy", [("m2", 0.9), ("m1", 0.5)], k=10, config=cfg)

    assert m1.score == pytest.approx(cfg.dense_weight / (cfg.rrf_k + 2) + cfg.lexical_weight / (cfg.rrf_k + 1))
    assert m2.score == pytest.approx(cfg.dense_weight / (cfg.rrf_k + 1))
    assert m1.breakdown["bm25"] == pytest.approx(memory.lexical.search("puppy", 1, cfg.bm25)[0][1], abs=1e-6)


def test_fusion_scores_bm25_with_its_own_params(memory):
    custom = dataclasses.replace(CLASSIC, bm25=BM25Params(k1=2.0, b=0.0))
    [hit] = fuse(memory, "puppy", [], k=1, config=custom)

    assert hit.breakdown["bm25"] == pytest.approx(memory.lexical.search("puppy", 1, custom.bm25)[0][1], abs=1e-6)
    assert hit.breakdown["bm25"] != pytest.approx(memory.lexical.search("puppy", 1, CLASSIC.bm25)[0][1], abs=1e-3)


def test_hits_carry_provenance_back_to_the_log(memory):
    [m1] = fuse(memory, "puppy", [("m1", 0.5)], k=1)

    assert m1.provenance == {
        "event_ids": ["m1", "v1"],
        "seq": 1,
        "conversation_id": "conv-1",
        "turn_id": "D1:1",
        "client_message_id": "c1",
    }
    assert (m1.text, m1.speaker, m1.role, m1.occurred_at, m1.turn_id) == (
        "I adopted a puppy last week", "Alice", "user", T0, "D1:1",
    )
    assert m1.to_dict()["occurred_at"] == T0.isoformat()


def test_lexical_only_hit_without_embedding(memory):
    [hit] = fuse(memory, "hiking", [], k=5)

    assert hit.memory_id == "m3"
    # the default ranks an English turn by its fact key (here its own text: nothing was derived from it) and by its
    # context (the turn with its neighbours)
    assert set(hit.breakdown) == {"facts_rank", "facts_bm25", "context_rank", "context_bm25", "conversation_rank",
                                  "conversation_term", "rrf"}
    assert hit.provenance["event_ids"] == ["m3"]
    assert (hit.provenance["conversation_id"], hit.provenance["turn_id"]) == ("conv-2", None)


def test_fusion_weights_are_a_frozen_config_that_reranks(memory):
    dense = [("m2", 0.9), ("m1", 0.5)]
    assert [h.memory_id for h in fuse(memory, "puppy", dense, k=2, config=CLASSIC)] == ["m1", "m2"]

    dense_only = dataclasses.replace(CLASSIC, lexical_weight=0.0)
    assert [h.memory_id for h in fuse(memory, "puppy", dense, k=2, config=dense_only)] == ["m2", "m1"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULT_FUSION.rrf_k = 1  # type: ignore[misc]


def test_fuse_truncates_to_k(memory):
    dense = [("m1", 0.9), ("m2", 0.8), ("m3", 0.7)]
    # (no learned ranker: it would re-order the three by its features, e.g. longer turns first)
    assert [h.memory_id for h in fuse(memory, "nothing matches", dense, k=2, config=UNRANKED)] == ["m1", "m2"]


def words(lines: list[str]) -> list[int]:
    return [len(line.split()) for line in lines]


@pytest.fixture
def ranked(memory) -> list[Hit]:
    # m1: 8 words, m2: 16 words, m3: 5 words once formatted as context lines
    hits = fuse(memory, "no lexical overlap", [("m1", 0.9), ("m2", 0.8), ("m3", 0.7)], k=3, config=UNRANKED)
    assert words([format_line(h) for h in hits]) == [8, 16, 5]
    return hits


def test_context_skips_a_line_that_does_not_fit_and_keeps_smaller_later_ones(ranked):
    ctx = assemble("q", ranked, budget=14, count_tokens=words)

    assert [i.memory_id for i in ctx.items] == ["m1", "m3"]
    assert ctx.tokens == 13 <= ctx.budget == 14
    assert ctx.text == "[2024-05-01]\nAlice: I adopted a puppy last week\n[2024-05-04]\nuser: We went hiking"
    assert [i.line for i in ctx.items] == ["[2024-05-01] Alice: I adopted a puppy last week",
                                           "[2024-05-04] user: We went hiking"]  # each item whole, with its day


@pytest.mark.parametrize(
    ("budget", "expected"),
    [(4, []), (5, ["m3"]), (8, ["m1"]), (13, ["m1", "m3"]), (22, ["m1", "m3"]), (23, ["m1", "m2"]),
     (28, ["m1", "m2", "m3"])],
)
def test_context_never_exceeds_the_budget(ranked, budget, expected):
    # m1 and m2 were said the same day: m2 costs its 15 words without the date m1's line pays
    ctx = assemble("q", ranked, budget=budget, count_tokens=words)
    assert [i.memory_id for i in ctx.items] == expected
    assert ctx.tokens == sum(i.tokens for i in ctx.items) == len(ctx.text.split()) <= budget


def test_a_day_s_date_is_shown_and_paid_once_and_its_turns_follow_in_time_order():
    day = datetime(2024, 5, 1, 9, tzinfo=UTC)
    hits = [replace(_hit(i), text=t, occurred_at=day + timedelta(hours=h), rank=i + 1)
            for i, (t, h) in enumerate([("we moved to Lisbon", 5), ("the flat has a balcony", 1),
                                        ("my sister visits in June", 30)])]
    ctx = assemble("q", hits, budget=100, count_tokens=words)

    assert [i.memory_id for i in ctx.items] == ["m0", "m1", "m2"]  # rank order
    assert [i.tokens for i in ctx.items] == [5 + 1, 6, 6 + 1]  # a day's header (1 word) paid by its first turn taken
    assert ctx.tokens == 19
    assert ctx.text == ("[2024-05-01]\nuser: the flat has a balcony\nuser: we moved to Lisbon\n"
                        "[2024-05-02]\nuser: my sister visits in June")
    assert assemble("q", hits, budget=12, count_tokens=words).text == (  # the second turn of a day costs no date
        "[2024-05-01]\nuser: the flat has a balcony\nuser: we moved to Lisbon")


def test_context_items_keep_their_hit_provenance(ranked):
    ctx = assemble("q", ranked, budget=100, count_tokens=words)

    by_id = {h.memory_id: h for h in ranked}
    for item in ctx.items:
        hit = by_id[item.memory_id]
        assert item.provenance == hit.provenance
        assert (item.turn_id, item.conversation_id, item.score) == (hit.turn_id, hit.conversation_id, hit.score)
        assert item.provenance["event_ids"][0] == item.memory_id
    assert [i["memory_id"] for i in ctx.to_dict()["items"]] == ["m1", "m2", "m3"]


def test_context_budget_with_the_real_tokenizer(ranked):
    counter = TokenCounter()
    ctx = assemble("q", ranked, budget=20, count_tokens=counter.count_many)

    assert ctx.items, "at least one line fits in 20 tokens"
    assert ctx.tokens == sum(counter.count(i.line) for i in ctx.items) <= 20
    assert counter.count(ctx.text) <= 20


def test_context_of_no_hits_is_empty():
    ctx = assemble("q", [], budget=10, count_tokens=words)
    assert (ctx.items, ctx.tokens, ctx.text) == ((), 0, "")


def _hit(i: int) -> Hit:
    return Hit(
        memory_id=f"m{i}", rank=i + 1, score=1.0 / (i + 1), text=f"text {i}", speaker=None, role="user",
        occurred_at=T0, conversation_id="c", turn_id=None, breakdown={}, provenance={"event_ids": [f"m{i}"]},
    )


@given(sizes=st.lists(st.integers(0, 50), max_size=12), budget=st.integers(1, 120))
def test_context_is_a_greedy_fill_in_rank_order(sizes, budget):
    hits = [_hit(i) for i in range(len(sizes))]
    size_of = {format_line(h): s for h, s in zip(hits, sizes)}

    size_of = {body_line(h): s for h, s in zip(hits, sizes)} | {day_header(T0.date().isoformat()): 3}

    ctx = assemble("q", hits, budget, lambda lines: [size_of[line] for line in lines])

    assert ctx.tokens == sum(i.tokens for i in ctx.items) <= budget
    kept = [int(i.memory_id[1:]) for i in ctx.items]
    assert kept == sorted(kept)  # rank order is kept
    assert [i.tokens for i in ctx.items] == [sizes[i] + 3 * (n == 0) for n, i in enumerate(kept)]  # one day: one date
    for j in set(range(len(hits))) - set(kept):  # a line is skipped only if it did not fit when its turn came
        assert sum(sizes[i] for i in kept if i < j) + 3 + sizes[j] > budget  # the day's date: paid once, by one of them


def _two_topics():
    """Conversation a (three turns near e1) and conversation b (three turns near e2): two episodes."""
    items = []
    for conv, vec in (("a", [1.0, 0.0]), ("b", [0.0, 1.0])):
        for i in range(3):
            mid = f"{conv}{i}"
            items.append((mid, message(f"turn {mid}", mid, conversation_id=conv, turn_id=mid)))
            items.append((f"v{mid}", embedding(mid, vec)))
    return fold(ShardState(), stream(*items)).user("acme", "alice")


def test_episode_term_lifts_members_of_the_episode_nearest_the_query():
    memory = _two_topics()
    assert len(memory.episodes.episodes()) == 2
    dense = [("b0", 0.3)]  # the only dense neighbour lies in the other topic
    query_vector = [0.96, 0.28]  # close to topic a's centroid

    with_episodes = fuse(memory, "unrelated words", dense, k=10, config=CLASSIC_EP, query_vector=query_vector)
    without = fuse(memory, "unrelated words", dense, k=10, config=CLASSIC, query_vector=query_vector)

    assert [h.memory_id for h in without] == ["b0"]
    ids = [h.memory_id for h in with_episodes]
    assert ids[0] == "b0" and with_episodes[0].score == pytest.approx(1 / 61 + 1.5 / 62)  # dense 1 + episode 2
    # Topic a's turns had no dense or lexical signal at all; its episode (rank 1) brings them in, ahead of b's rest.
    assert set(ids[1:4]) == {"a0", "a1", "a2"} and set(ids[4:]) == {"b1", "b2"}
    a = with_episodes[1]
    assert a.score == pytest.approx(1.5 / 61)
    assert (a.breakdown["episode_rank"], a.breakdown["episode_id"]) == (1, "a0")


def test_episode_term_needs_the_query_vector():
    memory = _two_topics()
    assert [h.memory_id for h in fuse(memory, "unrelated words", [("b0", 0.3)], k=10, config=CLASSIC_EP)] == ["b0"]


CLASSIC_EP = dataclasses.replace(CLASSIC, episode_weight=1.5, episode_candidates=2)
