"""The rule contradiction detector (rules-v1): a table of active notes, new statements and verdicts, EN and ZH."""

from __future__ import annotations

import dataclasses

import pytest

from projections.rules.contradiction import (
    DETECTOR_ID,
    ActiveNote,
    Relation,
    Verdict,
    detect,
    memory_operation,
)
from projections.rules.extraction import extract_notes
from projections.rules.text import has_cjk

S, R, C, T = Relation.SUPERSEDES, Relation.REINFORCES, Relation.CONSISTENT, Relation.CHANGE_OVER_TIME

# (active note, new message, relation, rule)
CASES = [
    # seed 000: a switch supersedes the note about the thing switched away from, or of the same kind
    ("the project uses PostgreSQL", "we decided to switch to MySQL", S, "switch"),
    ("We decided to use PostgreSQL", "We decided to switch to MySQL.", S, "switch"),
    ("项目使用 PostgreSQL", "我们决定改用 MySQL", S, "switch"),
    ("数据库用 PostgreSQL", "我们决定改用 MySQL 作为数据库", S, "switch"),
    ("We use Redis for caching", "We're migrating from Redis to Memcached.", S, "switch"),
    ("我们用 Redis 做缓存", "从 Redis 换到 Memcached", S, "switch"),
    ("We use Redis for caching", "We no longer use Redis.", S, "switch"),
    ("我们用 Redis 做缓存", "我们不再使用 Redis", S, "switch"),
    ("I prefer Vim", "Let's replace Vim with VS Code.", S, "switch"),
    ("我喜欢喝咖啡", "我把咖啡换成了茶", S, "switch"),
    # negation of the same key terms
    ("I like coffee", "I don't like coffee", S, "negation"),
    ("我喜欢喝咖啡", "我不喜欢喝咖啡", S, "negation"),
    ("I hate long meetings", "I love long meetings", S, "negation"),
    # the same one-valued slot with another value, or negated
    ("I live in Paris", "I live in Berlin", S, "slot"),
    ("I live in Paris", "I moved to Berlin last year.", S, "slot"),
    ("我住在北京", "我住在上海", S, "slot"),
    ("My birthday is March 3rd", "My birthday is March 5th", S, "slot"),
    ("我在阿里巴巴工作", "我在腾讯工作", S, "slot"),
    ("我最喜欢的颜色是蓝色", "我最喜欢的颜色是绿色", S, "slot"),
    ("我住在北京", "我不住在北京了", S, "slot"),
    # restatements reinforce (BOOST)
    ("We decided to use PostgreSQL", "We decided to use PostgreSQL.", R, "duplicate"),
    ("项目使用 PostgreSQL", "项目使用 PostgreSQL", R, "duplicate"),
    ("I love spicy hotpot", "I really love spicy hotpot!", R, "duplicate"),
    ("我不喜欢香菜", "我真的不喜欢香菜", R, "duplicate"),
    ("I live in Berlin", "I live in Berlin now.", R, "slot"),
    # a state or mood that changed is a change over time, not a contradiction (seed 002)
    ("主人十天前很紧张", "主人现在很放松", T, "state"),
    ("The user was tense ten days ago", "I'm relaxed now.", T, "state"),
    ("I'm tired today", "I feel great, not tired at all now", T, "state"),
    ("我昨天很累", "我今天很开心", T, "state"),
    # unrelated or compatible
    ("I live in Berlin", "We decided to switch to MySQL.", C, "none"),
    ("We use React for the frontend", "We decided to switch to MySQL.", C, "none"),
    ("We must never deploy on Fridays", "We decided to switch to MySQL.", C, "none"),
    ("I prefer tea", "I prefer coffee", C, "none"),
    ("I'm a nurse", "I'm a mother", C, "none"),
    ("我喜欢猫", "我们决定改用 MySQL", C, "none"),
    ("部署环境不能使用 GCP", "我们决定改用 AWS", C, "none"),
    # questions and hypotheticals assert nothing
    ("We decided to use PostgreSQL", "Should we switch to MySQL?", C, "none"),
    ("项目使用 PostgreSQL", "如果我们改用 MySQL 会怎样", C, "none"),
    ("I live in Paris", "What if I moved to Berlin?", C, "none"),
]


@pytest.mark.parametrize(("note", "message", "relation", "rule"), CASES, ids=[f"{c[2]}:{c[1][:24]}" for c in CASES])
def test_verdict_table(note, message, relation, rule):
    (verdict,) = detect(message, [ActiveNote("n1", note)])
    assert (verdict.relation, verdict.rule) == (relation, rule), verdict.reason
    assert verdict.note_id == "n1" and verdict.detector == DETECTOR_ID == "rules-v1"
    assert verdict.reason and 0.0 < verdict.confidence <= 1.0


def test_the_table_covers_every_relation_in_both_languages():
    for relation in Relation:
        rows = [m for _, m, r, _ in CASES if r == relation]
        assert any(has_cjk(m) for m in rows) and any(not has_cjk(m) for m in rows), relation
    assert sum(has_cjk(m) for _, m, *_ in CASES) >= 10 and len(CASES) >= 20


