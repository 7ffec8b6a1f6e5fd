"""The memory graph with a language model: extraction at ingest and the causality check in consolidation.

Against the real-socket fake server (``tests.fakes.openai_server``) with
scripted replies: a shard (real DuckDB log, real LanceDB directory) stages
the model's ``create_memory`` proposals with their call, drops invalid ones
with a reason, and falls back to the offline rules when the model fails; a
store on a local Ray asks the model which linked memories are causal during
consolidation, and replays with the model gone.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from actors.consolidation import run_consolidation
from actors.llm import LlmConfig
from actors import commands as c
from actors.core import ShardCore
from actors.spec import ShardSpec
from events.commands import validate_messages
from events.graph_events import GraphEdgeLinked, GraphMemoryStaged, GraphProposalRejected
from palimpsest import Memory
from projections.adapters.embedding import HashEmbedder
from projections.decisions.graph_staging import candidates_for, labels_of, staged_event
from projections.rules.graph_extract import EXTRACTOR_ID, extract_graph_memories
from tests.builders import T0, command
from tests.fakes.openai_server import FakeOpenAI, Reply

pytestmark = pytest.mark.integration
EMBED = HashEmbedder()
MODEL = "scripted-model"
NO_NOTES = Reply.json({"operations": []})  # the note call that follows the graph call of each record batch
TURNS = ("I lost my job yesterday.", "So I moved back in with my parents.", "I like green tea.")


def spec_for(tmp_path, base_url: str) -> ShardSpec:
    llm = LlmConfig(base_url=base_url, model=MODEL, timeout_s=0.5, max_retries=1, backoff_base_s=0.01)
    return ShardSpec(index=0, log_path=tmp_path / "shard-000.duckdb", lance_dir=tmp_path / "vectors",
                     model_id=EMBED.model_id, dim=384, llm=llm)


def record(svc: ShardCore, *texts: str, start: int = 0):
    """Record ``texts`` as Maya's turns with the graph memories the offline rules read (as ``Memory`` does)."""
    commands = validate_messages([command(t, start + i, speaker="Maya") for i, t in enumerate(texts)])
    candidates = candidates_for(commands)
    labels = labels_of(candidates)
    vectors = dict(zip(labels, EMBED.encode(labels)))
    graph = [tuple(staged_event(c, vectors, occurred_at=cmd.occurred_at, extractor=c.extractor) for c in group)
             for cmd, group in zip(commands, candidates)]
    [outcomes] = svc.handle([c.RecordMessages(messages=tuple(commands), vectors=EMBED.encode([m.index_text() for m in commands]),
                                              model_id=EMBED.model_id, graph=tuple(graph))])
    return outcomes


def logged(svc: ShardCore, kind: str) -> list:
    return [e for e in svc.log.scan() if e.kind == kind]


def memory(index: int, subject: str, memory_type: str, topic: str, obj: str | None = None, **extra) -> dict:
    return {"source_message_index": index, "subject": subject, "memory_type": memory_type, "topic": topic,
            "object": obj, **extra}


def test_the_model_proposes_the_memories_staged_with_its_call_and_the_extractor(tmp_path):
    with FakeOpenAI() as server:
        svc = ShardCore(spec_for(tmp_path, server.base_url))
        server.script(Reply.json({"memories": [
            memory(0, "I", "事件", "lose", "job", attributes={"time": "yesterday"}, importance=0.8),
            memory(1, "Maya", "event", "move in", "parents' house", attributes={"with": "parents"}, importance=0.7),
        ]}), NO_NOTES)
        outcomes = record(svc, *TURNS[:2])

        [call] = [c for c in logged(svc, "llm_call_recorded") if c.event.purpose == "graph_memories"]
        prompt = server.requests[0].body["messages"][1]["content"]
        assert "[0] " in prompt and "[1] " in prompt and "user (Maya): I lost my job yesterday." in prompt
        staged = logged(svc, "graph_memory_staged")
        assert [(s.event.topic, s.event.object) for s in staged] == [("lose", "job"), ("move in", "parents' house")]
        for envelope, outcome in zip(staged, outcomes, strict=True):
            event: GraphMemoryStaged = envelope.event
            assert (event.extractor, event.llm_call_id, event.reason) == (f"llm:{MODEL}", call.event_id, None)
            assert event.source_message_ids == (outcome["memory_id"],) and envelope.causation_id == outcome["memory_id"]
        lose, move = (s.event for s in staged)
        # "I" is the speaker, the seed's 事件 is an event, "yesterday" is resolved against the turn's time.
        assert (lose.subject, lose.memory_type, lose.attributes) == ("Maya", "event", {"time": "2024-04-30"})
        assert lose.occurred_at == datetime(2024, 4, 30, tzinfo=UTC) and lose.importance == 0.8
        assert move.occurred_at == T0 + timedelta(minutes=1)
        # The shard embeds nothing: the model's labels wait, like the offline rules' ones, for the driver's pass.
        assert move.vector("parents' house") is None and move.dim == 0
        assert "parents' house" in svc.state.user("acme", "alice").graph.unembedded_labels()
        graph = svc.state.user("acme", "alice").graph
        assert {m.extractor for m in graph.memories.values()} == {f"llm:{MODEL}"}
        assert not logged(svc, "graph_proposal_rejected")
        before = svc.query(c.Digest())
    assert svc.admin(c.Replay()).equal and svc.query(c.Digest()) == before  # the server is gone: the memories are in the log
    svc.close()


