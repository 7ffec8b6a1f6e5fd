"""The Feedback Judge with a language model (seed 003 §4), against a real-socket OpenAI-compatible server with
scripted replies: its verdicts are recorded beside their calls, the dispatcher acts on them, and replay
reproduces every adjustment with the model gone (digests equal). Off by default: the offline rules judge."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from actors import commands as c
from actors.core import ShardCore
from actors.llm import LlmConfig
from actors.spec import ShardSpec
from projections.adapters.embedding import HashEmbedder
from projections.rules.feedback import judge
from tests.builders import command
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.shard_helpers import context, record

pytestmark = pytest.mark.integration
MODEL = "scripted-model"
T0 = datetime.now(UTC).replace(microsecond=0) + timedelta(minutes=5)
ASKED = "where does my sister live?"
REPLY = "Your sister lives in Boston and works as a nurse there."
MOVED = "Hmm, she moved to Denver last spring."  # a correction without a cue the rules know
STALE = {"type": "negative", "confidence": 0.9, "targets": ["final_answer"], "action_hints": ["invalidate"],
         "reason": "the user says the sister moved to Denver"}


def spec(tmp_path, base_url: str | None, *, feedback_judge: bool = True) -> ShardSpec:
    llm = (LlmConfig(base_url=base_url, model=MODEL, timeout_s=0.5, max_retries=0, backoff_base_s=0.01,
                     feedback_judge=feedback_judge) if base_url else None)
    return ShardSpec(index=0, log_path=tmp_path / "s.duckdb", lance_dir=tmp_path / "v",
                     model_id=HashEmbedder.model_id, dim=384, llm=llm)


def judged(core, text: str, ids, at) -> dict:
    [out] = core.handle([c.JudgeFeedback(tenant="acme", user_id="u", user_input=text, agent_response=REPLY,
                                         context_window=(ASKED,), memory_ids=tuple(ids), now=at, query=ASKED)])
    return out


def test_the_model_judges_feedback_when_configured_and_replay_never_asks_it(tmp_path):
    offline = ShardCore(spec(tmp_path, None))  # the turns are recorded without a model (no note calls to script)
    [sister] = [o["memory_id"] for o in record(offline, [command("My sister lives in Boston, she is a nurse", 0,
                                                                 user_id="u")])]
    ids = [i.memory_id for i in context(offline, ASKED, 300, user_id="u").items]
    offline.close()
    assert judge(MOVED).type == "neutral"  # what the rules would have said

    with FakeOpenAI() as server:
        core = ShardCore(spec(tmp_path, server.base_url))
        server.script(Reply.json(STALE), Reply.json({**STALE, "confidence": 0.95}), Reply.error(500))
        first = judged(core, MOVED, ids, T0)
        assert (first["type"], first["judge"], first["action_hints"]) == ("negative", f"llm:{MODEL}", ["invalidate"])
        assert [a["layer"] for a in first["adjustments"]] == ["working"]
        second = judged(core, "不对，她去年春天就搬到丹佛了", ids, T0 + timedelta(days=1))
        [stable] = [a for a in second["adjustments"] if a["layer"] == "stable"]
        assert stable["action"] == "invalidate" and sister in stable["target_ids"]
        asked = server.requests[0].body["messages"][1]["content"]
        assert MOVED in asked and REPLY in asked and ASKED in asked  # the seed's input: turn, reply, window
        # the model fails: the rules judge, and the signal still names the failed call
        third = judged(core, "That's wrong.", ids, T0 + timedelta(days=2))
        assert third["judge"] == "feedback-rules-v2" and third["type"] == "negative"
        calls = {e.event_id: e.event for e in core.log.scan() if e.kind == "llm_call_recorded"}
        assert [calls[o["llm_call_id"]].purpose for o in (first, second, third)] == ["feedback_judge"] * 3
        assert calls[third["llm_call_id"]].error and len(server.requests) == 3
        signals = core.query(c.Feedback(tenant="acme", user_id="u"))
        assert [s["judge"] for s in signals] == [f"llm:{MODEL}", f"llm:{MODEL}", "feedback-rules-v2"]
        adjustments = core.query(c.Adjustments(tenant="acme", user_id="u"))
        before = core.query(c.Digest())

    # The server is gone: replay folds the recorded verdicts and adjustments, it never asks again.
    assert core.admin(c.Replay()).equal and core.query(c.Digest()) == before
    core.close()
    reopened = ShardCore(spec(tmp_path, "http://127.0.0.1:9"))  # nothing listens there
    assert reopened.digest() == before
    assert reopened.query(c.Adjustments(tenant="acme", user_id="u")) == adjustments
    reopened.close()


def test_the_rules_judge_by_default_even_with_a_model_configured(tmp_path):
    with FakeOpenAI() as server:
        core = ShardCore(spec(tmp_path, server.base_url, feedback_judge=False))
        out = judged(core, "不对", [], T0)
        assert out["judge"] == "feedback-rules-v2" and out["llm_call_id"] is None and server.requests == []
        core.close()
    assert LlmConfig.from_env({"PALIMPSEST_LLM_BASE_URL": "http://x", "PALIMPSEST_LLM_MODEL": "m"}).feedback_judge \
        is False
    assert LlmConfig.from_env({"PALIMPSEST_LLM_BASE_URL": "http://x", "PALIMPSEST_LLM_MODEL": "m",
                               "PALIMPSEST_LLM_FEEDBACK_JUDGE": "1"}).feedback_judge is True
