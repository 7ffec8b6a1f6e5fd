"""Memory that stays true (issue 40), through the public Python API and MCP, on one served store with the packaged
MiniLM encoder:

1. a context never loses what its source said: a note that carries one clause of a turn does not replace it, and
   health, diet and allergy statements are constraints (English and Chinese) offered to every context;
2. a superseded decision is demoted and labelled, the version in force comes first, time travel still sees the
   old one as current, and reading the old one does not reinforce it;
3. a constraint is never swept into the archive, however long it goes unread.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import anyio
import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from palimpsest.server.keys import KeyRing
from palimpsest.server.run import start
from palimpsest.server.settings import ServeSettings
from tests.serve_helpers import free_port

pytestmark = [pytest.mark.integration, pytest.mark.model]
TENANT = "truth"
SWITCHED = "2024-04-08"
ASKED = datetime(2024, 5, 1, tzinfo=UTC)
DIALOGUE = [
    ("alice", "user", "Alice", "I'm vegetarian and I hate cilantro", "2024-03-01T09:00:00+00:00"),
    ("alice", "user", "Alice", "We decided to use PostgreSQL as the database for Atlas.", "2024-03-01T09:05:00+00:00"),
    ("alice", "user", "Alice", "I went hiking in the hills with my sister at the weekend.", "2024-03-02T10:00:00+00:00"),
    ("alice", "user", "Alice", "Constraint from the club: we must not store members' phone numbers anywhere.",
     "2024-03-02T10:05:00+00:00"),
    ("alice", "user", "Alice", "Change of plan: the hosting team only supports MySQL, so we decided to switch Atlas "
                               "to MySQL instead of PostgreSQL.", f"{SWITCHED}T09:00:00+00:00"),
    ("alice", "assistant", "Assistant", "Understood, I'll plan the migration.", f"{SWITCHED}T09:00:30+00:00"),
    ("xiaoli", "user", "小李", "我叫小李。我对花生过敏", "2024-03-03T09:00:00+00:00"),
    ("xiaoli", "user", "小李", "周末我们去黄山爬山了，天气很好。", "2024-03-04T09:00:00+00:00"),
]


@pytest.fixture(scope="module")
def served(ray_cluster, tmp_path_factory):
    store = tmp_path_factory.mktemp("truth") / "store"
    running = start(ServeSettings(store=str(store), port=free_port(), rate_per_s=0), embedder="minilm", num_shards=1)
    mem = running.memory
    mem.add_messages([{"tenant": TENANT, "user_id": u, "role": role, "speaker": who, "text": text, "occurred_at": at,
                       "conversation_id": f"{u}-{at[:10]}"} for u, role, who, text, at in DIALOGUE])
    ids = {hit.text: hit.memory_id for u in ("alice", "xiaoli") for hit in mem.search(TENANT, u, "x", k=20, scope="all")}
    yield {"mem": mem, "url": running.url, "key": KeyRing(store).create(TENANT)[0], "ids": ids}
    running.stop()


def _id(served, start: str) -> str:
    return next(m for text, m in served["ids"].items() if text.startswith(start))


def test_a_context_keeps_the_clause_a_note_leaves_out_and_states_the_diet_as_a_constraint(served):
    mem = served["mem"]
    notes = {(n["category"], n["text"]) for n in mem.notes(TENANT, "alice")}
    assert {("constraint", "Alice is vegetarian"), ("preference", "Alice hates cilantro")} <= notes
    ctx = mem.build_context(TENANT, "alice", "What should I cook for Alice?", token_budget=300, now=ASKED)
    assert "vegetarian" in ctx.text and "cilantro" in ctx.text  # the turn, or both its notes


def test_a_chinese_allergy_is_a_constraint_and_reaches_a_context_about_something_else(served):
    mem = served["mem"]
    assert ("constraint", "小李对花生过敏") in {(n["category"], n["text"]) for n in mem.notes(TENANT, "xiaoli")}
    ctx = mem.build_context(TENANT, "xiaoli", "周末去哪里爬山？", token_budget=300, now=ASKED)
    assert "小李对花生过敏" in ctx.text


def test_the_decision_in_force_ranks_first_and_the_superseded_one_is_labelled(served):
    mem = served["mem"]
    old, new = _id(served, "We decided to use PostgreSQL"), _id(served, "Change of plan")
    hits = mem.search(TENANT, "alice", "What database does Atlas use?", k=5, now=ASKED)
    assert hits[0].memory_id == new and "supersedes" in hits[0].breakdown
    [stale] = [h for h in hits if h.memory_id == old]
    assert stale.rank > 1 and stale.breakdown["superseded"].startswith('superseded by "Decision: switch Atlas to MySQL')
    assert stale.breakdown["superseded"].endswith(f" on {SWITCHED}") and stale.breakdown["superseded_by"] == [new]
    ctx = mem.build_context(TENANT, "alice", "What database does Atlas use?", token_budget=300, now=ASKED)
    assert "MySQL" in ctx.text
    assert all("superseded by" in i.line for i in ctx.items if i.memory_id == old)  # out, or shown as history


def test_time_travel_and_the_archive_scope_still_reach_the_history(served):
    mem = served["mem"]
    old = _id(served, "We decided to use PostgreSQL")
    then = mem.search(TENANT, "alice", "What database does Atlas use?", k=3, now=datetime(2024, 3, 15, tzinfo=UTC))
    assert then[0].memory_id == old and "superseded" not in then[0].breakdown
    everything = mem.search(TENANT, "alice", "PostgreSQL", k=10, now=ASKED, scope="all")
    assert old in [h.memory_id for h in everything]


def test_reading_a_superseded_turn_does_not_reinforce_it(served):
    mem = served["mem"]
    old, new = _id(served, "We decided to use PostgreSQL"), _id(served, "Change of plan")

    def counts():
        mem.stats()  # a query that writes the buffered touches first
        rows = {r["memory_id"]: r for r in mem.retention(TENANT, "alice")}  # touches are dated when they happen
        return {m: (rows[m]["access_count"], rows[m]["ignored_touches"]) for m in (old, new)}

    before = counts()
    for _ in range(3):
        assert old in [h.memory_id for h in mem.search(TENANT, "alice", "Atlas database PostgreSQL", k=5, now=ASKED)]
        mem.build_context(TENANT, "alice", "What database does Atlas use?", token_budget=300, now=ASKED)
    after = counts()
    assert after[old] == before[old]  # neither counted nor recorded
    assert after[new][0] == before[new][0] + 3 and after[new][1] == before[new][1] + 3  # 3 contexts, 3 searches


def test_a_constraint_is_never_swept_however_long_it_goes_unread(served):
    mem = served["mem"]
    rule, hike = _id(served, "Constraint from the club"), _id(served, "I went hiking")
    later = datetime(2026, 1, 1, tzinfo=UTC)
    swept = {m for row in mem.sweep(later, tenant=TENANT, user_id="alice", dry_run=True) for m in row["memory_ids"]}
    assert hike in swept and rule not in swept
    [row] = [r for r in mem.retention(TENANT, "alice", now=later) if r["memory_id"] == rule]
    assert row["exempt"] and row["retention"] == 1.0 and "constraint" in row["why"]


def _data(result) -> dict:
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


def test_over_mcp_an_allergy_survives_the_assistants_reply_and_a_superseded_decision_is_labelled(served):
    async def run():
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {served['key']}"}, timeout=120) as client:
            async with streamable_http_client(f"{served['url']}/mcp", http_client=client) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    call = session.call_tool
                    await call("add_memory", {"user_id": "bob", "user_input": "I have a severe peanut allergy",
                                              "agent_response": "Got it, I'll avoid peanuts",
                                              "timestamp": "2024-03-05T09:00:00+00:00"})
                    for text, at in (("We decided to use PostgreSQL for the shop's database.", "2024-03-05T10:00"),
                                     ("We decided to switch the shop's database to MySQL instead of PostgreSQL.",
                                      "2024-04-10T10:00")):
                        await call("add_memory", {"user_id": "bob", "user_input": text, "timestamp": f"{at}:00+00:00"})
                    ctx = _data(await call("build_context", {"user_id": "bob", "query": "What snacks should I buy "
                                                             "for Bob's party?", "token_budget": 200}))
                    found = _data(await call("retrieve_memory", {"user_id": "bob", "query": "Which database does the "
                                                                 "shop use?", "max_results": 5}))
                    return ctx, found

    ctx, found = anyio.run(run)
    assert "peanut allergy" in ctx["text"]
    assert "MySQL" in found["hits"][0]["text"] and "superseded" not in found["hits"][0]["breakdown"]
    labelled = [h for h in found["hits"] if h["text"].startswith("We decided to use PostgreSQL")]
    assert labelled and labelled[0]["breakdown"]["superseded"].endswith(" on 2024-04-10")


def test_the_replay_reproduces_every_view(served):
    assert all(r.equal for r in served["mem"].replay())
