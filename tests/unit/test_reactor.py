"""Model follow-ups in two steps, without Ray or a server: a commit's reaction queues what is due (with its prompt),
the reactor asks a stub model with no lock, and ``record_answer`` writes the call and, if still due, the decision.

The offline path is unchanged: without a model nothing is queued and the reaction writes the rule-based
distillation in the commit. A real DuckDB log file; the model is a stub ``StructuredLlm`` answering at once.
"""

from __future__ import annotations

import dataclasses

import pytest

from actors.core import ShardCore
from actors.followups import answered
from actors.llm import distill, titles
from actors.llm.client import LlmResult, canonical_json
from actors.reactor import Reactor
from actors.spec import ShardSpec
from events.envelope import PendingEvent
from events.model import EpisodeTitled, LlmCallRecorded
from projections.adapters.embedding import HashEmbedder
from projections.folds.messages import MessageStore
from projections.folds.tiers import TierConfig
from tests.builders import command
from tests.shard_helpers import kinds, record

# One page in short-term, every page into one session, and a session with an undistilled page is hot.
HOT = TierConfig(short_term_capacity=1, session_similarity=-10.0, heat_threshold=2.0)
TITLE = {"title": "Planning the Atlas launch", "summary": "Maya set the launch for May."}
DISTILLED = {"traits": {"Maya/employer": "Atlas"}, "user_knowledge": ["Maya works on Atlas."],
             "assistant_knowledge": []}
TURNS = [command("We planned the Atlas launch for May.", 0, speaker="Maya", conversation_id="c-1"),
         command("The launch needs a new landing page.", 1, speaker="Maya", conversation_id="c-1"),
         command("Miso knocked my coffee over.", 90, speaker="Maya", conversation_id="c-2")]


class StubModel:
    """A ``StructuredLlm`` answering each purpose from ``answers`` at once; the purposes asked, in order."""

    def __init__(self, answers: dict) -> None:
        self.answers = answers
        self.asked: list[str] = []

    def complete_json(self, purpose, messages, schema_or_model, **params) -> LlmResult:
        self.asked.append(purpose)
        parsed = self.answers.get(purpose)
        event = LlmCallRecorded(purpose=purpose, model="stub", base_url="http://stub", prompt_sha256="0" * 64,
                                messages_json=canonical_json(list(messages)), raw_output=canonical_json(parsed),
                                parsed_json=canonical_json(parsed), error=None)
        return LlmResult(event=event, parsed=parsed)


def spec_for(tmp_path) -> ShardSpec:
    return ShardSpec(index=0, log_path=tmp_path / "shard-000.duckdb", lance_dir=tmp_path / "vectors",
                     model_id=HashEmbedder.model_id, dim=384, tier_config=HOT)


@pytest.fixture
def core(tmp_path):
    svc = ShardCore(spec_for(tmp_path))
    yield svc
    svc.close()


def with_model(core: ShardCore, model: StubModel) -> ShardCore:
    """The core's follow-ups ask ``model`` (its deciders stay offline: ``deps.llm`` is None)."""
    core.llm = model
    return core


def test_without_a_model_nothing_waits_and_the_reaction_distils_by_the_rules(core):
    record(core, TURNS)
    assert core.waiting_asks() == ()
    [distilled] = [e.event for e in core.log.scan() if e.kind == "profile_distilled"]
    assert distilled.distiller == "rules-v1" and "llm_call_recorded" not in kinds(core)
    assert "episode_titled" not in kinds(core)


def test_a_commit_only_queues_the_model_follow_ups_and_the_reactor_records_them(core):
    model = StubModel({titles.PURPOSE: TITLE, distill.PURPOSE: DISTILLED})
    record(with_model(core, model), TURNS)

    waiting = core.waiting_asks()
    assert [a.purpose for a in waiting] == [distill.PURPOSE, titles.PURPOSE]
    assert model.asked == [] and "profile_distilled" not in kinds(core)  # nothing asked, nothing decided yet
    assert "Miso" not in waiting[1].messages[1]["content"] and "Atlas launch" in waiting[1].messages[1]["content"]

    assert Reactor(core).run() == 2 and core.waiting_asks() == ()
    assert model.asked == [distill.PURPOSE, titles.PURPOSE]
    logged = [e for e in core.log.scan() if e.kind in ("llm_call_recorded", "profile_distilled", "episode_titled")]
    assert [e.kind for e in logged] == ["llm_call_recorded", "profile_distilled", "llm_call_recorded",
                                        "episode_titled"]
    assert logged[1].event.llm_call_id == logged[0].event_id and logged[1].event.distiller == "llm:stub"
    assert logged[3].event.llm_call_id == logged[2].event_id and logged[3].event.title == TITLE["title"]
    assert core.state.user("acme", "alice").profile.traits["Maya/employer"].value == "Atlas"


def test_a_title_is_asked_once_per_process_even_when_the_answer_was_unusable(core):
    model = StubModel({distill.PURPOSE: DISTILLED})  # no title: the answer does not parse
    record(with_model(core, model), TURNS)
    assert Reactor(core).run() == 2 and "episode_titled" not in kinds(core)

    record(core, [command("Miso is fine now.", 91, speaker="Maya", conversation_id="c-2"),
                  command("New topic: the Lisbon trip.", 200, speaker="Maya", conversation_id="c-3")])
    [ask] = [a for a in core.waiting_asks() if a.purpose == titles.PURPOSE]  # the new closed episode only
    assert "Miso" in ask.messages[1]["content"] and "Atlas" not in ask.messages[1]["content"]


def test_an_answer_no_longer_due_records_only_the_call(core):
    model = StubModel({titles.PURPOSE: TITLE})
    record(with_model(core, model), TURNS)
    core.take_ask()  # the distillation, left aside
    ask = core.take_ask()
    result = ask.ask(model)
    # Meanwhile another writer titled the episode.
    member_ids = tuple(i for i, _ in ask.inputs)
    core.commit([PendingEvent("acme", "alice", "other-title", EpisodeTitled(
        episode_id=ask.subject, member_ids=member_ids, title="Atlas", summary="", titler="someone else"))])
    before = kinds(core)

    core.record_answer(ask, result)

    assert kinds(core) == [*before, "llm_call_recorded"]
    assert core.state.user("acme", "alice").titles.for_episode(ask.subject, member_ids).title == "Atlas"


def test_the_decision_is_a_pure_function_of_the_recorded_answer_and_writes_nothing_of_a_forgotten_user(core):
    model = StubModel({titles.PURPOSE: TITLE, distill.PURPOSE: DISTILLED})
    record(with_model(core, model), TURNS)
    asks = core.waiting_asks()
    memory = core.state.user("acme", "alice")
    for ask in asks:
        result = ask.ask(model)
        first = answered(ask, result, memory, "call-1", new_id=lambda: "decision-1")
        again = answered(ask, result, memory, "call-1", new_id=lambda: "decision-1")
        assert first == again and [p.event_id for p in first] == ["call-1", "decision-1"]
        gone = dataclasses.replace(memory, messages=MessageStore())  # what a forget leaves
        assert answered(ask, result, gone, "call-1") == []
