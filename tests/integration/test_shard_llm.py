"""A shard whose notes are decided by a language model: recorded once, replayed with the model gone.

A real DuckDB log file, a real LanceDB directory and a real-socket OpenAI-compatible
server with scripted replies (``tests.fakes.openai_server``).
"""

from __future__ import annotations

import pytest

from dataclasses import replace

from actors.followups import answered
from actors.llm import LlmConfig, RecordedLlm, titles
from actors.reactor import Reactor
from projections.folds.episode_titles import TitleState
from actors import commands as c
from actors.core import ShardCore
from actors.spec import ShardSpec
from events.commands import validate_messages
from projections.adapters.embedding import HashEmbedder
from tests.shard_helpers import record as record_items
from tests.builders import command
from tests.fakes.openai_server import FakeOpenAI, Reply

pytestmark = pytest.mark.integration
EMBED = HashEmbedder()
MODEL = "scripted-model"


def spec_for(tmp_path, base_url: str) -> ShardSpec:
    llm = LlmConfig(base_url=base_url, model=MODEL, timeout_s=0.3, max_retries=1, backoff_base_s=0.01)
    return ShardSpec(index=0, log_path=tmp_path / "shard-000.duckdb", lance_dir=tmp_path / "vectors",
                     model_id=EMBED.model_id, dim=384, llm=llm)


def record(svc: ShardCore, *texts: str, start: int = 0):
    return record_items(svc, [command(t, start + i, speaker="Maya") for i, t in enumerate(texts)])


def op(kind, index, target=None, text=None, category=None, reason="because") -> dict:
    return {"op": kind, "target_note_id": target, "category": category, "text": text,
            "source_message_index": index, "reason": reason}


def test_llm_note_operations_are_recorded_and_replay_without_the_model(tmp_path):
    with FakeOpenAI() as server:
        svc = ShardCore(spec_for(tmp_path, server.base_url))
        server.script(Reply.json({"operations": [
            op("add", 0, text="The project uses PostgreSQL", category="decision", reason="a stated decision")]}))
        record(svc, "Our project runs on PostgreSQL for now.")
        [note] = svc.state.user("acme", "alice").notes.active()
        server.script(Reply.json({"operations": [
            op("update", 0, note.note_id, "The project uses MySQL", "decision", "the team replaced PostgreSQL")]}))
        record(svc, "The hosting team made us move the whole thing over to MySQL.", start=1)

        memory = svc.state.user("acme", "alice")
        [active] = memory.notes.active()
        assert (active.text, active.version, active.supersedes, active.decider) == (
            "The project uses MySQL", 2, note.note_id, f"llm:{MODEL}")
        calls = [e for e in svc.log.scan() if e.kind == "llm_call_recorded"]
        assert len(calls) == 2 and all(c.event.purpose == "note_operations" for c in calls)
        assert active.note_id in {e.event_id for e in svc.log.scan() if e.kind == "note_operation"}
        ops = {e.event_id: e.event for e in svc.log.scan() if e.kind == "note_operation"}
        assert ops[active.note_id].llm_call_id == calls[1].event_id  # the decision names the call it came from
        assert len(server.requests) == 2
        before = svc.query(c.Digest())

    # The server is gone: replay folds the recorded operations and never asks again.
    report = svc.admin(c.Replay())
    assert report.equal and svc.query(c.Digest()) == before
    svc.close()
    reopened = ShardCore(spec_for(tmp_path, "http://127.0.0.1:9"))  # nothing listens there
    assert reopened.digest() == before
    # A new message with the model unreachable: the offline rules decide, and the note says so.
    record(reopened, "I prefer green tea in the morning.", start=2)
    note = next(n for n in reopened.state.user("acme", "alice").notes.active() if "tea" in n.text)
    assert note.decider == "rules-v1" and note.reason.startswith("llm unavailable")
    failed = [e for e in reopened.log.scan() if e.kind == "llm_call_recorded"][-1].event
    assert failed.error and failed.parsed_json is None
    reopened.close()


def test_usage_is_judged_by_the_model_when_configured(tmp_path):
    with FakeOpenAI() as server:
        svc = ShardCore(spec_for(tmp_path, server.base_url))
        server.script(Reply.json({"operations": []}))
        [out] = record(svc, "We decided to deploy Atlas on Fly.io.")
        server.script(Reply.json({"used_ids": [out["memory_id"]]}))
        [used] = svc.handle([c.RecordReply(tenant="acme", user_id="alice", reply="It runs on Fly.io in Frankfurt.",
                                           memory_ids=(out["memory_id"],), query="where is it?")])
        assert [u["memory_id"] for u in used] == [out["memory_id"]]
        touched = [e.event for e in svc.log.scan() if e.kind == "memory_touched"][-1]
        assert (touched.reason, touched.memory_ids) == ("used", (out["memory_id"],))
        assert "It runs on Fly.io in Frankfurt." in server.requests[-1].body["messages"][1]["content"]
        assert svc.state.user("acme", "alice").retention.items[out["memory_id"]].access_count == 1
        assert [e.event.purpose for e in svc.log.scan() if e.kind == "llm_call_recorded"] == [
            "note_operations", "usage_judge"]
        svc.close()


