"""The derived-key lists of the fusion (projections.queries.key_index): facts, neighbour context, Chinese sub-words."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest

from events.graph_events import GraphMemoryStaged
from events.model import NoteContent, NoteOperation
from projections.folds.state import ShardState, fold
from projections.queries import key_index
from projections.queries.retrieval import FusionConfig, fuse
from projections.rules.text import search_tokens, tokenize
from tests.builders import STAGES_OFF, T0, message, stream

BASE = FusionConfig(episode_weight=0.0, note_weight=0.0, graph_weight=0.0, retention_weight=0.0,
                    **STAGES_OFF)


@pytest.fixture
def memory():
    envs = stream(
        ("m1", message("What did you do this weekend?", "c1", speaker="Nate", turn_id="D1:1")),
        ("m2", message("I went to the support group yesterday, it was powerful", "c2", speaker="Caroline",
                       turn_id="D1:2", occurred_at=T0 + timedelta(minutes=1))),
        ("m3", message("That sounds great, tell me more", "c3", speaker="Nate", turn_id="D1:3",
                       occurred_at=T0 + timedelta(minutes=2))),
        ("m4", message("My turtles love the beach", "c4", speaker="Joanna", turn_id="D2:1",
                       conversation_id="conv-2", occurred_at=T0 + timedelta(days=3))),
        ("g1", GraphMemoryStaged(subject="Caroline", memory_type="event", topic="go", object="LGBTQ support group",
                                 attributes={"time": "2024-04-30"}, source_message_ids=("m2",), occurred_at=T0,
                                 extractor="graph-rules-v1")),
        ("n1", NoteOperation(op="add", source_message_ids=("m4",), valid_from=T0, reason="stated", decider="rules-v1",
                             note=NoteContent(category="preference", text="Joanna keeps pet turtles",
                                              subject="Joanna", key_terms=("pet", "turtl")))),
    )
    return fold(ShardState(), envs).user("acme", "alice")


def test_the_fact_key_holds_the_turns_notes_graph_words_and_spelled_dates(memory):
    facts = key_index.turn_facts(memory)
    assert facts["m2"] == ["go LGBTQ support group 2024-04-30"]  # the subject is the speaker: not repeated
    assert facts["m4"] == ["Joanna keeps pet turtles"]
    assert key_index.spelled_dates("on 2024-04-30 and in 2023-07") == "on 2024-04-30 April 30 2024 and in 2023-07 July 2023"
    assert key_index.spelled_dates("2023-13-01") == "2023-13-01"  # not a month: left as written


def test_the_fact_key_names_what_a_note_of_a_known_slot_is_about():
    said = stream(("m1", message("Please remember I can't eat eggs, I'm seriously allergic.", "c1")),
                  ("n1", NoteOperation(op="add", source_message_ids=("m1",), valid_from=T0, reason="stated",
                                       decider="rules-v1", note=NoteContent(category="constraint", slot="allergy",
                                                                            text="Alice is allergic to eggs"))))
    memory = fold(ShardState(), said).user("acme", "alice")
    assert key_index.turn_facts(memory)["m1"] == ["Alice is allergic to eggs allergy allergic food"]
    hits = fuse(memory, "Do I have any food allergies?", [], k=1, config=dataclasses.replace(BASE, fact_weight=1.0))
    assert [h.memory_id for h in hits] == ["m1"]  # "allergies" and "food" are in no word of the turn or its note


def test_fact_list_finds_a_turn_by_what_was_derived_from_it(memory):
    # "April" and "LGBTQ" are in no turn's text; the turn's graph memory resolved "yesterday" and named the group
    query = "Which LGBTQ event was attended in April?"
    assert fuse(memory, query, [], k=10, config=BASE) == []
    cfg = dataclasses.replace(BASE, fact_weight=1.0)
    hits = fuse(memory, query, [], k=10, config=cfg)
    assert hits[0].memory_id == "m2" and hits[0].breakdown["facts_rank"] == 1
    # a note's words reach its source turn: "pet" is only in the note
    pet = fuse(memory, "pet", [], k=10, config=cfg)
    assert [h.memory_id for h in pet] == ["m4"]
    assert pet[0].score == pytest.approx(1.0 / (cfg.rrf_k + 1))
    assert fuse(memory, "pet", [], k=10, config=BASE) == []


def test_context_list_scores_a_turn_with_its_neighbours_in_its_own_conversation(memory):
    cfg = dataclasses.replace(BASE, context_weight=1.0)
    # "weekend" is only in m1: with both neighbours m1 and m2 carry it; m3 is not m1's neighbour
    hits = fuse(memory, "weekend", [], k=10, config=cfg)
    assert {h.memory_id for h in hits} == {"m1", "m2"}
    prev = fuse(memory, "weekend", [], k=10, config=dataclasses.replace(cfg, context_window="prev"))
    assert {h.memory_id for h in prev} == {"m1", "m2"}
    # "beach" is in m4 (conv-2) only: m3 (conv-1, just before it in the log) does not get it
    assert [h.memory_id for h in fuse(memory, "beach", [], k=10, config=cfg)] == ["m4"]
    with pytest.raises(ValueError, match="context_window"):
        fuse(memory, "weekend", [], k=10, config=dataclasses.replace(cfg, context_window="next"))


def test_subword_list_is_for_chinese_queries_and_matches_a_word_inside_a_longer_one():
    assert "运动" in search_tokens("我买了运动鞋") and "运动" not in tokenize("我买了运动鞋")
    envs = stream(("z1", message("我买了一双运动鞋", "z1", speaker="user", turn_id="D1:1")),
                  ("z2", message("今天去公园散步", "z2", speaker="user", turn_id="D1:2",
                                 occurred_at=T0 + timedelta(minutes=1))))
    memory = fold(ShardState(), envs).user("acme", "alice")
    assert fuse(memory, "我喜欢什么运动", [], k=10, config=BASE) == []
    cfg = dataclasses.replace(BASE, subword_weight=1.0)
    hits = fuse(memory, "我喜欢什么运动", [], k=10, config=cfg)
    assert [h.memory_id for h in hits] == ["z1"] and hits[0].breakdown["subwords_rank"] == 1
    # an English query never uses the list
    assert key_index.INDEXES.get(memory, "subwords").doc_ids == ["z1", "z2"]
    assert fuse(memory, "sport", [], k=10, config=cfg) == []


def test_indexes_are_rebuilt_when_the_user_gets_new_turns(memory):
    first = key_index.INDEXES.get(memory, "facts")
    assert key_index.INDEXES.get(memory, "facts") is first
    more = fold(ShardState(), stream(("x1", message("hello", "x1", speaker="Nate", turn_id="D1:1")))).user("acme", "alice")
    assert key_index.INDEXES.get(more, "facts").doc_ids == ["x1"]
    with pytest.raises(ValueError, match="kind"):
        key_index.build(memory, "nope")


def test_a_chinese_query_can_weigh_the_word_list_apart_and_the_score_terms_add_up(memory):
    from projections.queries.score_terms import score_terms
    envs = stream(("z1", message("我买了一双运动鞋", "z1", speaker="user", turn_id="D1:1")),
                  ("z2", message("运动鞋很舒服", "z2", speaker="user", turn_id="D1:2",
                                 occurred_at=T0 + timedelta(minutes=1))))
    zh = fold(ShardState(), envs).user("acme", "alice")
    cfg = dataclasses.replace(BASE, subword_weight=1.3, cjk_lexical_weight=0.0, fact_weight=0.5, context_weight=0.5,
                              fact_cjk=True)
    # by default a Chinese query skips the fact list
    assert all("facts_rank" not in h.breakdown
               for h in fuse(zh, "运动鞋", [], k=10, config=dataclasses.replace(cfg, fact_cjk=False)))
    hits = fuse(zh, "运动鞋", [], k=10, config=cfg)
    assert {h.memory_id for h in hits} == {"z1", "z2"}
    for hit in hits:  # the word list still ranks (its rank is recorded) but weighs nothing for a Chinese query
        terms = score_terms(hit.breakdown, "运动鞋", cfg)
        assert terms["bm25"] == 0.0 and terms["subwords"] > 0 and terms["facts"] > 0 and terms["context"] > 0
        assert sum(terms.values()) == pytest.approx(hit.breakdown["rrf"])
    # an English query keeps lexical_weight
    english = fuse(memory, "turtles", [], k=10, config=cfg)
    assert score_terms(english[0].breakdown, "turtles", cfg)["bm25"] == pytest.approx(cfg.lexical_weight / (cfg.rrf_k + 1))


def test_the_default_ranks_english_turns_by_their_fact_key_and_chinese_ones_by_sub_words(memory):
    from benchmarks.variants import PREVIOUS
    from projections.queries.retrieval import DEFAULT_FUSION, list_weights
    # English: the lexical weight moves to the fact key; Chinese: to the sub-word key; the plain list weighs nothing
    en = list_weights(DEFAULT_FUSION, "When did Caroline go?")
    assert en["lexical"] == 0.0 and en["facts"] == DEFAULT_FUSION.lexical_weight and en["subwords"] == 0.0
    zh = list_weights(DEFAULT_FUSION, "我喜欢什么运动")
    assert zh["lexical"] == 0.0 and zh["subwords"] == DEFAULT_FUSION.lexical_weight and zh["facts"] == 0.0
    assert en["context"] == zh["context"] == DEFAULT_FUSION.context_weight == 0.5
    # the default before the keys (palimpsest_before_keys): the turn's own text ranks, no derived list weighs anything
    before = list_weights(PREVIOUS, "When did Caroline go?")
    assert before["lexical"] == PREVIOUS.lexical_weight
    assert not any(w for kind, w in before.items() if kind not in ("dense", "lexical"))
    # the fact key alone: "April" is only in m2's graph memory (its resolved "yesterday")
    cfg = dataclasses.replace(BASE, fact_key=True)
    hits = fuse(memory, "LGBTQ in April", [], k=10, config=cfg)
    assert hits[0].memory_id == "m2" and hits[0].score == pytest.approx(cfg.lexical_weight / (cfg.rrf_k + 1))


def _writes():
    """A user's log: turns in two interleaved conversations, notes (add, update, boost), graph memories."""
    def turn(i: int, text: str, conv: str = "conv-1", speaker: str = "Nate"):
        return (f"m{i}", message(text, f"c{i}", speaker=speaker, turn_id=f"D1:{i}", conversation_id=conv,
                                 occurred_at=T0 + timedelta(minutes=i)))

    def note(op: str, sources: tuple[str, ...], text: str = "", target: str | None = None):
        content = NoteContent(category="fact", text=text, subject="Nate", key_terms=()) if text else None
        return NoteOperation(op=op, source_message_ids=sources, valid_from=T0, reason="stated", decider="rules-v1",
                             note=content, target_note_id=target)

    return [
        turn(1, "I adopted two turtles last week"),
        turn(2, "Nice! What are their names?", speaker="Joanna"),
        ("n1", note("add", ("m1",), "Nate has pet turtles")),
        turn(3, "My sister moved to Tampa", conv="conv-2", speaker="Joanna"),
        ("g1", GraphMemoryStaged(subject="Joanna", memory_type="event", topic="move", object="Tampa",
                                 attributes={"time": "2023-05-07"}, source_message_ids=("m3",), occurred_at=T0,
                                 extractor="graph-rules-v1")),
        turn(4, "Shelly and Bob, they love the beach"),
        ("n2", note("add", ("m4",), "the turtles are named Shelly and Bob")),
        ("n3", note("boost", ("m2",), target="n1")),  # n1 gains a source turn: m2's fact document changes
        turn(5, "Florida is warm", conv="conv-2"),
        ("n4", note("update", ("m5",), "Joanna's sister lives in Florida", target="n2")),
        ("g2", GraphMemoryStaged(subject="Nate", memory_type="fact", topic="own", object="turtles",
                                 attributes={}, source_message_ids=("m1", "m4"), occurred_at=T0,
                                 extractor="graph-rules-v1")),
        turn(6, "我买了一双运动鞋", conv="conv-2"),
        turn(7, "我搬到青岛了", conv="conv-2"),
        ("n5", NoteOperation(op="add", source_message_ids=("m7",), valid_from=T0, reason="stated", decider="rules-v1",
                             note=NoteContent(category="fact", text="Nate住在青岛", subject="Nate", key_terms=("青岛",),
                                              slot="residence", language="zh"))),  # about: "住 城市"
    ]


