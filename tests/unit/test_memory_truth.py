"""Memory that stays true, on pure folds and queries: superseded turns demoted and labelled (the version in force
lifted, time travel unchanged), contexts that keep a turn its notes carry only in part, constraints that never
fade, and reads of superseded turns that reinforce nothing."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest

from events.model import MessageSuperseded, NoteContent, NoteOperation
from projections.decisions.turn_supersession import decide_turn_supersessions
from projections.folds.policy import RetentionPolicy
from projections.folds.retention import archival_candidates, retention_scores, retention_table
from projections.folds.state import ShardState, fold
from projections.queries import stages
from projections.queries.context import NOTE_LINE, NoteEntry, assemble
from projections.queries.note_coverage import carried_share, statements, uncarried
from projections.queries.retrieval import FusionConfig, fuse
from projections.queries.supersession import superseded_turns
from projections.rules.extraction import extract_notes
from projections.rules.text import query_tokens
from projections.rules.turn_change import changes
from tests.builders import STAGES_OFF, T0, message, stream

SWITCH = T0 + timedelta(days=30)
PLAIN = FusionConfig(episode_weight=0.0, note_weight=0.0, graph_weight=0.0, retention_weight=0.0, **STAGES_OFF)


def _words(lines: list[str]) -> list[int]:
    return [len(line.split()) for line in lines]


def _note(op: str, text: str, source: str, at, category: str = "decision", target: str | None = None):
    content = NoteContent(category=category, text=text, key_terms=tuple(text.lower().split()[-2:]))
    return NoteOperation(op=op, note=content, target_note_id=target, source_message_ids=(source,), valid_from=at,
                         reason="test", decider="rules-v1")


@pytest.fixture
def memory():
    envs = stream(
        ("old", message("We decided to use PostgreSQL for the Atlas database", "c1", turn_id="D1:1")),
        ("new", message("Change of plan: Atlas moves to MySQL", "c2", turn_id="D2:1", occurred_at=SWITCH)),
        ("rule", message("We must not store phone numbers", "c3", turn_id="D2:2", occurred_at=SWITCH)),
        ("n1", _note("add", "Decision: use PostgreSQL for Atlas", "old", T0)),
        ("n2", _note("update", "Decision: switch Atlas to MySQL", "new", SWITCH, target="n1")),
        ("n3", _note("add", "Constraint: must not store phone numbers", "rule", SWITCH, category="constraint")),
    )
    return fold(ShardState(), envs).user("acme", "alice")


def test_a_superseded_turn_is_demoted_and_labelled_and_the_version_in_force_takes_its_place(memory):
    hits = fuse(memory, "PostgreSQL database for Atlas", [], k=3, config=PLAIN, now=SWITCH + timedelta(days=1))
    assert [h.memory_id for h in hits][:2] == ["new", "old"]
    new, old = hits[:2]
    assert old.breakdown["superseded"] == f'superseded by "Decision: switch Atlas to MySQL" on {SWITCH.date()}'
    assert old.breakdown["superseded_by"] == ["new"] and old.breakdown["superseded_by_note"] == "n2"
    assert new.breakdown["supersedes"] == "old" and "superseded" not in new.breakdown
    # the ablation leaves the lexical order: the old turn first, unlabelled
    off = fuse(memory, "PostgreSQL database for Atlas", [], k=3, config=stages.without(PLAIN, "supersession"))
    assert off[0].memory_id == "old" and "superseded" not in off[0].breakdown


def test_time_travel_before_the_change_sees_the_old_turn_as_current(memory):
    before = fuse(memory, "PostgreSQL database for Atlas", [], k=3, config=PLAIN, now=SWITCH - timedelta(days=1))
    assert [h.memory_id for h in before] == ["old"] and "superseded" not in before[0].breakdown
    assert superseded_turns(memory.notes, SWITCH - timedelta(seconds=1)) == {}
    assert set(superseded_turns(memory.notes, SWITCH)) == {"old"}


def test_the_history_is_still_reached_with_every_scope(memory):
    everything = fuse(memory, "PostgreSQL", [], k=5, config=PLAIN, now=SWITCH, scope="all")
    assert "old" in [h.memory_id for h in everything]


def test_a_turn_that_also_states_something_still_true_is_not_superseded():
    envs = stream(
        ("m", message("We use PostgreSQL and we must not store phone numbers", "c1")),
        ("n1", _note("add", "Decision: use PostgreSQL", "m", T0)),
        ("n2", _note("add", "Constraint: must not store phone numbers", "m", T0, category="constraint")),
        ("m2", message("We switched to MySQL", "c2", occurred_at=SWITCH)),
        ("n3", _note("update", "Decision: switch to MySQL", "m2", SWITCH, target="n1")),
    )
    memory = fold(ShardState(), envs).user("acme", "alice")
    assert superseded_turns(memory.notes) == {}


def _entry(note_id: str, text: str, source: str, category: str = "preference") -> NoteEntry:
    return NoteEntry(note_id, category, text, 1, T0, (source,), (source,), "conv-1", 1.0)


def test_a_turn_stays_in_the_context_unless_its_notes_carry_all_of_it(memory):
    [hit] = fuse(memory, "Atlas MySQL", [], k=1, config=PLAIN)
    only_half = [_entry("a", "Decision: Atlas plans", hit.memory_id)]
    kept = assemble("q", [hit], 100, _words, only_half, note_tokens=50, note_share=0.5)
    assert [i.memory_id for i in kept.items] == [hit.memory_id]  # the turn stays; its note, now redundant, goes
    other = _entry("b", "Decision: Atlas plans", "elsewhere")
    both = assemble("q", [hit], 100, _words, [*only_half, other], note_tokens=50, note_share=0.5)
    assert [i.memory_id for i in both.items] == ["b", hit.memory_id]
    whole = [_entry("a", "Decision: Atlas moves to MySQL, a change of plan", hit.memory_id)]
    stated = assemble("q", [hit], 100, _words, whole, note_tokens=50, note_share=0.5)
    assert [i.memory_id for i in stated.items] == ["a"]


def test_a_superseded_turn_leaves_the_context_when_the_version_in_force_is_in_it(memory):
    hits = fuse(memory, "PostgreSQL database for Atlas", [], k=3, config=PLAIN, now=SWITCH)
    ctx = assemble("q", hits, 200, _words)
    assert "new" in [i.memory_id for i in ctx.items] and "old" not in [i.memory_id for i in ctx.items]
    alone = assemble("q", [h for h in hits if h.memory_id == "old"], 200, _words)
    assert alone.items[0].line.endswith(f'(superseded by "Decision: switch Atlas to MySQL" on {SWITCH.date()})')


@pytest.mark.parametrize(("text", "notes", "share"), [
    ("I'm vegetarian and I hate cilantro", ["Alice hates cilantro"], 0.5),
    ("I'm vegetarian and I hate cilantro", ["Alice hates cilantro", "Alice is vegetarian"], 1.0),
    ("我叫小李。我对花生过敏", ["小李叫小李"], 0.6),
    ("我叫小李。我对花生过敏", ["小李叫小李", "小李对花生过敏"], 1.0),
    ("ok", [], 1.0),
])
def test_the_share_of_a_turn_its_notes_carry_in_english_and_chinese(text, notes, share):
    assert carried_share(text, notes) == pytest.approx(share)


@pytest.mark.parametrize(("said", "note"), [
    ("I'm vegetarian and I hate cilantro", "Alice is vegetarian"),
    ("I have a severe peanut allergy", "Alice has a severe peanut allergy"),
    ("I am allergic to shellfish", "Alice is allergic to shellfish"),
    ("I have type 2 diabetes", "Alice has type 2 diabetes"),
    ("I can't swim", "Alice can't swim"),
    ("我对花生过敏", "Alice对花生过敏"),
    ("我是素食者", "Alice是素食者"),
    ("我有高血压", "Alice有高血压"),
    ("我不能喝酒", "Alice不能喝酒"),
])
def test_health_diet_allergy_and_safety_statements_are_constraints(said, note):
    assert ("constraint", note) in [(n.category, n.text) for n in extract_notes(said, speaker="Alice")]


def test_a_message_stating_a_constraint_in_force_never_fades_nor_is_archived(memory):
    policy = RetentionPolicy()
    late = SWITCH + timedelta(days=400)
    pinned = memory.notes.constraint_sources(late)
    assert pinned == {"rule"}
    rows = {r.memory_id: r for r in retention_table(memory.retention, late, policy, pinned)}
    assert rows["rule"].exempt and rows["rule"].retention == policy.base_retention
    assert "constraint" in rows["rule"].why and rows["old"].archive
    assert "rule" not in {r.memory_id for r in archival_candidates(memory.retention, late, policy, pinned)}
    assert "rule" in {r.memory_id for r in archival_candidates(memory.retention, late, policy)}  # without the pin
    assert retention_scores(memory.retention, late, policy, ["rule"], pinned) == {"rule": policy.base_retention}
    assert memory.notes.constraint_sources(T0) == frozenset()  # not yet stated then


def test_the_supersession_factor_is_a_fusion_field_and_its_ablation_names_it():
    assert dataclasses.fields(FusionConfig) and FusionConfig().supersession_factor < 1.0
    assert stages.BY_NAME["supersession"].off == {"supersession_factor": 1.0}


def test_a_context_takes_safety_constraints_and_what_the_question_reaches_before_other_constraints():
    notes = [
        dataclasses.replace(_entry("junk", "Constraint: the soup must be hot", "m1", "constraint"), offered=True),
        _entry("pref", "Alice hates cilantro", "m2"),
        dataclasses.replace(_entry("nuts", "Alice is allergic to peanuts", "m3", "constraint"), offered=True,
                            safety=True),
    ]
    ctx = assemble("q", [], 100, _words, notes, note_tokens=100, note_share=1.0)
    assert [i.memory_id for i in ctx.items] == ["nuts", "pref", "junk"]
    tight = assemble("q", [], 9, _words, notes, note_tokens=100, note_share=1.0)
    assert [i.memory_id for i in tight.items] == ["nuts"]  # 6 words: neither other line fits beside it


@pytest.mark.parametrize(("said", "old"), [
    ("Small update: I've switched from oolong tea to hot chocolate.", ["oolong tea"]),
    ("These days it's chai for me, I've pretty much stopped drinking green tea.", ["green tea"]),
    ("I swapped bouldering for sailing on weekends, it's a nice change.", ["bouldering"]),
    ("Big news: I moved to Berlin! Leaving Lisbon was hard, but the new flat is lovely.", ["Lisbon"]),
    ("New plan: Atlas goes live on May 20 instead of April 2.", ["April 2"]),
    ("Big Atlas change: we're moving from PostgreSQL on AWS to MySQL on Azure.", ["PostgreSQL", "AWS"]),
    ("星河那边改主意了，数据库从PostgreSQL换成MySQL。", ["PostgreSQL"]),
    ("跟你说一下，我最近不喝绿茶了，改喝黑咖啡。", ["绿茶"]),
    ("新计划：星河改在四月二日上线，不是三月十四日了。", ["三月十四日"]),
    ("星河大调整：从阿里云上的PostgreSQL换成腾讯云上的MySQL。", ["阿里云", "PostgreSQL"]),
])
def test_a_change_names_the_value_it_leaves_behind(said, old):
    assert [p for c in changes(said) for p in c.phrases] == old


@pytest.mark.parametrize("said", ["Should we switch from Vim to Emacs?", "如果从阿里云换成腾讯云会怎样？",
                                  "I moved to Berlin last year.", "We had a great time in Lisbon.",
                                  "I decided to have dessert instead of drinks.", "I stopped by the store on my way",
                                  "It's a great way to switch off and focus", "I'm off to go swimming with the kids"])
def test_questions_hypotheticals_and_plain_statements_leave_nothing_behind(said):
    assert changes(said) == ()


def test_a_change_supersedes_the_earlier_turns_and_replies_that_state_the_old_value_as_events():
    user = dict(role="user", speaker="Maya")
    said = [
        ("t1", message("My go-to drink is oolong tea, I have it all day long.", "c1", **user)),
        ("t2", message("Oolong tea, noted!", "c2", role="assistant", speaker="assistant")),
        ("t3", message("Sam says oolong tea is overrated.", "c3", role="user", speaker="Sam")),
        ("t4", message("我每天早上都要喝绿茶", "c4", **user)),
        ("n1", _note("add", "Maya's go-to drink is oolong tea", "t1", T0, category="preference")),
        ("n2", _note("add", "Maya drinks it all day", "t1", T0, category="preference")),
    ]
    memory = fold(ShardState(), stream(*said)).user("acme", "alice")
    change = message("Small update: I've switched from oolong tea to hot chocolate.", "c5", occurred_at=SWITCH,
                     **user)
    ids = iter(f"e{i}" for i in range(10))
    [(event_id, event), (retract_id, retract)] = decide_turn_supersessions(memory, [("t5", change)], lambda: next(ids))
    assert isinstance(event, MessageSuperseded)
    assert (event.message_event_ids, event.by_message_event_id, event.valid_from) == (("t1", "t2"), "t5", SWITCH)
    assert (retract.op, retract.target_note_id, retract.source_message_ids) == ("delete", "n1", ("t5",))  # not n2
    state = fold(ShardState(), stream(*said, ("t5", change), (event_id, event), (retract_id, retract)))
    later = state.user("acme", "alice")
    assert [n.note_id for n in later.notes.active()] == ["n2"]
    assert decide_turn_supersessions(later, [("t6", change)], lambda: next(ids)) == []  # already superseded
    index = superseded_turns(later.notes, SWITCH, later.messages.by_id)
    assert set(index) == {"t1", "t2"} and index["t1"].label.startswith('superseded by "Small update')
    assert superseded_turns(later.notes, T0, later.messages.by_id) == {}  # not yet, then


def test_the_gate_of_the_change_rules_passes_every_clause_a_rule_reads():
    """A clause the gate stops is one no change pattern would read: the same changes with the gate open."""
    import re

    from projections.rules import turn_change

    said = ["I switched from Vim to Emacs", "I swapped chess for go", "Zed instead of Vim now", "we moved Atlas off AWS",
            "I gave up on tea, it's coffee now", "Leaving Oslo was hard, the new flat is great",
            "My Pixel finally died, so I got myself a new one", "Monday clashed with lunch",
            "I don't drink soda any more", "从阿里云换成腾讯云", "把华为换成了小米", "不喝绿茶了", "绿茶基本不碰了",
            "离开杭州还挺舍不得的", "不是三月了", "周一冲突太多", "用MySQL替换PostgreSQL", "I like tea", "我喜欢茶"]
    gated = [turn_change.changes(s) for s in said]
    turn_change.changes.cache_clear()
    saved, turn_change._GATE = turn_change._GATE, re.compile("")
    try:
        assert [turn_change.changes(s) for s in said] == gated
    finally:
        turn_change._GATE = saved
        turn_change.changes.cache_clear()
    assert sum(bool(g) for g in gated) == len(said) - 2


def test_a_note_line_is_its_category_and_text_dated_only_where_the_day_matters():
    first = _entry("a", "Priya works at a bakery in Porto", "t1", "fact")
    changed = dataclasses.replace(first, note_id="b", text="Priya works at a library", version=2)
    plain = assemble("Where does Priya work?", [], 100, _words, [first, changed], note_tokens=50, note_share=0.5)
    assert [i.line for i in plain.items] == ["[fact] Priya works at a bakery in Porto",
                                            f"[fact] Priya works at a library (since {T0.date().isoformat()})"]
    for when in ("When did Priya start at the bakery?", "小李什么时候开始在面包店上班的？"):
        asked = assemble(when, [], 100, _words, [first], note_tokens=50, note_share=0.5)
        assert [i.line for i in asked.items] == [f"[fact] Priya works at a bakery in Porto (since {T0.date().isoformat()})"]
    assert all(NOTE_LINE.match(i.line) for i in plain.items) and not NOTE_LINE.match("[2024-05-03] Priya: hi")


def test_a_category_is_shown_and_paid_once_above_its_notes(memory):
    first = _entry("a", "Priya works at a bakery in Porto", "t1", "fact")
    tea = _entry("b", "Priya drinks green tea", "t2", "preference")
    cat = _entry("c", "Priya has a cat", "t3", "fact")
    ctx = assemble("q", [], 100, _words, [first, tea, cat], note_tokens=50, note_share=0.5)
    assert [i.line for i in ctx.items] == ["[preference] Priya drinks green tea",  # each item whole, with its category
                                           "[fact] Priya works at a bakery in Porto", "[fact] Priya has a cat"]
    assert [i.tokens for i in ctx.items] == [4 + 1, 7 + 1, 4]  # the header (a word) paid by its category's first
    assert ctx.text == ("[preference]\nPriya drinks green tea\n"
                        "[fact]\nPriya works at a bakery in Porto\nPriya has a cat")
    assert ctx.tokens == sum(i.tokens for i in ctx.items) == len(ctx.text.split())
    # the bakery's turn costs fewer words whole than its note and the clause the note leaves: shown whole, its note
    # goes, and the category's next note pays the header
    said = dataclasses.replace(fuse(memory, "Atlas MySQL", [], k=1, config=PLAIN)[0], speaker="Priya",
                               text="I work at a bakery in Porto, near the river")
    bakery = dataclasses.replace(first, source_ids=(said.memory_id,), turn_ids=(said.memory_id,))
    ctx = assemble("q", [said], 100, _words, [bakery, cat], note_tokens=50, note_share=0.5)
    assert [(i.memory_id, i.tokens) for i in ctx.items] == [("c", 4 + 1), (said.memory_id, 11 + 1)]
    assert ctx.text.startswith("[fact]\nPriya has a cat\n[") and ctx.tokens == len(ctx.text.split())


def test_a_turn_its_notes_carry_in_part_is_shown_by_the_clauses_they_leave_out(memory):
    assert uncarried("I'm vegetarian and I hate cilantro", ["Alice hates cilantro"]) == "… I'm vegetarian"
    assert uncarried("我叫小李。我对花生过敏", ["小李叫小李"]) == "… 我对花生过敏"
    assert uncarried("I'm vegetarian and I hate cilantro", ["Alice likes jazz"]) == "I'm vegetarian and I hate cilantro"
    assert uncarried("I'm vegetarian and I hate cilantro", ["Alice hates cilantro", "Alice is vegetarian"]) is None
    hit = dataclasses.replace(fuse(memory, "Atlas MySQL", [], k=1, config=PLAIN)[0],
                              text="I'm vegetarian and I really hate cilantro")
    note = [_entry("a", "Alice hates cilantro", hit.memory_id)]

    def cheap_notes(lines: list[str]) -> list[int]:  # a turn's line costs its words, any other line one token
        return [len(line.split()) if ": " in line else 1 for line in lines]

    ctx = assemble("q", [hit], 100, cheap_notes, note, note_tokens=50, note_share=0.5)
    assert [i.memory_id for i in ctx.items] == ["a", hit.memory_id]  # the note stays: the turn is not all there
    assert ctx.items[1].line.endswith(": … I'm vegetarian")
    assert ctx.tokens == 1 + 1 + 1 + 4  # category, note, day, "who: … I'm vegetarian"
    # in words, the note's line costs more than the clauses it spares: the turn is shown whole, the note goes
    whole = assemble("q", [hit], 100, _words, note, note_tokens=50, note_share=0.5)
    assert [i.line.split(": ", 1)[1] for i in whole.items] == ["I'm vegetarian and I really hate cilantro"]
    kept = assemble("q", [hit], 100, cheap_notes, note, note_tokens=50, note_share=0.5, note_coverage=1.01)
    assert [i.memory_id for i in kept.items] == [hit.memory_id]  # coverage above 1: every turn whole


def test_the_rest_of_a_turn_goes_where_its_score_weighed_by_what_its_notes_leave_out_puts_it(memory):
    atlas, mysql = fuse(memory, "Atlas MySQL phone", [], k=2, config=PLAIN)[:2]
    diet = dataclasses.replace(atlas, speaker="Alice", text="I'm vegetarian and I really hate cilantro", score=1.0,
                               breakdown={})
    trip = dataclasses.replace(mysql, speaker="Alice", text="We cooked a curry at the cooking class", score=0.6,
                               breakdown={})

    def turns(budget: int, said=diet, other=trip, note: str = "Alice hates cilantro") -> list[str]:
        ctx = assemble("q", [said, other], budget, lambda lines: [len(line.split()) if ": " in line else 1
                                                                  for line in lines],  # any other line: 1 token
                       [_entry("a", note, said.memory_id)], note_tokens=50, note_share=0.5)
        return [i.line.split(": ", 1)[1] for i in ctx.items if i.occurred_at is not None]

    # the note states half of the diet's turn (the cilantro): the rest of it is worth 1.0 x 0.5, less than the
    # cooking class (0.6), which goes first; the rest follows where the budget leaves room for it
    assert turns(12) == [trip.text]
    assert turns(100) == [trip.text, "… I'm vegetarian"]
    assert turns(14, dataclasses.replace(diet, text="我吃素，而且我讨厌香菜"), note="小李讨厌香菜") == [trip.text]
    assert turns(12, other=dataclasses.replace(trip, score=0.4)) == ["… I'm vegetarian"]  # worth more: its place
    # the version in force of a superseded turn the question found keeps its place: its rest may be the new value
    in_force = dataclasses.replace(diet, breakdown={"supersedes": mysql.memory_id})
    assert turns(12, in_force) == ["… I'm vegetarian"]


def test_a_partly_superseded_turn_answers_for_the_part_still_in_force():
    said = (
        ("t1", message("For Atlas we picked PostgreSQL, and we must never store phone numbers", "c1")),
        ("n1", _note("add", "Decision: picked PostgreSQL", "t1", T0)),
        ("n2", _note("add", "Constraint: must never store phone numbers", "t1", T0, category="constraint")),
        ("t2", message("Change of plan on Atlas: we're switching from PostgreSQL to MySQL", "c2", occurred_at=SWITCH)),
        ("s1", MessageSuperseded(message_event_ids=("t1",), by_message_event_id="t2", valid_from=SWITCH,
                                 reason="test", decider="turn-change-v1")),
        ("r1", NoteOperation(op="delete", target_note_id="n1", source_message_ids=("t2",), valid_from=SWITCH,
                             reason="test", decider="turn-change-v1")),
    )
    memory = fold(ShardState(), stream(*said)).user("acme", "alice")
    later = SWITCH + timedelta(days=1)
    [rule] = [h for h in fuse(memory, "What data must we never store in Atlas?", [], k=2, config=PLAIN, now=later)
              if h.memory_id == "t1"]
    assert "superseded" not in rule.breakdown and rule.breakdown["partly_superseded"].startswith("superseded by")
    hits = fuse(memory, "Which database does Atlas use, PostgreSQL?", [], k=2, config=PLAIN, now=later)
    assert [h.memory_id for h in hits] == ["t2", "t1"] and "superseded" in hits[1].breakdown
    # only a constraint counts: a fact note read from the turn (often a fragment of a change) protects nothing
    as_fact = [(i, e.model_copy(update={"note": e.note.model_copy(update={"category": "fact"})}) if i == "n2" else e)
               for i, e in said]
    plain = fold(ShardState(), stream(*as_fact)).user("acme", "alice")
    [old] = [h for h in fuse(plain, "What data must we never store in Atlas?", [], k=2, config=PLAIN, now=later)
             if h.memory_id == "t1"]
    assert "superseded" in old.breakdown
    # the turn is in the context labelled superseded: it does not stand for its constraint, which stays
    rule_note = dataclasses.replace(_entry("n2", "Constraint: must never store phone numbers", "t1", "constraint"),
                                    offered=True, safety=True)
    ctx = assemble("q", hits[1:], 200, _words, [rule_note], note_tokens=100, note_share=0.5)
    assert [i.memory_id for i in ctx.items] == ["n2", "t1"] and "superseded by" in ctx.items[1].line


def test_question_words_are_not_lexical_terms_of_a_query():
    assert query_tokens("我现在平时喝什么？", True) == ("喝",)
    assert query_tokens("Which city do I live in now?") == ("city", "live")
    assert query_tokens("现在呢？") == ("现在",)  # a query of nothing else keeps them


def test_greetings_thanks_and_exclamations_state_nothing_a_context_could_lose():
    assert statements("Thanks, Maria! I really enjoy dramas.") == ("I really enjoy dramas",)
    assert statements("Wow John! Impressive stuff! That's awesome.") == ("Impressive stuff",)
    assert statements("谢谢！我对花生过敏") == ("我对花生过敏",)
    assert statements("Paris, I think.") == ("Paris", "I think")  # a name beside no formula is what was said
    assert carried_share("Thanks Nate! I really enjoy dramas", ["Joanna enjoys dramas"]) == 1.0


def test_openers_reactions_and_a_pictures_framing_state_nothing_a_context_could_lose():
    assert statements("Hey Mel! Long time no see! By the way, I finished my painting.") == ("I finished my painting",)
    assert statements("That sounds awesome! Your support means a lot. No worries.") == ()
    assert statements("The cake is great, Boston is nice") == ("The cake is great", "Boston is nice")  # about things
    # a caption is carried by a note that says what the picture shows; the rest of the turn stays
    turn = "Check it out! I painted this last week. [image: a photo of a sunset over a lake]"
    assert uncarried(turn, ["A photo of a sunset over a lake"]) == "… I painted this last week"
    assert uncarried(turn, ["A photo of a sunset over a lake", "Alice painted this last week"]) is None
