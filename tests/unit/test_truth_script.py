"""The scripted dialogues of ``python -m benchmarks.truth`` and what its metrics read from a line (no Ray, no model).

The script must hold what the benchmark's figures rely on: enough facts in both languages, every value stated by
the user in a turn of its own session order, values that cannot be mistaken for one another; and the reading of a
line must follow ids for turns, text and sources for notes, and never count a line labelled superseded.
"""

from __future__ import annotations

from collections import Counter

from benchmarks.truth_dialogues import CONSTRAINT, SLOTS
from benchmarks.truth_metrics import CURRENT, STALE, Evidence, carried, labelled_superseded, rates, score
from benchmarks.truth_script import scripts


def test_the_default_script_has_over_200_facts_in_both_languages_with_changes_constraints_and_pairs():
    users = scripts(seed=7, users=8)
    facts = [f for s in users for f in s.facts]
    assert len(facts) >= 200
    assert Counter(f.language for f in facts) == {"en": len(facts) // 2, "zh": len(facts) // 2}
    assert sum(f.changed for f in facts) > 80 and sum(len(f.values) == 3 for f in facts) > 20
    assert sum(f.kind == CONSTRAINT for f in facts) >= 60 and sum(f.multi_clause for f in facts) >= 40


def test_every_value_is_stated_by_the_user_in_order_and_names_its_value():
    for s in scripts(seed=3, users=2):
        by_id = {m["client_message_id"]: m for session in s.sessions for m in session}
        times = [m["occurred_at"] for session in s.sessions for m in session]
        assert times == sorted(times)
        for f in s.facts:
            assert len(f.stated) == len(f.values) and all(f.stated)
            for value, ids, echoes in zip(f.values, f.stated, f.echoed):
                assert all(by_id[i]["role"] == "user" and value in by_id[i]["text"] for i in ids), (f.fact_id, value)
                assert all(by_id[i]["role"] == "assistant" and value.lower() in by_id[i]["text"].lower()
                           for i in echoes)
            firsts = [min(by_id[i]["occurred_at"] for i in ids) for ids in f.stated]
            assert firsts == sorted(firsts), f.fact_id


def test_no_value_of_a_slot_can_be_read_as_another():
    for language, slots in SLOTS.items():
        for name, slot in slots.items():
            for a in slot.pool:
                assert any(w.lower() in a.lower() for w in slot.words(a)), (language, name, a)
                for b in slot.pool:
                    assert b == a or all(w.lower() not in b.lower() for w in slot.words(a)), (language, name, a, b)


def test_reading_a_line_follows_ids_for_turns_and_sources_for_notes():
    [en, _] = scripts(seed=5, users=1)
    fact = next(f for f in en.facts if len(f.values) == 3)
    ids = {c: f"m-{c}" for session in en.sessions for c in (m["client_message_id"] for m in session)}
    ev = Evidence.of(fact, ids)
    old, new = ids[fact.stated[0][0]], ids[fact.stated[-1][0]]
    assert carried(fact, ev, new, {new}, "anything", is_turn=True) == CURRENT
    assert carried(fact, ev, old, {old}, "anything", is_turn=True) == STALE
    assert carried(fact, ev, "m-other", {"m-other"}, fact.values[0], is_turn=True) is None
    # a note: its text says the value, its sources say which fact
    assert carried(fact, ev, "n1", {"n1", old}, f"uses {fact.values[0]}", is_turn=False) == STALE
    assert carried(fact, ev, "n2", {"n2", new}, f"from {fact.values[1]} to {fact.values[2]}", is_turn=False) == CURRENT
    assert carried(fact, ev, "n3", {"n3", new}, f"stopped {fact.values[1]}", is_turn=False) is None
    assert carried(fact, ev, "n4", {"n4", "m-other"}, fact.values[0], is_turn=False) is None
    # labelled superseded: history shown as history
    label = f'{fact.values[0]} (superseded by "x" on 2024-05-01)'
    assert labelled_superseded(label) and carried(fact, ev, old, {old}, label, is_turn=True) is None
    assert carried(fact, ev, old, {old}, "plain", is_turn=True, meta={"superseded": "superseded by …"}) is None
    assert labelled_superseded(f"[fact, superseded] uses {fact.values[0]}")
    assert not labelled_superseded("I moved to Berlin", {"rrf": 0.1})
    assert not any(labelled_superseded(m["text"]) for s in scripts(seed=7, users=8) for x in s.sessions for m in x)


def test_rates_count_each_metric_over_the_facts_it_is_asked_of():
    users = scripts(seed=5, users=1)
    facts = [f for s in users for f in s.facts]
    rows = [score(f, [CURRENT, STALE], [STALE], [CURRENT] if f.task else None, archived=False) for f in facts]
    r = rates(facts, rows)
    assert r["current@1"] == 1.0 and r["current_archived"] == 0.0 and r["n_current@1"] == len(facts)
    assert r["stale@3"] == 1.0 and r["n_stale_in_context"] == sum(f.changed for f in facts)
    assert r["constraint_recall"] == 1.0 and r["n_constraint_recall"] == sum(f.kind == CONSTRAINT for f in facts)
