"""Long-term profile (seed 004): the offline distiller in English and Chinese, and the profile fold
(traits last-writer-wins with their source event, de-duplicated knowledge, the get_user_profile view).
"""

from __future__ import annotations

from datetime import timedelta

from events.envelope import PendingEvent, seal
from events.model import ProfileDistilled
from projections.decisions.distill import DISTILLER_ID, distill_offline
from projections.folds.profile import (
    UserProfile,
    evolve,
    fold,
    knowledge_key,
    user_profile,
)
from tests.builders import T0, message, touch


def pages(*turns: tuple[str, str] | tuple[str, str, str]) -> list[tuple[str, object]]:
    """(role, text[, speaker]) turns as (page id, message) pairs p0, p1, ..."""
    out = []
    for i, turn in enumerate(turns):
        role, text, *speaker = turn
        out.append((f"p{i}", message(text, f"c{i}", role=role, speaker=speaker[0] if speaker else None)))
    return out


def distilled(session_id: str, page_ids: tuple[str, ...], traits=None, user=(), assistant=(), minute: int = 0):
    return ProfileDistilled(session_id=session_id, page_ids=page_ids, traits=traits or {}, user_knowledge=tuple(user),
                            assistant_knowledge=tuple(assistant), heat=5.5, at=T0 + timedelta(minutes=minute),
                            distiller=DISTILLER_ID)


def log(*pairs):
    return [seal(PendingEvent("acme", "alice", eid, ev), n + 1, T0 + timedelta(minutes=n))
            for n, (eid, ev) in enumerate(pairs)]


# -- the offline distiller ------------------------------------------------------------


def test_distiller_id():
    assert DISTILLER_ID == "rules-v1"


def test_english_slot_facts_become_traits_and_other_notes_user_knowledge():
    traits, user, assistant = distill_offline(pages(
        ("user", "I live in Berlin and my favourite color is blue."),
        ("user", "My name is Ana. I work as a nurse."),
        ("user", "I prefer tea over coffee. We decided to use PostgreSQL."),
    ))
    assert traits == {"residence": "Berlin", "favourite:color": "blue", "name": "Ana", "occupation": "a nurse"}
    assert user == ("The user prefers tea over coffee", "Decision: use PostgreSQL")
    assert assistant == ()


def test_chinese_slot_facts_become_traits_and_decisions_user_knowledge():
    traits, user, _ = distill_offline(pages(
        ("user", "我住在上海，我最喜欢的水果是芒果。"),
        ("user", "我叫小明，我的生日是三月五日"),
        ("user", "我们决定改用 PostgreSQL"),
    ))
    assert traits == {"residence": "上海", "favourite:水果": "芒果", "name": "小明", "birthday": "三月五日"}
    assert user == ("决定：改用 PostgreSQL",)


def test_later_page_overrides_a_trait_and_a_negated_slot_is_knowledge():
    traits, user, _ = distill_offline(pages(
        ("user", "I live in Berlin"),
        ("user", "I moved to Munich. I no longer live in Berlin"),
    ))
    assert traits == {"residence": "Munich"}
    assert user == ("The user no longer lives in Berlin",)


def test_named_speakers_keep_separate_traits():
    traits, _, _ = distill_offline(pages(("user", "I live in Boston", "Caroline"),
                                         ("user", "I live in Paris", "Melanie")))
    assert traits == {"Caroline/residence": "Boston", "Melanie/residence": "Paris"}


def test_assistant_statements_become_assistant_knowledge_in_both_languages():
    traits, user, assistant = distill_offline(pages(
        ("assistant", "I recommend running VACUUM ANALYZE weekly on the big tables. Want a script?"),
        ("assistant", "我建议每周清理一次日志文件。"),
        ("assistant", "I live in the cloud"),
        ("system", "I live in Berlin"),
    ))
    assert assistant == (
        "The assistant said: I recommend running VACUUM ANALYZE weekly on the big tables",
        "助手说：我建议每周清理一次日志文件",
        "The assistant lives in the cloud",
    )
    assert traits == {} and user == ()  # neither the assistant nor the system message describes the user