@pytest.mark.parametrize("kind", key_index.KINDS)
def test_an_index_kept_up_to_date_after_each_write_equals_one_built_from_scratch(kind):
    """After every write (and a search in between), the incremental index has the rebuilt one's postings and ranks."""
    envs = stream(*_writes())
    state = ShardState()
    cache = key_index._Cache()
    kept = None
    for env in envs:
        state = fold(state, [env])
        memory = state.user("acme", "alice")
        index = cache.get(memory, kind)
        kept = kept or index
        assert index is kept  # updated in place, never rebuilt
        rebuilt = key_index.build(memory, kind)
        assert index.canonical() == rebuilt.canonical() and index.total_len == rebuilt.total_len
        for query in ("turtles Shelly", "sister Florida May 2023", "names beach", "运动", "住在哪个城市"):
            terms = search_tokens(query) if kind == "subwords" else tokenize(query)
            assert index.search_terms(terms, 10, BASE.bm25) == rebuilt.search_terms(terms, 10, BASE.bm25)
    # the writes reached the documents: m2's fact document holds n1's text after the boost
    if kind == "facts":
        assert rebuilt.postings["pet"].keys() == {0, 1}  # m1 (its note) and m2 (the boost)
    if kind == "subwords":  # m7's subword document holds the words of what its note is about
        assert rebuilt.postings["城市"].keys() == {6}


