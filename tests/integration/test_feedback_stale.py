"""The stale-facts scenario of ``python -m benchmarks.feedback_stale`` at tiny scale, on Ray with the real model.

One English and one Chinese user, one fact each (the language they learn; where they live is not used: the notes
already retire "I live in Lyon" once "I moved to Porto" is said): the context carries the old value in both
feedback rounds, the user corrects it as outdated both times, and the dispatcher penalises the old statement at
once and invalidates it after the second consistent signal — not after the first. A month later the held-back
questions (other wordings, and the first one again) no longer find the old value with the loop, still find it
without (``palimpsest_no_feedback``), and find the new one either way; a replay reproduces every adjustment.
"""

from __future__ import annotations

import pytest

from benchmarks.feedback_stale import TENANT, measure, react
from benchmarks.stale_facts import FEEDBACK_AT, START, scripts
from benchmarks.variants import VARIANTS
from palimpsest import Memory

pytestmark = [pytest.mark.integration, pytest.mark.model]


@pytest.fixture(scope="module")
def mem(ray_cluster, tmp_path_factory):
    mem = Memory.open(tmp_path_factory.mktemp("stale") / "store", num_shards=1, embedder="minilm")
    yield mem
    mem.close()


def test_two_consistent_stale_corrections_invalidate_the_old_fact_and_only_then(mem):
    users = scripts(seed=3, users=1, slots=("language",))
    for s in users:
        mem.add_messages(list(s.messages), tenant=TENANT, user_id=s.user_id)
    facts = [f for s in users for f in s.facts]
    assert [(f.language, f.slot) for f in facts] == [("en", "language"), ("zh", "language")]

    first = [react(mem, f, f.questions[0], START + FEEDBACK_AT[0], 150) for f in facts]
    assert [r["outcome"] for r in first] == ["stale", "stale"] and all(r["stale_hint"] for r in first)
    assert all(r["adjustments"] == ["working:penalty"] for r in first)  # one signal: the working layer only
    second = [react(mem, f, f.questions[1], START + FEEDBACK_AT[1], 150) for f in facts]
    assert [r["outcome"] for r in second] == ["stale", "stale"]
    assert all("stable:invalidate" in r["adjustments"] for r in second)

    for f in facts:
        [invalidation] = [a for a in mem.adjustments(TENANT, f.user_id) if a["action"] == "invalidate"]
        assert len(invalidation["signal_ids"]) == 2
        for question in (f.questions[2], f.questions[3], f.questions[0]):
            vector = mem.embedder.encode([question])[0]
            loop = measure(mem, f, question, vector, VARIANTS["palimpsest"], 150)
            without = measure(mem, f, question, vector, VARIANTS["palimpsest_no_feedback"], 150)
            assert not loop["stale_in_context"] and not loop["stale@5"], (f.user_id, question)
            assert without["stale_in_context"], (f.user_id, question)  # the ablation still carries it
            assert loop["current_in_context"] and without["current_in_context"], (f.user_id, question)
    assert all(r.equal for r in mem.replay())