def test_an_invalid_proposal_is_dropped_with_its_reason_and_the_valid_ones_staged(tmp_path):
    with FakeOpenAI() as server:
        svc = ShardCore(spec_for(tmp_path, server.base_url))
        server.script(Reply.json({"memories": [
            memory(0, "Maya", "dream", "fly", importance=1.7),
            memory(1, "Maya", "relation", "parents"),
            memory(5, "Maya", "event", "cook"),
            memory(1, "Maya", "event", "move in", "parents' house"),
            memory(1, "maya", "event", "Move in", "parents'  house"),
        ]}), NO_NOTES)
        outcomes = record(svc, *TURNS[:2])

        [call] = [c for c in logged(svc, "llm_call_recorded") if c.event.purpose == "graph_memories"]
        [staged] = logged(svc, "graph_memory_staged")
        assert (staged.event.topic, staged.event.extractor, staged.event.llm_call_id) == (
            "move in", f"llm:{MODEL}", call.event_id)
        rejected: list[GraphProposalRejected] = [e.event for e in logged(svc, "graph_proposal_rejected")]
        assert len(rejected) == 4
        assert all((r.llm_call_id, r.proposed, r.decider) == (call.event_id, "create_memory", f"llm:{MODEL}")
                   for r in rejected)
        assert "memory_type: 'dream' is not allowed" in rejected[0].reason and "importance" in rejected[0].reason
        assert "object: a relation memory needs the other party" in rejected[1].reason
        assert rejected[2].reason == "source_message_index 5 names no dialogue line"
        assert rejected[3].reason.startswith("repeats an earlier proposal for line 1")
        assert rejected[0].source_message_ids == (outcomes[0]["memory_id"],) and rejected[2].source_message_ids == ()
        assert '"topic": "fly"' in rejected[0].proposal
    svc.close()


def test_a_reply_with_nothing_usable_stages_the_offline_memories_and_says_why(tmp_path):
    with FakeOpenAI() as server:
        svc = ShardCore(spec_for(tmp_path, server.base_url))
        server.script(Reply.json({"memories": [memory(0, "Maya", "dream", "fly")]}), NO_NOTES)
        record(svc, TURNS[0])
        [staged] = [e.event for e in logged(svc, "graph_memory_staged")]
        assert (staged.topic, staged.extractor) == ("lose", EXTRACTOR_ID)
        assert staged.reason.startswith("llm reply unusable (1 proposal(s) rejected, first: memory_type: 'dream'")
        assert staged.reason.endswith("; offline rules: graph-rules-v2")
        assert len(logged(svc, "graph_proposal_rejected")) == 1
    svc.close()


def test_with_the_server_down_the_offline_rules_stage_the_memories_and_the_reason_says_so(tmp_path):
    svc = ShardCore(spec_for(tmp_path, "http://127.0.0.1:9"))  # nothing listens there
    record(svc, *TURNS[:2])

    [call] = [c for c in logged(svc, "llm_call_recorded") if c.event.purpose == "graph_memories"]
    assert call.event.error and call.event.parsed_json is None and call.event.attempts == 2
    staged = [e.event for e in logged(svc, "graph_memory_staged")]
    expected = [m for i, text in enumerate(TURNS[:2])
                for m in extract_graph_memories(text, speaker="Maya", occurred_at=T0 + timedelta(minutes=i))]
    assert [(s.subject, s.memory_type, s.topic, s.object) for s in staged] == [
        (m.subject, m.memory_type, m.topic, m.object) for m in expected]
    for s in staged:
        assert (s.extractor, s.llm_call_id) == (EXTRACTOR_ID, call.event_id)
        assert s.reason.startswith("llm unavailable (") and s.reason.endswith("); offline rules: graph-rules-v2")
        assert "127.0.0.1:9" in s.reason
    svc.close()