def test_an_index_that_cannot_follow_the_projections_is_rebuilt(memory):
    cache = key_index._Cache()
    first = cache.get(memory, "context")
    memory.messages.by_id = dict(memory.messages.by_id)  # a replaced projection: nothing to follow in place
    memory.head += 1
    again = cache.get(memory, "context")
    assert again is not first and again.canonical() == key_index.build(memory, "context").canonical()


def test_stage_tables_and_conversation_documents_kept_up_to_date_equal_ones_built_from_scratch():
    """The rerank tables and the conversation index follow every write in place, as a rebuild would give them."""
    from projections.queries import rerank, session_docs
    envs = stream(*_writes())
    state = ShardState()
    tables_cache, conversations_cache = rerank.UserTables(), session_docs._Cache()
    kept = None
    for env in envs:
        state = fold(state, [env])
        memory = state.user("acme", "alice")
        tables, conversations = tables_cache.get(memory), conversations_cache.get(memory)
        kept = kept or conversations
        assert conversations is kept
        rebuilt = rerank.build_tables(memory)
        assert (tables.prev_next, tables.speakers, tables.timed, tables.last) == (
            rebuilt.prev_next, rebuilt.speakers, rebuilt.timed, rebuilt.last)
        assert conversations.index.canonical() == session_docs.build(memory).canonical()
        assert conversations.members == {c: [m for m in memory.messages.order
                                             if memory.messages.by_id[m].conversation_id == c]
                                         for c in ("conv-1", "conv-2") if c in conversations.members}
    assert tables.prev_next["m4"] == ("m2", None) and tables.timed == {"m3"}
