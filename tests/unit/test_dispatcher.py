"""The Evolution Dispatcher on a shard (no Ray): signals aggregated per layer, adjustments applied by retrieval,
reverted, replayed. One store per module; each test uses its own user."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from actors import commands as c
from actors.core import ShardCore
from actors.spec import ShardSpec
from events.errors import InvalidInputError
from projections.adapters.embedding import HashEmbedder
from projections.queries.retrieval import DEFAULT_FUSION
from projections.rules.usage import judge_usage
from tests.builders import command
from tests.shard_helpers import EMBED, context, record, search

# The user reacts just after the test's contexts were built (their touches carry the wall-clock time).
T0 = datetime.now(UTC).replace(microsecond=0) + timedelta(minutes=5)
# fresh_user's turns were said this long (about two and a half years) before T0, not on a fixed day: the touches
# carry the wall-clock time, so T0 follows it, and turns of a fixed day would age with the calendar (the explain
# test's retention curve rounds to 0 about a year on). Old enough for the unreinforced turn's archival.
SAID_BEFORE = timedelta(days=944)
NO_FEEDBACK = replace(DEFAULT_FUSION, feedback=False)
STALE = "No, I told you I don't eat cilantro any more"
REPLY = "Since you love cilantro on everything, here is a salsa with lots of cilantro!"


@pytest.fixture(scope="module")
def core(tmp_path_factory):
    path = tmp_path_factory.mktemp("dispatch")
    core = ShardCore(ShardSpec(index=0, log_path=path / "s.duckdb", lance_dir=path / "v",
                               model_id=HashEmbedder.model_id, dim=384))
    yield core
    core.close()


def fresh_user(core: ShardCore, user_id: str) -> list[str]:
    said = [(T0 - SAID_BEFORE + timedelta(minutes=i)).isoformat() for i in range(3)]
    outcomes = record(core, [command("I love cilantro on everything", 0, user_id=user_id, occurred_at=said[0]),
                             command("My sister works as a nurse in Boston", 1, user_id=user_id, occurred_at=said[1]),
                             command("We adopted a cat named Miso", 2, user_id=user_id, occurred_at=said[2])])
    return [o["memory_id"] for o in outcomes]


def judge(core, user_id, text, reply, ids, at):
    [out] = core.handle([c.JudgeFeedback(tenant="acme", user_id=user_id, user_input=text, agent_response=reply,
                                         memory_ids=tuple(ids), now=at)])
    return out


def cilantro_context(core, user_id, now=None):
    return context(core, "what do I like on my food? cilantro", 400, user_id=user_id, now=now)


def carried(ctx) -> set[str]:
    """The memories and notes a context holds: its items and the turns its notes stand for."""
    return {m for i in ctx.items for m in (i.memory_id, *i.provenance.get("event_ids", ()))}


def test_one_correction_penalises_at_once_the_second_invalidates_and_a_revert_brings_it_back(core):
    cilantro, sister, _ = fresh_user(core, "u1")
    ctx = cilantro_context(core, "u1")
    ids = [i.memory_id for i in ctx.items]
    notes = core.state.user("acme", "u1").notes.notes
    note_ids = [i for i in ids if i in notes and cilantro in notes[i].source_message_ids]
    assert note_ids  # the preference note read from the cilantro turn stands for it in the context

    first = judge(core, "u1", STALE, REPLY, ids, T0)
    [working] = first["adjustments"]
    assert working["layer"] == "working" and working["action"] == "penalty"
    assert cilantro in working["target_ids"] and sister not in working["target_ids"]  # blamed: what the reply used
    hit = next(h for h in search(core, "cilantro", user_id="u1", k=3, now=T0 + timedelta(hours=1))
               if h.memory_id == cilantro)
    assert hit.breakdown["feedback_factor"] == 0.5
    assert cilantro in carried(cilantro_context(core, "u1", T0 + timedelta(hours=1)))

    second = judge(core, "u1", "不对，我说过我不吃香菜了 — I don't eat cilantro any more", REPLY, ids,
                   T0 + timedelta(days=2))
    stable = [a for a in second["adjustments"] if a["layer"] == "stable"]
    assert [a["action"] for a in stable] == ["invalidate"]
    assert cilantro in stable[0]["target_ids"] and set(note_ids) <= set(stable[0]["target_ids"])
    [row] = core.query(c.Adjustments(tenant="acme", user_id="u1", target_id=cilantro, active_only=True))[-1:]
    assert row["signal_ids"] == [first["event_id"], second["event_id"]]

    later = T0 + timedelta(days=3)
    after = carried(cilantro_context(core, "u1", later))
    assert cilantro not in after and not set(note_ids) & after and after
    assert cilantro not in {h.memory_id for h in search(core, "cilantro", user_id="u1", k=3, now=later)}
    # time travel: before the second correction the memory was still retrieved; the ablation ignores the loop
    assert cilantro in {h.memory_id for h in search(core, "cilantro", user_id="u1", k=3, now=T0 + timedelta(days=1))}
    assert cilantro in {h.memory_id for h in search(core, "cilantro", user_id="u1", k=3, now=later,
                                                    fusion=NO_FEEDBACK)}
    assert core.admin(c.Replay()).equal

    [revert] = core.handle([c.RevertAdjustment(tenant="acme", user_id="u1", adjustment_id=stable[0]["adjustment_id"],
                                               reason="the user eats it again", now=later)])
    assert revert["reverted"] is True
    assert cilantro in carried(cilantro_context(core, "u1", later + timedelta(hours=1)))
    [again] = core.handle([c.RevertAdjustment(tenant="acme", user_id="u1", adjustment_id=stable[0]["adjustment_id"],
                                              reason="twice", now=later)])
    assert again["reverted"] is False and "already_reverted_at" in again
    assert core.admin(c.Replay()).equal


def test_a_positive_signal_in_between_breaks_the_streak_and_weak_or_neutral_signals_change_nothing(core):
    cilantro, _, _ = fresh_user(core, "u2")
    ids = [i.memory_id for i in cilantro_context(core, "u2").items]
    assert judge(core, "u2", "明天我们去爬山吧", REPLY, ids, T0)["adjustments"] == []  # neutral
    judge(core, "u2", STALE, REPLY, ids, T0)
    thanks = judge(core, "u2", "Perfect, thank you!", REPLY, ids, T0 + timedelta(minutes=5))
    assert thanks["type"] == "positive" and thanks["adjustments"] == []
    third = judge(core, "u2", STALE, REPLY, ids, T0 + timedelta(minutes=10))
    assert [a["layer"] for a in third["adjustments"]] == ["working"]  # the streak restarted: no stable change yet
    fourth = judge(core, "u2", STALE, REPLY, ids, T0 + timedelta(minutes=15))
    assert "stable" in [a["layer"] for a in fourth["adjustments"]]


def test_wrong_answers_get_a_lasting_penalty_not_an_invalidation(core):
    _, sister, _ = fresh_user(core, "u3")
    reply = "Your sister works as a nurse in Boston."
    ids = [i.memory_id for i in context(core, "where does my sister work as a nurse", 300, user_id="u3").items]
    judge(core, "u3", "That's wrong.", reply, ids, T0)
    out = judge(core, "u3", "No, that's not right, wrong answer again", reply, ids, T0 + timedelta(hours=1))
    [stable] = [a for a in out["adjustments"] if a["layer"] == "stable"]
    assert stable["action"] == "penalty" and sister in stable["target_ids"]
    far = T0 + timedelta(days=30)  # the working penalties expired; the stable one holds
    hit = next(h for h in search(core, "sister nurse", user_id="u3", k=3, now=far) if h.memory_id == sister)
    assert hit.breakdown["feedback_factor"] == 0.5


def test_style_feedback_becomes_a_versioned_weighted_skill_in_the_profile(core):
    fresh_user(core, "u4")
    first = judge(core, "u4", "Too long, please be more concise", "A very long answer ...", [], T0)
    [skill] = first["adjustments"]
    assert skill["skill"] == "style" and skill["layer"] == "working"
    judge(core, "u4", "太长了，简短一点", "又是一个很长的回答……", [], T0 + timedelta(hours=1))
    [held] = core.query(c.Profile(tenant="acme", user_id="u4"))["skills"]
    assert held["skill"] == "style" and held["version"] == 2 and held["layer"] == "stable"
    assert "简短" in held["preference"] and 0.5 < held["weight"] <= 1.0


def test_an_unknown_adjustment_is_refused_with_nothing_written(core):
    fresh_user(core, "u5")
    before = core.log.count()
    with pytest.raises(InvalidInputError, match="adjustment_id"):
        core.handle([c.RevertAdjustment(tenant="acme", user_id="u5", adjustment_id="nope", reason="x", now=T0)])
    assert core.log.count() == before


def test_explain_tells_the_chain_of_an_invalidated_note_as_of_a_time(core):
    from actors.commands import Explain
    from palimpsest.cli_learning import render_explain

    cilantro, _, _ = fresh_user(core, "u6")
    ids = [i.memory_id for i in cilantro_context(core, "u6").items]
    note = next(i for i in ids if i in core.state.user("acme", "u6").notes.notes)
    search(core, "cilantro", user_id="u6", k=3)  # a touch (search_hit), committed before the next command
    judge(core, "u6", STALE, REPLY, ids, T0)
    judge(core, "u6", STALE, REPLY, ids, T0 + timedelta(days=1))
    vec = EMBED.encode(["cilantro"])[0]

    now = core.query(Explain(tenant="acme", user_id="u6", memory_id=cilantro, at=T0 + timedelta(days=2),
                             query="cilantro", query_vector=vec))
    kinds = [e["kind"] for e in now["source_events"]]
    assert kinds[:3] == ["message_recorded", "message_classified", "message_embedded"] and "note_operation" in kinds
    assert [f["type"] for f in now["feedback"]] == ["negative", "negative"]
    assert [(a["layer"], a["action"], a["applies"]) for a in now["adjustments"]][-1] == ("stable", "invalidate", True)
    assert any(line.startswith("invalidated") for line in now["status"])
    assert now["score"]["rank"] is None  # out of default retrieval
    assert any(t["reason"] == "search_hit" and t["query"] == "cilantro" for t in now["touches"])
    r = now["retention"][cilantro]
    assert r["curve"][0]["retention"] > r["curve"][-1]["retention"]
    # the turn (said SAID_BEFORE ago) has not been reinforced: its retention fell below the floor long before "now"
    assert r["archive_now"] and r["archival_due"] and r["expected_archival"] < now["at"]

    before = core.query(Explain(tenant="acme", user_id="u6", memory_id=note, at=T0 + timedelta(hours=1),
                                query="cilantro", query_vector=vec))
    assert [a["layer"] for a in before["adjustments"]] == ["working"] and len(before["feedback"]) == 1
    assert before["score"]["rank"] is not None and before["notes"][0]["note_id"] == note
    text = "\n".join(render_explain(now))
    assert "invalidated" in text and "source events:" in text and "archival due since" in text
    with pytest.raises(InvalidInputError, match="memory_id"):
        core.query(Explain(tenant="acme", user_id="u6", memory_id="nope", at=T0))


def test_a_penalty_holds_for_the_question_the_rejected_replies_answered_not_for_other_questions(core):
    _, sister, _ = fresh_user(core, "u7")
    asked = "where does my sister work as a nurse?"
    reply = "Your sister works as a nurse in Boston."
    ids = [i.memory_id for i in context(core, asked, 300, user_id="u7").items]

    def wrong(text: str, query: str, at: datetime) -> dict:
        [out] = core.handle([c.JudgeFeedback(tenant="acme", user_id="u7", user_input=text, agent_response=reply,
                                             memory_ids=tuple(ids), now=at, query=query)])
        return out

    first = wrong("That's wrong.", asked, T0)
    [working] = first["adjustments"]
    [row] = [a for a in core.query(c.Adjustments(tenant="acme", user_id="u7")) if a["adjustment_id"]
             == working["adjustment_id"]]
    assert sister in row["target_ids"] and row["scope"] == asked
    other = wrong("No, that's not right, wrong answer again", "who lives in Boston?", T0 + timedelta(minutes=1))
    assert [a["layer"] for a in other["adjustments"]] == ["working"]  # another question: no streak on this one
    third = wrong("No, that's not right, wrong answer again", "Where does my sister work as nurse", T0 + timedelta(
        minutes=2))
    [stable] = [a for a in third["adjustments"] if a["layer"] == "stable"]
    assert stable["action"] == "penalty" and sister in stable["target_ids"]
    assert core.query(c.Adjustments(tenant="acme", user_id="u7"))[-1]["signal_ids"] == [first["event_id"],
                                                                                       third["event_id"]]

    def factor(query: str, at: datetime) -> float | None:
        hit = next((h for h in search(core, query, user_id="u7", k=3, now=at) if h.memory_id == sister), None)
        assert hit is not None, query
        return hit.breakdown.get("feedback_factor")

    far = T0 + timedelta(days=30)  # the working penalties expired; the stable one holds, on its topic only
    assert factor("where does my sister work as a nurse", far) == 0.5
    assert factor("what does my sister like to do in Boston?", far) is None  # the name alone: another question
    assert factor("where does my sister work as a nurse", T0 + timedelta(minutes=3)) == 0.5 ** 3
    assert core.admin(c.Replay()).equal


# dispatcher-v3: what the user's correction restates is not blamed; only replies that drew on a memory count in its
# streak; an invalidated turn takes along the notes read from it alone.

def test_the_item_holding_the_new_value_the_user_states_is_not_blamed(core):
    outcomes = record(core, [command("I'm learning Dutch in the evenings", 0, user_id="v1"),
                             command("I switched to learning Korean", 1, user_id="v1")])
    dutch, korean = (o["memory_id"] for o in outcomes)
    reply = "You're learning Dutch in the evenings, you are learning it well."
    assert judge_usage(reply, [(korean, "I switched to learning Korean")])  # the usage judge alone would blame it
    correction = "No, that changed, I'm learning Korean now."
    first = judge(core, "v1", correction, reply, [dutch, korean], T0)
    [working] = first["adjustments"]
    assert dutch in working["target_ids"] and korean not in working["target_ids"]
    second = judge(core, "v1", correction, reply, [dutch, korean], T0 + timedelta(days=2))
    [stable] = [a for a in second["adjustments"] if a["layer"] == "stable"]
    assert stable["action"] == "invalidate" and dutch in stable["target_ids"] and korean not in stable["target_ids"]


def test_a_signal_on_a_reply_that_did_not_draw_on_a_memory_neither_counts_nor_breaks_its_streak(core):
    cilantro, sister, _ = fresh_user(core, "v2")
    ids = [cilantro, sister]
    judge(core, "v2", STALE, REPLY, ids, T0)
    thanks = judge(core, "v2", "Thanks, that's right!", "Your sister works as a nurse in Boston.", ids,
                   T0 + timedelta(minutes=5))  # about the sister: says nothing about the cilantro turn beside it
    assert thanks["type"] == "positive"
    second = judge(core, "v2", STALE, REPLY, ids, T0 + timedelta(minutes=10))
    [stable] = [a for a in second["adjustments"] if a["layer"] == "stable"]
    assert stable["action"] == "invalidate" and cilantro in stable["target_ids"]
    [row] = [a for a in core.query(c.Adjustments(tenant="acme", user_id="v2"))
             if a["adjustment_id"] == stable["adjustment_id"]]
    assert row["signal_ids"] == [judge_ids(core, "v2")[0], second["event_id"]]  # the thanks is not among them


def test_an_invalidated_turn_takes_along_the_notes_read_from_it_alone(core):
    cilantro, _, _ = fresh_user(core, "v3")
    notes = [n.note_id for n in core.state.user("acme", "v3").notes.by_source(cilantro) if n.valid_to is None]
    assert notes  # the preference note read from the turn
    judge(core, "v3", STALE, REPLY, [cilantro], T0)  # the contexts held the turn, not its note
    second = judge(core, "v3", STALE, REPLY, [cilantro], T0 + timedelta(days=2))
    [stable] = [a for a in second["adjustments"] if a["layer"] == "stable"]
    assert stable["action"] == "invalidate" and {cilantro, *notes} <= set(stable["target_ids"])
    later = T0 + timedelta(days=3)
    assert not {cilantro, *notes} & carried(cilantro_context(core, "v3", later))
    assert core.admin(c.Replay()).equal


def judge_ids(core, user_id: str) -> list[str]:
    """The user's negative signals' event ids, oldest first."""
    return [s["event_id"] for s in core.query(c.Feedback(tenant="acme", user_id=user_id)) if s["type"] == "negative"]


def test_a_reply_naming_the_user_does_not_draw_on_every_note_about_them(core):
    outcomes = record(core, [command("I drive a Peugeot", 0, user_id="v4", speaker="Lena"),
                             command("I love tea", 1, user_id="v4", speaker="Lena")])
    peugeot, _ = (o["memory_id"] for o in outcomes)
    notes = core.state.user("acme", "v4").notes.notes
    tea_note = next(n.note_id for n in notes.values() if "tea" in n.text)  # "Lena loves tea"
    reply = "Lena: I drive a Peugeot"  # the line as a context shows it: the user's name, then the turn
    assert judge_usage(reply, [(tea_note, notes[tea_note].text)])  # "Lena" alone would make it used
    out = judge(core, "v4", "No, that's wrong.", reply, [peugeot, tea_note], T0)
    [working] = out["adjustments"]
    assert peugeot in working["target_ids"] and tea_note not in working["target_ids"]
