"""The Molt controller on a shard (no Ray): effectiveness from the log, proposals replayed over the recorded
queries, a policy change applied only when the replayed metric improves, reverted, replayed without a model."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from actors import commands as c
from actors.core import ShardCore
from actors.spec import ShardSpec
from events.errors import InvalidInputError
from projections.adapters.embedding import HashEmbedder
from projections.queries.learned import learned_fusion
from projections.queries.retrieval import DEFAULT_FUSION
from tests.builders import command
from tests.shard_helpers import EMBED, context, record

NOW = datetime.now(UTC).replace(microsecond=0)
# In Chinese, without the Chinese ranker (so the fusion weights decide): the user asks vague questions;
# the agent searches its memory with its own words and its replies draw on the two meetings, which the user's
# words rank below the outings ("今天"): a recall-side problem to tune.
TURNS = ["我在港口咖啡馆见了安娜", "我在图书馆见了本"] + [
    f"我今天去了{p}" for p in ("车站", "办公室", "机场", "市场", "博物馆", "健身房", "公园", "海滩", "酒店", "商场")]
# Six: the candidates are chosen on three and the best is checked on the three held out.
QUERIES = ["我今天做了什么", "说说我今天的事", "今天有什么有意思的", "我今天都干了啥", "讲讲我今天", "今天过得怎么样"]
AGENT_SEARCH = "见了 安娜 本 图书馆 港口 咖啡馆"
REPLY = "你在港口咖啡馆见了安娜，还在图书馆见了本。"
# contexts of turns (the "went" turns share one note); no Chinese ranker, so the fusion weights Molt tunes decide
UNRANKED_ZH = replace(DEFAULT_FUSION, cjk_ranker=None)  # the replays Molt runs: no Chinese ranker either
TURNS_ONLY = replace(DEFAULT_FUSION, note_tokens=0, cjk_ranker=None)


def molt_command(core, user_id, **kw) -> c.Molt:
    recorded = core.query(c.MoltInputs(tenant="acme", user_id=user_id))
    queries = tuple((r["query"], EMBED.encode([r["query"]])[0], datetime.fromisoformat(r["at"]), tuple(r["memory_ids"]))
                    for r in recorded)
    return c.Molt(tenant="acme", user_id=user_id, queries=queries, now=NOW, **{"fusion": UNRANKED_ZH, **kw})


@pytest.fixture(scope="module")
def core(tmp_path_factory):
    path = tmp_path_factory.mktemp("molt")
    core = ShardCore(ShardSpec(index=0, log_path=path / "s.duckdb", lance_dir=path / "v",
                               model_id=HashEmbedder.model_id, dim=384))
    record(core, [command(text, i, user_id="kai") for i, text in enumerate(TURNS)])
    for query in QUERIES:  # the agent answers six questions; each reply draws on the same two memories
        # 72 tokens: six turns under their day's header (the contexts the scenario was written for)
        ctx = context(core, AGENT_SEARCH, 72, user_id="kai", now=NOW, fusion=TURNS_ONLY)
        core.handle([c.RecordReply(tenant="acme", user_id="kai", reply=REPLY, query=query,
                                   memory_ids=tuple(i.memory_id for i in ctx.items))])
    yield core
    core.close()


def test_low_usage_triggers_proposals_and_the_replayed_improvement_is_applied_then_reverted(core):
    dry = core.handle([molt_command(core, "kai", dry_run=True)])[0]
    assert dry["figures"]["usage_rate"] < 0.5 and dry["triggers"] and dry["queries"] == 6
    assert dry["event_id"] is None and core.query(c.PolicyHistory(tenant="acme", user_id="kai"))["history"] == []

    [out] = core.handle([molt_command(core, "kai")])
    assert out["after"] > out["before"] and out["decision"].startswith("applied")
    assert out["held_out"]["after"] >= out["held_out"]["before"] + 0.01  # checked on the queries not chosen on
    best = max(p["after"] for p in out["proposals"])
    assert out["after"] == best  # the best replayed proposal, with its figures
    history = core.query(c.PolicyHistory(tenant="acme", user_id="kai"))
    [change] = history["history"]
    assert change["status"] == "applied" and history["parameters"] == out["parameters"]
    assert change["before"] == out["before"] and change["after"] == out["after"] and change["queries"] == 3
    memory = core.state.user("acme", "kai")
    tuned = learned_fusion(memory, DEFAULT_FUSION, NOW)
    assert all(getattr(tuned, k) == v for k, v in out["parameters"].items())
    off = DEFAULT_FUSION.__class__(feedback=False)
    assert learned_fusion(memory, off, NOW) is off  # the ablation ignores the learned policy
    assert core.admin(c.Replay()).equal  # replay folds the recorded decision: no model, no re-evaluation

    [again] = core.handle([molt_command(core, "kai")])  # already tuned: the next proposal must beat the new policy
    assert again["before"] == pytest.approx(out["after"])

    [undo] = core.handle([c.RevertPolicy(tenant="acme", user_id="kai", change_id=change["change_id"],
                                         reason="compare by hand", now=NOW)])
    assert undo["reverted"] is True
    history = core.query(c.PolicyHistory(tenant="acme", user_id="kai"))
    assert history["parameters"] == change["previous"] and history["history"][0]["reverted"] is True
    [twice] = core.handle([c.RevertPolicy(tenant="acme", user_id="kai", change_id=change["change_id"],
                                          reason="again", now=NOW)])
    assert twice == {"change_id": change["change_id"], "reverted": False, "already_reverted": True}
    assert core.admin(c.Replay()).equal


def test_a_proposal_that_does_not_improve_is_recorded_as_rejected_with_its_figures(core):
    record(core, [command("I had tea at home", 0, user_id="ivy")])
    [out] = core.handle([c.Molt(tenant="acme", user_id="ivy", now=NOW, force=True,
                                queries=(("tea", EMBED.encode(["tea"])[0], NOW, ()),))])
    assert out["decision"] == "no recorded queries to replay" and out["event_id"] is None
    ids = tuple(o["memory_id"] for o in record(core, [command("I had tea with Mia", 1, user_id="ivy")]))
    q = [(t, EMBED.encode([t])[0], NOW, ids) for t in ("tea", "tea with Mia", "who had tea")]
    [out] = core.handle([c.Molt(tenant="acme", user_id="ivy", now=NOW, force=True, queries=tuple(q))])
    assert out["before"] == 1.0 and out["decision"].startswith("rejected")  # nothing to gain: kept the policy
    [rejected] = core.query(c.PolicyHistory(tenant="acme", user_id="ivy"))["history"]
    assert rejected["status"] == "rejected" and rejected["after"] <= rejected["before"] + 0.01
    with pytest.raises(InvalidInputError, match="change_id"):
        core.handle([c.RevertPolicy(tenant="acme", user_id="ivy", change_id=rejected["change_id"], reason="x",
                                    now=NOW)])
