"""Where one lives, what one dislikes: the phrasings the note rules read (EN, ZH) and the words a turn's fact key
gains from them, so a question worded otherwise finds the turn and a move leaves the old city behind."""

from __future__ import annotations

import pytest

from projections.folds.lexical import BM25Params
from projections.queries.key_index import note_key
from projections.rules.extraction import extract_notes
from projections.rules.note_words import about_words
from tests.unit.test_note_ops import Session, msg


@pytest.mark.parametrize(("said", "note"), [
    ("I'm based in Porto these days.", "The user lives in Porto"),
    ("I'm living in Oslo with my sister.", "The user lives in Oslo with their sister"),
    ("I've lived in Nairobi since 2019, it feels like home.", "The user lives in Nairobi"),
    ("After two months of boxes I'm finally settled in Leeds.", "The user lives in Leeds"),
    ("我在大理生活三年了，空气很好。", "用户住在大理"),
    ("我已经在广州安家了。", "用户住在广州"),
    ("We finally did it: I moved from Leeds to York, and the commute is great.", "The user moved to York"),
    ("Since I moved to Quito I've been sleeping better.", "The user moved to Quito"),
    ("搬到大理以后，我每天都去洱海边跑步。", "用户住在大理"),
])
def test_where_one_lives_is_read_however_it_is_said(said, note):
    [found] = [n for n in extract_notes(said) if n.slot == "residence"]
    assert found.text == note and found.category == "fact"


@pytest.mark.parametrize("said", ["I lived in Rome when I was a student.", "我在这里生活很开心。",
                                  "Where do you live now?", "他搬到上海以后就没联系了。"])
def test_a_past_home_a_place_named_by_this_or_a_question_is_no_residence(said):
    assert not [n for n in extract_notes(said) if n.slot == "residence"]


def test_the_working_place_is_read_with_i_m_too():
    [note] = extract_notes("I'm working for a small bakery now.")
    assert (note.slot, note.text) == ("employer", "The user works at a small bakery")


def test_settling_in_a_new_city_supersedes_the_old_one_in_english_and_chinese():
    for before, after, current in (("I've lived in Oslo for years.", "I'm all settled in Bergen now.",
                                    "The user lives in Bergen"),
                                   ("我在大理生活三年了。", "我已经在昆明安顿下来了。", "用户住在昆明")):
        s = Session()
        s.say(("m1", msg(before)))
        [(_, op)] = s.say(("m2", msg(after, 60)))
        assert (op.op, op.relation) == ("update", "supersedes") and s.active_texts() == [current]


@pytest.mark.parametrize(("said", "note"), [
    ("榴莲我一点都不吃。", "用户一点都不吃榴莲"),
    ("跟你说，苦瓜我从来不碰", "用户从来不碰苦瓜"),
])
def test_a_chinese_dislike_said_object_first_is_a_negative_preference(said, note):
    [found] = extract_notes(said)
    assert (found.category, found.polarity, found.text) == ("preference", "negative", note)


@pytest.mark.parametrize("said", ["他一口都不吃。", "我舍不得离开成都。", "我们不得不加班到很晚。"])
def test_someone_else_s_refusal_regret_and_obligation_are_no_notes(said):
    assert extract_notes(said) == ()


def test_a_prohibition_with_bude_is_still_a_constraint():
    [note] = extract_notes("项目里不得存储用户的身份证号。")
    assert note.category == "constraint" and note.polarity == "negative"


def test_the_fact_key_says_what_a_residence_or_a_dislike_is_about():
    s = Session()
    s.say(("m1", msg("I moved to Denver last spring.")), ("m2", msg("I can't stand raw onion.", 1)),
          ("m3", msg("我很反感榴莲的味道。", 2)), ("m4", msg("I love jazz.", 3)))
    keys = {n.text: note_key(n) for n in s.state.active()}
    assert keys["The user moved to Denver"].endswith("live city")
    assert keys["The user can't stand raw onion"].endswith("hate dislike")
    assert keys["用户很反感榴莲的味道"].endswith("讨厌 不喜欢")
    assert keys["The user loves jazz"] == "The user loves jazz"
    # the words are the fact key's, not the note's key terms: two notes sharing "city" are not about one thing
    assert [n.key_terms for n in s.state.active() if n.slot == "residence"] == [("denver",)]


def test_a_note_naming_a_member_of_a_kind_is_about_that_kind():
    assert about_words("en", None, "decision", "positive", ("falcon", "cassandra")) == "database db 数据库"
    assert about_words("zh", None, "decision", "positive", ("星河", "redis")) == "cache 缓存"
    assert about_words("en", None, "decision", "positive", ("kestrel", "hetzner")).startswith("cloud")  # "hosted?"
    assert about_words("en", None, "fact", "positive", ("falcon",)) == ""


def test_the_notes_index_finds_a_note_by_what_it_is_about_in_english_and_chinese():
    s = Session()
    s.say(("m1", msg("For Kestrel we picked Cassandra.")), ("m2", msg("榴莲我一点都不吃。", 1)),
          ("m3", msg("我已经在昆明安顿下来了。", 2)), ("m4", msg("We decided to ship Kestrel on Fridays.", 3)))
    texts = {n.note_id: n.text for n in s.state.active()}

    def best(query: str) -> str:
        return texts[s.state.search(query, 1, BM25Params())[0][0]]

    assert best("Which database do we use?") == "Decision: picked Cassandra"
    assert best("我最讨厌吃什么？") == "用户一点都不吃榴莲"
    assert best("我现在住在哪个城市？") == "用户住在昆明"


@pytest.mark.parametrize("said", [
    "You must be thrilled about the new job!", "It must add so much warmth to the room.",
    "You must really enjoy those long walks.", "Don't ever give up on your music.",
    "And don't ever forget how far you've come.", "A good raincoat is a must for Scotland.",
    "Must-haves for the trip: sunscreen and a hat.", "The view was stunning, I must say.",
    "Look at this! [image: a photo of a sign saying you must not feed the ducks]",
])
def test_guesses_cheers_recommendations_and_captions_are_no_constraints(said):
    assert [n for n in extract_notes(said) if n.category == "constraint"] == []


@pytest.mark.parametrize(("said", "polarity"), [
    ("Visitors must sign in at the front desk.", "positive"),
    ("Don't ever share the admin password.", "negative"),
    ("Our rule: you must never deploy on Fridays.", "negative"),
])
def test_rules_are_still_constraints(said, polarity):
    [note] = [n for n in extract_notes(said) if n.category == "constraint"]
    assert note.polarity == polarity