@pytest.mark.parametrize(
    ("old", "new", "kept", "unrelated"),
    [
        ("the project uses PostgreSQL", "we decided to switch to MySQL", "MySQL", "I live in Berlin"),
        ("项目使用 PostgreSQL", "我们决定改用 MySQL", "MySQL", "我住在北京"),
    ],
    ids=["en", "zh"],
)
def test_seed_000_acceptance_postgresql_superseded_by_mysql(old, new, kept, unrelated):
    """Seed 000 v3.0.0: exactly one conflict, the PostgreSQL note; afterwards only the MySQL note is active."""
    active = [ActiveNote("pg", old), ActiveNote("home", unrelated)]
    verdicts = detect(new, active)
    conflicts = [v for v in verdicts if v.relation is Relation.SUPERSEDES]
    assert [v.note_id for v in conflicts] == ["pg"]
    assert {"postgresql", "mysql"} <= set(conflicts[0].matched_terms)
    (replacement,) = extract_notes(new)
    assert kept in replacement.text and has_cjk(replacement.text) == has_cjk(new)
    still_active = [n.text for n in active if n.note_id not in {v.note_id for v in conflicts}] + [replacement.text]
    assert not any("PostgreSQL" in text for text in still_active)
    assert any("MySQL" in text for text in still_active)
    assert memory_operation(verdicts) == "update"


def test_a_candidate_note_is_judged_like_the_message_it_came_from():
    for old, new in [("项目使用 PostgreSQL", "我们决定改用 MySQL"), ("I like coffee", "I don't like coffee")]:
        (candidate,) = extract_notes(new)
        assert detect(candidate, [ActiveNote("n", old)]) == detect(new, [ActiveNote("n", old)])


def test_notes_recorded_from_candidates_keep_their_slot():
    note = ActiveNote.from_candidate("home", extract_notes("I live in Paris")[0])
    assert (note.text, note.slot, note.value) == ("The user lives in Paris", "residence", "Paris")
    (verdict,) = detect("I live in Berlin", [note])
    assert (verdict.relation, verdict.rule) == (Relation.SUPERSEDES, "slot")


def test_slots_of_different_people_do_not_supersede_each_other():
    carol = ActiveNote.from_candidate("c", extract_notes("I live in Paris", speaker="Caroline")[0])
    (verdict,) = detect("I live in Berlin", [carol], speaker="Melanie")
    assert verdict.relation is Relation.CONSISTENT


def test_one_verdict_per_note_in_order_with_the_strongest_clause_winning():
    notes = [ActiveNote("a", "I live in Paris"), ActiveNote("b", "I like coffee"), ActiveNote("c", "I prefer Vim")]
    verdicts = detect("I like coffee. Also, I moved to Berlin.", notes)
    assert [(v.note_id, v.relation) for v in verdicts] == [("a", S), ("b", R), ("c", C)]
    assert detect("Should we switch to MySQL?", []) == ()


def test_memory_operation_follows_the_verdicts():
    def verdict(relation: Relation) -> Verdict:
        return Verdict("n", relation, "r", "why", (), 0.5)

    assert memory_operation([verdict(C), verdict(S), verdict(R)]) == "update"
    assert memory_operation([verdict(C), verdict(R)]) == "boost"
    assert memory_operation([verdict(C), verdict(T)]) == "add"
    assert memory_operation([]) == "add"


def test_detection_is_deterministic_and_verdicts_are_frozen():
    notes = [ActiveNote(str(i), old) for i, (old, *_) in enumerate(CASES)]
    messages = [new for _, new, *_ in CASES]
    assert [detect(m, notes) for m in messages] == [detect(m, notes) for m in messages]
    verdict = detect("I don't like coffee", [ActiveNote("n", "I like coffee")])[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        verdict.relation = Relation.CONSISTENT  # type: ignore[misc]
    assert verdict.relation == "supersedes"  # a string, ready to be recorded in an event


def test_the_shortcut_for_unrelated_pairs_gives_what_the_full_rule_chain_gives():
    """``_judge`` skips the rules when none can fire; every pair of the table, both ways, agrees with the rules."""
    from projections.rules import contradiction as cd

    def full(new, old):
        for rule in cd._RULES:
            if (found := rule(new, old)) is not None:
                return found
        if (found := cd._term_rule(new, old, cd._matches(old.terms, new.terms))) is not None:
            return found
        return cd._verdict(Relation.CONSISTENT, "none", "no rule relates them", cd._matches(old.terms, new.terms), 0.6)

    texts = sorted({t for case in CASES for t in case[:2]})
    notes = [cd._from_note(ActiveNote(f"n{i}", t)) for i, t in enumerate(texts)]
    statements = [s for t in texts for s in cd._from_new(t, None)]
    shortcuts = 0
    for new in statements:
        for old in notes:
            assert cd._judge(new, old) == full(new, old)
            shortcuts += not cd._matches(old.terms, new.terms)
    assert shortcuts > len(statements)  # the shortcut was taken, so the comparison means something