def test_replies_recorded_together_have_their_usage_judged_by_the_model_outside_the_lock(tmp_path):
    from actors import answers_first

    with FakeOpenAI() as server:
        svc = ShardCore(spec_for(tmp_path, server.base_url))
        server.script(Reply.json({"operations": []}), Reply.json({"operations": []}))
        [fly] = record(svc, "We decided to deploy Atlas on Fly.io.")
        [tea] = record(svc, "我每天早上喝绿茶。", start=1)
        server.script(Reply.json({"used_ids": [fly["memory_id"]]}), Reply.json({"used_ids": []}))
        [both] = answers_first.handle(svc, [c.RecordReplies(replies=(
            c.RecordReply(tenant="acme", user_id="alice", reply="It runs on Fly.io.", memory_ids=(fly["memory_id"],)),
            c.RecordReply(tenant="acme", user_id="alice", reply="好的。", memory_ids=(tea["memory_id"],))))])
        assert [[u["memory_id"] for u in used] for used in both] == [[fly["memory_id"]], []]
        calls = [e.event for e in svc.log.scan() if e.kind == "llm_call_recorded" and e.event.purpose == "usage_judge"]
        assert len(calls) == 2 and not any(call.error for call in calls)  # each asked once, before the decision
        svc.close()


def test_a_closed_episode_gets_a_model_title_recorded_and_shown(tmp_path):
    with FakeOpenAI() as server:
        svc = ShardCore(spec_for(tmp_path, server.base_url))
        server.script(Reply.json({"operations": []}))
        first = validate_messages([command("We planned the Atlas launch for May.", 0, speaker="Maya",
                                           conversation_id="c-1")])
        record_items(svc, first)
        # A new conversation closes the first episode: the shard asks the model for its title.
        server.script(Reply.json({"operations": []}),
                      Reply.json({"title": "Planning the Atlas launch", "summary": "Maya set the launch for May."}))
        second = validate_messages([command("Miso knocked my coffee over.", 90, speaker="Maya", conversation_id="c-2")])
        record_items(svc, second)
        # The command's commit only queued the title: the model is asked by the reactor, with no lock held.
        assert [r.body["messages"][0]["content"][:16] for r in server.requests].count(titles.INSTRUCTIONS[:16]) == 0
        assert svc.query(c.Episodes(tenant="acme", user_id="alice"))[0]["titler"] == "extractive"
        [ask] = svc.waiting_asks()
        assert Reactor(svc).run() == 1 and not svc.waiting_asks()

        [titled, current] = svc.query(c.Episodes(tenant="acme", user_id="alice"))
        assert (titled["title"], titled["summary"], titled["titler"]) == (
            "Planning the Atlas launch", "Maya set the launch for May.", f"llm:{MODEL}")
        assert current["titler"] == "extractive" and current["open"]
        purposes = [e.event.purpose for e in svc.log.scan() if e.kind == "llm_call_recorded"]
        assert purposes == ["note_operations", "note_operations", "episode_title"]
        assert Reactor(svc).run() == 0  # asked once: the next commits do not ask again
        before = svc.query(c.Digest())
    # The decision from the answer is pure: the recorded call, replayed, decides the same title.
    logged = list(svc.log.scan())
    [call] = [e for e in logged if e.kind == "llm_call_recorded" and e.event.purpose == "episode_title"]
    [recorded] = [e for e in logged if e.kind == "episode_titled"]
    memory = svc.state.user("acme", "alice")
    again = answered(ask, ask.ask(RecordedLlm(logged)), memory, call.event_id)
    assert [p.event for p in again] == [call.event]  # titled already: only the call would be written again
    untitled = replace(memory, titles=TitleState())
    [_, decided] = answered(ask, ask.ask(RecordedLlm(logged)), untitled, call.event_id)
    assert decided.event == recorded.event
    assert svc.admin(c.Replay()).equal and svc.query(c.Digest()) == before  # the server is gone; the title is in the log
    assert svc.query(c.Episodes(tenant="acme", user_id="alice"))[0]["title"] == "Planning the Atlas launch"
    svc.close()