def test_a_retried_causality_check_names_its_events_alike_and_appends_nothing_twice(tmp_path):
    verdict = Reply.json({"causal": [{"pair": 0, "cause": "A", "reason": "no job, no rent"}]})
    with FakeOpenAI() as server:
        svc = ShardCore(spec_for(tmp_path, server.base_url))
        server.script(Reply.json({"memories": [memory(0, "Maya", "event", "lose", "job"),
                                               memory(1, "Maya", "event", "move in", "parents' house")]}), NO_NOTES)
        record(svc, *TURNS[:2])
        jobs = svc.query(c.GraphJobs())
        server.script(verdict, verdict)
        first = run_consolidation(jobs, parallel=False, llm=svc.spec.llm)
        again = run_consolidation(jobs, parallel=False, llm=svc.spec.llm)  # a retried task asks again
        assert [i for i, _ in first[("acme", "alice")]] == [i for i, _ in again[("acme", "alice")]]
        events = first[("acme", "alice")]
        assert svc.handle([c.ApplyConsolidation(tenant="acme", user_id="alice", events=tuple(events))])[0] == len(events)
        assert svc.handle([c.ApplyConsolidation(tenant="acme", user_id="alice", events=tuple(again[("acme", "alice")]))])[0] == 0  # a retried append
        causal = [e for e in svc.state.user("acme", "alice").graph.edges.values() if e.edge_type == "causality"]
        assert len(causal) == 1 and len(logged(svc, "llm_call_recorded")) == 3  # graph, notes, causality
    svc.close()


# -- through the public API, on Ray ---------------------------------------------------------


@pytest.fixture
def llm_env(monkeypatch):
    with FakeOpenAI() as server:
        monkeypatch.setenv("PALIMPSEST_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("PALIMPSEST_LLM_MODEL", MODEL)
        monkeypatch.setenv("PALIMPSEST_LLM_MAX_RETRIES", "0")
        monkeypatch.setenv("PALIMPSEST_LLM_TIMEOUT_S", "2")
        yield server


def causal_edges(graphml: str) -> list[ET.Element]:
    ns = {"g": "http://graphml.graphdrawing.org/xmlns"}
    edges = ET.fromstring(graphml.split("\n", 1)[1]).iterfind(".//g:edge", ns)
    return [e for e in edges if any(d.get("key") == "e_edge_type" and d.text == "causality" for d in e)]


def test_consolidation_asks_which_linked_memories_are_causal_and_replays_without_the_model(
        ray_cluster, tmp_path, llm_env):
    server = llm_env
    mem = Memory.open(tmp_path / "store", num_shards=1, embedder="hash")
    try:
        server.script(Reply.json({"memories": [
            memory(0, "I", "event", "lose", "job"), memory(1, "I", "event", "move in", "parents' house"),
            memory(2, "I", "fact", "like", "green tea")]}), NO_NOTES)
        mem.add_messages([command(t, 2 * i, speaker="Maya", user_id="maya") for i, t in enumerate(TURNS)])
        staged = {e.event.topic: e.event_id for e in mem.events("acme", "maya", kinds=["graph_memory_staged"])}
        assert set(staged) == {"lose", "move in", "like"}

        # The offline step links the turns close in time: (lose, move in) is pair 0, (move in, like) pair 1.
        server.script(Reply.json({"causal": [{"pair": 0, "cause": "A", "reason": "losing the job led to the move"},
                                             {"pair": 7, "cause": "A"}]}))
        mem.consolidate()
        prompt = server.requests[-1].body["messages"][1]["content"]
        assert "[0] A: Maya lose job" in prompt and "B: Maya move in parents' house" in prompt
        assert "[1] A: Maya move in parents' house" in prompt and "B: Maya like green tea" in prompt

        [call] = [e for e in mem.events("acme", "maya", kinds=["llm_call_recorded"])
                  if e.event.purpose == "graph_causality"]
        links = [e for e in mem.events("acme", "maya", kinds=["graph_edge_linked"])
                 if e.event.relation_type == "causality"]
        assert len(links) == 1
        edge: GraphEdgeLinked = links[0].event
        assert (edge.source_id, edge.target_id, edge.relation) == (staged["lose"], staged["move in"], "causes")
        assert (edge.llm_call_id, edge.discovered_by, edge.reason) == (
            call.event_id, f"consolidate:llm:{MODEL}", "losing the job led to the move")
        [rejected] = [e.event for e in mem.events("acme", "maya", kinds=["graph_proposal_rejected"])]
        assert rejected.proposed == "causal_link" and "pair 7 names no pair shown" in rejected.reason

        exported = mem.graph_export("acme", "maya")
        [exported_edge] = causal_edges(exported["graphml"])
        assert (exported_edge.get("source"), exported_edge.get("target")) == (
            f"memory:{staged['lose']}", f"memory:{staged['move in']}")
        found = mem.search_memories("acme", "maya", query="why did Maya move in with her parents?", mode="deep",
                                    expand_depth=1, max_results=10)
        by_id = {h["memory_id"]: h for h in found["hits"]}
        assert "causality:causes" in by_id[staged["lose"]]["via"]
        before, asked = mem.digest(), len(server.requests)
        server.stop()

        assert all(report.equal for report in mem.replay())  # the model is gone: the edge is in the log
        assert mem.digest() == before and len(server.requests) == asked
    finally:
        mem.close()
