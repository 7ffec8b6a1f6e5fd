"""Offline note extraction (rules-v1): a table of English and Chinese messages and the notes they state."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from projections.rules.extraction import (
    CATEGORIES,
    EXTRACTOR_ID,
    CandidateNote,
    extract_notes,
    key_terms,
    split_statements,
)
from projections.rules.text import has_cjk

# (message, category, polarity, normalised note text, key terms the note must carry)
NOTES = [
    # preference
    ("I prefer dark mode in every editor.", "preference", "positive", "The user prefers dark mode in every editor",
     {"dark", "mode", "editor"}),
    ("I really love spicy hotpot!", "preference", "positive", "The user loves spicy hotpot", {"spicy", "hotpot"}),
    ("I hate long meetings.", "preference", "negative", "The user hates long meetings", {"meeting"}),
    ("I don't like cilantro.", "preference", "negative", "The user does not like cilantro", {"cilantro"}),
    ("My favourite colour is blue.", "preference", "positive", "The user's favourite colour is blue",
     {"colour", "blue"}),
    ("我喜欢吃拉面。", "preference", "positive", "用户喜欢吃拉面", {"拉面"}),
    ("我更喜欢用 Vim。", "preference", "positive", "用户更喜欢用 Vim", {"vim"}),
    ("我不喜欢香菜。", "preference", "negative", "用户不喜欢香菜", {"香菜"}),
    ("我最爱吃火锅", "preference", "positive", "用户最爱吃火锅", {"吃火锅"}),
    ("我最喜欢的颜色是蓝色", "preference", "positive", "用户最喜欢的颜色是蓝色", {"颜色", "蓝色"}),
    # decision
    ("We decided to use PostgreSQL for the main store.", "decision", "positive",
     "Decision: use PostgreSQL for the main store", {"postgresql", "store"}),
    ("OK, let's go with React 18 and TypeScript.", "decision", "positive", "Decision: go with React 18 and TypeScript",
     {"react", "typescript"}),
    ("We'll use Redis for caching.", "decision", "positive", "Decision: use Redis for caching", {"redis"}),
    ("We chose Kafka over RabbitMQ.", "decision", "positive", "Decision: chose Kafka over RabbitMQ", {"kafka"}),
    ("We decided to switch to MySQL.", "decision", "positive", "Decision: switch to MySQL", {"mysql"}),
    ("Decision: the service will be deployed on AWS.", "decision", "positive",
     "Decision: the service will be deployed on AWS", {"service", "aws"}),
    ("We decided to use Node.js 18.2 for the API.", "decision", "positive", "Decision: use Node.js 18.2 for the API",
     {"node", "js", "api"}),
    ("We decided not to use Redis.", "decision", "negative", "Decision: not to use Redis", {"redis"}),
    ("The project uses PostgreSQL.", "decision", "positive", "The project uses PostgreSQL", {"postgresql"}),
    ("我们决定用 PostgreSQL 作为主数据库。", "decision", "positive", "决定：用 PostgreSQL 作为主数据库",
     {"postgresql", "数据库"}),
    ("我们决定改用 MySQL", "decision", "positive", "决定：改用 MySQL", {"mysql"}),
    ("就用 Redis 做缓存吧。", "decision", "positive", "决定：用 Redis 做缓存", {"redis", "缓存"}),
    ("我们选择了 Kafka", "decision", "positive", "决定：选择了 Kafka", {"kafka"}),
    ("我们用 React 写前端", "decision", "positive", "决定：用 React 写前端", {"react", "前端"}),
    ("项目使用 PostgreSQL", "decision", "positive", "项目使用 PostgreSQL", {"postgresql"}),
    # constraint
    ("We must not deploy on Fridays.", "constraint", "negative", "Constraint: must not deploy on Fridays",
     {"deploy", "friday"}),
    ("Never commit secrets to the repo.", "constraint", "negative", "Constraint: Never commit secrets to the repo",
     {"secret", "repo"}),
    ("Don't ever push directly to main.", "constraint", "negative", "Constraint: Don't ever push directly to main",
     {"push"}),
    ("Always run the tests before merging.", "constraint", "positive",
     "Constraint: Always run the tests before merging", {"test"}),
    ("部署环境不能使用 GCP", "constraint", "negative", "约束：部署环境不能使用 GCP", {"gcp", "部署"}),
    ("不要在周末部署", "constraint", "negative", "约束：不要在周末部署", {"周末", "部署"}),
    ("禁止使用 root 账号", "constraint", "negative", "约束：禁止使用 root 账号", {"root", "账号"}),
    ("我们必须先跑测试再合并", "constraint", "positive", "约束：必须先跑测试再合并", {"测试", "合并"}),
    # fact
    ("My birthday is March 3rd.", "fact", "positive", "The user's birthday is March 3rd", {"march", "3rd"}),
    ("I live in Berlin with two cats.", "fact", "positive", "The user lives in Berlin with two cats", {"berlin"}),
    ("I moved to Berlin last year.", "fact", "positive", "The user moved to Berlin", {"berlin"}),
    ("I work at a small robotics startup.", "fact", "positive", "The user works at a small robotics startup",
     {"startup"}),
    ("I'm a nurse.", "fact", "positive", "The user is a nurse", {"nurse"}),
    ("My sister is a doctor.", "fact", "positive", "The user's sister is a doctor", {"sister", "doctor"}),
    ("I no longer live in Paris.", "fact", "negative", "The user no longer lives in Paris", {"paris"}),
    ("我的生日是三月五日", "fact", "positive", "用户的生日是三月五日", {"三月", "五日"}),
    ("我住在上海浦东。", "fact", "positive", "用户住在上海浦东", {"上海浦东"}),
    ("我在阿里巴巴工作", "fact", "positive", "用户在阿里巴巴工作", {"阿里巴巴"}),
    ("我是一名程序员", "fact", "positive", "用户是一名程序员", {"程序员"}),
    ("我不再住在北京了", "fact", "negative", "用户不再住在北京", {"北京"}),
]

# Questions, chitchat, hypotheticals and statements about nothing in particular state no note.
NOTHING = [
    # LoCoMo-style small talk: guesses, exclamations and descriptions are not rules.
    "That must have been tough for you",
    "Seeing everyone come together for a shared cause must have been inspiring",
    "Never saw this coming",
    "Never give up!",
    "Always here to cheer you on",
    "You never shy away from a challenge and always try something new",
    "Should we use PostgreSQL?",
    "should we use X",
    "If we decided to use MySQL, we would need a migration.",
    "What if we switched to Vue",
    "Maybe we should use Vue.",
    "We haven't decided yet.",
    "Do you like jazz?",
    "How are you?",
    "haha ok",
    "Sounds great, thanks for the help",
    "I love it here!",
    "I'm a bit tired.",
    "He likes jazz.",
    "You must be joking",
    "let's go with that",  # nothing to resolve "that" against
    "要不要用 MySQL",
    "如果我们决定改用 MySQL，就要迁移数据",
    "我们能不能用 GCP",
    "你喜欢什么颜色？",
    "我们还没决定用哪个数据库",
    "哈哈好的",
    "谢谢你",
    "我是说我们可以试试",
    "",
]


@pytest.mark.parametrize(("message", "category", "polarity", "text", "terms"), NOTES, ids=[n[0][:30] for n in NOTES])
def test_a_stated_note_is_extracted_and_normalised(message, category, polarity, text, terms):
    (note,) = extract_notes(message)
    assert (note.category, note.polarity, note.text) == (category, polarity, text)
    assert terms <= set(note.key_terms)
    assert note.extractor == EXTRACTOR_ID == "rules-v1"
    assert 0.0 < note.confidence <= 1.0 and note.subject == "user"


@pytest.mark.parametrize("message", NOTHING)
def test_questions_chitchat_and_hypotheticals_state_nothing(message):
    assert extract_notes(message) == ()


def test_the_table_covers_every_category_in_both_languages():
    for category in CATEGORIES:
        rows = [m for m, c, *_ in NOTES if c == category]
        assert any(has_cjk(m) for m in rows) and any(not has_cjk(m) for m in rows), category
    chinese = [m for m, *_ in NOTES if has_cjk(m)] + [m for m in NOTHING if has_cjk(m)]
    assert len(chinese) >= 20 and len(NOTES) + len(NOTHING) - len(chinese) >= 20


@pytest.mark.parametrize(("message", "category", "polarity", "text", "terms"), NOTES, ids=[n[0][:30] for n in NOTES])
def test_a_note_keeps_the_language_of_its_message(message, category, polarity, text, terms):
    (note,) = extract_notes(message)
    assert note.language == ("zh" if has_cjk(message) else "en")
    assert has_cjk(note.text) == has_cjk(message)  # never translated


def test_one_message_can_state_several_notes_in_order():
    assert [n.text for n in extract_notes("I live in Berlin, and I prefer tea.")] == [
        "The user lives in Berlin",
        "The user prefers tea",
    ]
    assert [(n.text, n.polarity) for n in extract_notes("我喜欢猫，但是我不喜欢狗")] == [
        ("用户喜欢猫", "positive"),
        ("用户不喜欢狗", "negative"),
    ]
    assert len(extract_notes("We decided to use PostgreSQL. We decided to use PostgreSQL!")) == 1


def test_the_previous_message_resolves_an_agreement():
    (note,) = extract_notes("Sounds good, let's go with that.", previous="Should we use PostgreSQL for the store?")
    assert note.text == "Decision: go with PostgreSQL for the store" and "postgresql" in note.key_terms
    (zh,) = extract_notes("好，就用这个吧", previous="要不要用 PostgreSQL？")
    assert zh.text == "决定：用 PostgreSQL" and zh.language == "zh"
    assert note.confidence < extract_notes("Let's go with PostgreSQL.")[0].confidence  # inferred, so less sure


def test_the_speaker_is_the_subject():
    (note,) = extract_notes("I prefer my coffee black.", speaker="Caroline")
    assert (note.subject, note.text) == ("Caroline", "Caroline prefers their coffee black")
    (zh,) = extract_notes("我住在杭州", speaker="小明")
    assert (zh.subject, zh.text) == ("小明", "小明住在杭州")


def test_one_valued_facts_carry_their_slot_and_value():
    slots = {n.slot: n.value for m in ("I live in Berlin.", "My birthday is May 1.", "我在腾讯工作", "I'm 34 years old")
             for n in extract_notes(m)}
    assert slots == {"residence": "Berlin", "birthday": "May 1", "employer": "腾讯", "age": "34"}
    assert extract_notes("My favourite drink is tea")[0].slot == "favourite:drink"
    assert extract_notes("I prefer tea")[0].slot is None


def test_key_terms_leave_out_pattern_words_and_time_words():
    assert key_terms("We decided to switch to MySQL now") == ("mysql",)
    assert key_terms("主人十天前很紧张") == ("主人", "紧张")
    assert key_terms("Rewrite the backend in Go") == ("rewrite", "backend", "golang")


def test_split_statements_drops_questions_and_hypotheticals():
    assert split_statements("Should we use X? We use Y. If we used Z, fine.") == ("We use Y",)
    assert split_statements("要不要用 MySQL？项目使用 PostgreSQL。") == ("项目使用 PostgreSQL",)


def test_extraction_is_deterministic_and_notes_are_frozen():
    messages = [m for m, *_ in NOTES]
    assert [extract_notes(m) for m in messages] == [extract_notes(m) for m in messages]
    note = extract_notes("I prefer tea")[0]
    assert isinstance(note, CandidateNote)
    with pytest.raises(dataclasses.FrozenInstanceError):
        note.text = "x"  # type: ignore[misc]


_CLAUSE_WORDS = ("I", "i'm", "I've", "my", "we", "We'll", "let's", "lets", "our", "team", "the", "project", "uses",
                 "decided", "agreed", "to", "must", "not", "mustn't", "never", "always", "ever", "don't", "allowed",
                 "forbidden", "like", "love", "hate", "prefer", "favourite", "colour", "is", "live", "in", "Paris",
                 "work", "at", "Acme", "switched", "Decision:", "verdict:", "use", "Postgres", "tea", "you", "should",
                 "store", "keys", "am", "a", "teacher", "have", "two", "cats", "birthday", "name", "Ann", ",", ".")


@given(words=st.lists(st.sampled_from(_CLAUSE_WORDS), max_size=10))
def test_the_english_trigger_only_skips_clauses_no_rule_reads(words):
    """A clause without one of EN_TRIGGER's words is not read by the English rules: the notes are those of every rule
    run on every clause."""
    import re

    from projections.rules import extraction

    text = " ".join(words)
    quick = extraction._extract_notes.__wrapped__(text, None, None)
    saved = extraction.EN_TRIGGER
    extraction.EN_TRIGGER = re.compile("")  # every clause passes: every English rule runs
    try:
        assert extraction._extract_notes.__wrapped__(text, None, None) == quick
    finally:
        extraction.EN_TRIGGER = saved


# One clause for each English rule, in the table's order.
_ONE_PER_RULE = (
    "I'm allergic to peanuts", "I'm no longer vegetarian", "I'm vegan", "I have type 2 diabetes", "I can't swim",
    "I must avoid gluten", "Reminder: never store card numbers", "I don't like olives", "I hate mornings", "my favourite colour is green", "I love jazz", "I switched to tea",
    "I'm a big fan of chess", "Decision: ship on Friday", "the project uses Postgres", "we decided to use Redis",
    "let's go with Rust", "we chose Kafka", "we're moving the site to AWS", "we use Slack", "keys must not leave the box",
    "never store passwords in git", "everyone must sign the form", "always use UTC", "my birthday is May 3",
    "my name is Ann", "I don't live in Oslo anymore", "I live in Paris", "I moved to Berlin",
    "I don't work at Acme anymore", "I work at Acme", "I work as a nurse", "I'm 34 years old", "I'm from Lyon",
    "I am a teacher", "I have two cats", "my car is red",
)


def test_each_english_rule_has_a_clause_that_passes_the_trigger():
    from projections.rules.note_rules import EN_RULES, EN_TRIGGER

    assert len(_ONE_PER_RULE) == len(EN_RULES)
    for clause, rule in zip(_ONE_PER_RULE, EN_RULES):
        assert rule.pattern.search(clause), clause
        assert EN_TRIGGER.search(clause), clause


def test_a_rule_gate_matches_exactly_where_its_rule_does():
    """The linear gate of a ``(?P<o>.*?X.+)`` rule is a test of the rule itself: same clauses, either way."""
    from projections.rules.extraction import _RULE_SETS

    gated = [(rule, gate) for rule, gate in _RULE_SETS[True, True] if gate is not None]
    assert len(gated) == 3  # 改用/换成…, 不能/禁止…, 必须/务必…
    clauses = ["我们决定改用MySQL", "改用", "改用了", "以后不能\n再用它", "不能", "禁止吸烟", "你必须来", "必须",
               "不得存储", "舍不得走", "不得不去", "不得",
               "我喜欢咖啡", "we must use Go", "千万不要忘了", "MUST 务必x", ""]
    for rule, gate in gated:
        for clause in clauses:
            assert (gate.search(clause) is not None) == (rule.pattern.search(clause) is not None), (rule, clause)


@given(st.lists(st.sampled_from(["我", "们", "不", "能", "改用", "必须", "务必", "禁止", "别再", "x", " ", "\n", "了"]),
                max_size=12))
def test_rule_gates_on_generated_clauses(parts):
    from projections.rules.extraction import _RULE_SETS

    clause = "".join(parts)
    for rule, gate in _RULE_SETS[False, True]:
        if gate is not None:
            assert (gate.search(clause) is not None) == (rule.pattern.search(clause) is not None)