def test_repeated_statements_are_kept_once():
    _, user, _ = distill_offline(pages(("user", "I prefer tea over coffee."), ("user", "I prefer tea over coffee!")))
    assert user == ("The user prefers tea over coffee",)


def test_distiller_is_deterministic():
    turns = pages(("user", "I live in Berlin, I prefer tea"), ("assistant", "Berlin has great tea shops near Mitte."))
    assert distill_offline(turns) == distill_offline(list(turns))


# -- the profile fold -------------------------------------------------------------------


def test_traits_are_last_writer_wins_with_their_source_event():
    profile = fold(UserProfile(), log(
        ("d1", distilled("s-a", ("p0",), {"residence": "Berlin", "name": "Ana"}, minute=1)),
        ("d2", distilled("s-b", ("p5",), {"residence": "Munich"}, minute=9)),
    ))
    assert {n: t.value for n, t in profile.traits.items()} == {"residence": "Munich", "name": "Ana"}
    residence = profile.traits["residence"]
    assert (residence.source_event_id, residence.seq, residence.session_id, residence.at) == (
        "d2", 2, "s-b", T0 + timedelta(minutes=9))
    assert profile.traits["name"].source_event_id == "d1"
    assert profile.distillations == ["d1", "d2"]


def test_knowledge_is_deduplicated_and_keeps_the_first_record():
    profile = fold(UserProfile(), log(
        ("d1", distilled("s-a", ("p0",), user=["The user prefers tea", "决定：改用 PostgreSQL"],
                         assistant=["A said x"])),
        ("d2", distilled("s-b", ("p1",), user=["the user prefers  tea.", "The user owns a bike"],
                         assistant=["A said x"])),
    ))
    assert [k.text for k in profile.user_knowledge] == [
        "The user prefers tea", "决定：改用 PostgreSQL", "The user owns a bike"]
    assert [k.source_event_id for k in profile.user_knowledge] == ["d1", "d1", "d2"]
    assert [k.text for k in profile.assistant_knowledge] == ["A said x"]
    assert knowledge_key("The user prefers  tea.") == knowledge_key("the user prefers tea")


def test_user_profile_view():
    profile = fold(UserProfile(), log(
        ("d1", distilled("s-a", ("p0",), {"residence": "上海", "name": "小明"}, user=["u1"], assistant=["a1"])),
    ))
    assert user_profile(profile) == {"traits": {"name": "小明", "residence": "上海"}, "user_knowledge": ["u1"]}
    assert user_profile(profile, include_knowledge=False, include_assistant_knowledge=True) == {
        "traits": {"name": "小明", "residence": "上海"}, "assistant_knowledge": ["a1"]}
    assert user_profile(UserProfile()) == {"traits": {}, "user_knowledge": []}


def test_other_events_leave_the_profile_alone_and_the_fold_is_deterministic():
    envs = log(("m1", message("I live in Berlin", "c1")), ("t1", touch("m1")),
               ("d1", distilled("s-a", ("m1",), {"residence": "Berlin"}, user=["u1"])))
    assert evolve(UserProfile(), envs[0]).canonical() == UserProfile().canonical()
    whole = fold(UserProfile(), envs).canonical()
    assert fold(UserProfile(), envs).canonical() == whole
    for k in range(len(envs) + 1):
        assert fold(fold(UserProfile(), envs[:k]), envs[k:]).canonical() == whole


def test_distilled_pages_round_trip_into_a_profile():
    turns = pages(("user", "I live in Berlin"), ("user", "我最喜欢的水果是芒果"),
                  ("assistant", "Berlin has many tea shops."))
    traits, user, assistant = distill_offline(turns)
    profile = fold(UserProfile(), log(("d1", distilled("s-p0", ("p0", "p1", "p2"), traits, user, assistant))))
    assert user_profile(profile, include_assistant_knowledge=True) == {
        "traits": {"favourite:水果": "芒果", "residence": "Berlin"},
        "user_knowledge": [],
        "assistant_knowledge": ["The assistant said: Berlin has many tea shops"],
    }
