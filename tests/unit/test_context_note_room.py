"""Which notes a context takes before its turns: the notes the question reaches go in the order of the hits they were
read from, none takes the room of a better hit's turn the budget could show, none goes after a better hit's note that
did not fit, and constraints are offered whatever the budget (a word counts as a token here)."""

from __future__ import annotations

import dataclasses

from projections.queries.context import NoteEntry, assemble, reach
from projections.queries.results import Hit
from tests.builders import T0

TEXTS = ("I adopted a puppy named Biscuit last week", "My sister works as a nurse in Boston",
         "We repainted the kitchen yellow")
HITS = [Hit(f"m{n}", n, 1.0 / n, text, "Alice", "user", T0, "conv-1", f"D1:{n}", {}, {})
        for n, text in enumerate(TEXTS, start=1)]


def _words(lines: list[str]) -> list[int]:
    return [len(line.split()) for line in lines]


def _note(note_id: str, text: str, rank: int, category: str = "fact") -> NoteEntry:
    source = f"m{rank}"
    return NoteEntry(note_id, category, text, 1, T0, (source,), (f"D1:{rank}",), "conv-1", 1.0 / rank, rank=rank)


KITCHEN = _note("kitchen", "We repainted the kitchen yellow", 3)  # six words with its category


def _ids(budget: int, notes: list[NoteEntry]) -> list[str]:
    ctx = assemble("puppy", HITS, budget, _words, notes, note_tokens=100, note_share=0.5)
    assert ctx.tokens <= budget
    return [i.memory_id for i in ctx.items]


def test_reach_counts_the_best_hits_a_budget_shows_whole():
    assert reach([10, 9, 6], 19) == 2 and reach([10, 9, 6], 9) == 0 and reach([10, 9, 6], 25) == 3


def test_a_weaker_hits_note_never_takes_the_room_of_a_better_hits_turn():
    # 20 words show the puppy's turn (with its day) and the sister's; the kitchen's note would leave no room for both
    assert _ids(20, [KITCHEN]) == ["m1", "m2"]
    # with room for all three turns beside it, the note comes first and states its turn, which then is not repeated
    assert _ids(60, [KITCHEN]) == ["kitchen", "m1", "m2"]


def test_no_weaker_hits_note_goes_after_a_better_hits_note_that_did_not_fit():
    puppy = _note("puppy", "Alice adopted a puppy named Biscuit last week, a beagle from the shelter in town", 1)
    # the puppy's note (15 words) does not fit the notes' 13; the kitchen's would fit beside the three turns, but
    # would lead a context whose best turn it has nothing to do with
    assert _ids(26, [puppy, KITCHEN]) == ["m1", "m2", "m3"]
    assert _ids(60, [puppy, KITCHEN])[:2] == ["puppy", "kitchen"]


def test_the_notes_the_question_reaches_go_in_the_order_of_their_hits():
    # each note states its turn whole; a preference no longer goes before a fact read from a better hit
    sister = _note("sister", "Alice's sister works as a nurse in Boston", 2, category="preference")
    puppy = _note("puppy", "Alice adopted a puppy named Biscuit last week", 1)
    assert _ids(100, [sister, KITCHEN, puppy]) == ["puppy", "sister", "kitchen"]


def test_constraints_are_offered_whatever_the_budget():
    allergy = dataclasses.replace(_note("allergy", "Alice is allergic to peanuts", 3, category="constraint"),
                                  offered=False, safety=True)
    assert _ids(20, [allergy]) == ["allergy", "m1"]  # read from the kitchen's hit, yet first: a safety constraint
    offered = dataclasses.replace(allergy, rank=0, offered=True)
    assert _ids(20, [offered, KITCHEN]) == ["allergy", "m1"]
