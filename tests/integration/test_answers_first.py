"""A command whose decider asks a language model is decided with the answers already given: the model is asked
with no lock held (:mod:`actors.answers_first`).

A real DuckDB log, a real LanceDB directory and the scripted OpenAI-compatible server on a real socket.
"""

from __future__ import annotations

import threading
import time

import pytest

from actors import answers_first
from actors import commands as c
from actors.core import ShardCore
from actors.spec import ShardSpec
from actors.llm import LlmConfig
from tests.builders import command
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.shard_helpers import EMBED, record_command, search

pytestmark = pytest.mark.integration
MODEL = "scripted-model"
DELAY_S = 1.5


def spec_for(tmp_path, base_url: str, timeout_s: float = 0.3) -> ShardSpec:
    llm = LlmConfig(base_url=base_url, model=MODEL, timeout_s=timeout_s, max_retries=1, backoff_base_s=0.01)
    return ShardSpec(index=0, log_path=tmp_path / "shard-000.duckdb", lance_dir=tmp_path / "vectors",
                     model_id=EMBED.model_id, dim=384, llm=llm)


def op(kind, index, target=None, text=None, category=None, reason="because") -> dict:
    return {"op": kind, "target_note_id": target, "category": category, "text": text,
            "source_message_index": index, "reason": reason}


def locks():
    return threading.Lock(), threading.Lock()


def test_each_ask_goes_to_the_model_once_and_the_decision_names_the_call(tmp_path):
    writing, projections = locks()
    with FakeOpenAI() as server:
        core = ShardCore(spec_for(tmp_path, server.base_url))
        server.script(Reply.json({"operations": [
            op("add", 0, text="The project uses PostgreSQL", category="decision", reason="a stated decision")]}))
        [first] = answers_first.handle(core, [record_command([command("Our project runs on PostgreSQL.", 0)])],
                                       writing=writing, projections=projections)
        [note] = core.state.user("acme", "alice").notes.active()
        server.script(Reply.json({"operations": [
            op("update", 0, note.note_id, "The project uses MySQL", "decision", "moved to MySQL")]}))
        answers_first.handle(core, [record_command([command("We moved everything over to MySQL.", 1)])],
                             writing=writing, projections=projections)
        assert len(server.requests) == 2  # one ask per command: the round that decides reuses the answer

    [active] = core.state.user("acme", "alice").notes.active()
    assert (active.text, active.version, active.supersedes) == ("The project uses MySQL", 2, note.note_id)
    calls = [e for e in core.log.scan() if e.kind == "llm_call_recorded"]
    assert len(calls) == 2 and all(e.event.error is None for e in calls)  # no placeholder reached the log
    ops = {e.event_id: e.event for e in core.log.scan() if e.kind == "note_operation"}
    assert ops[active.note_id].llm_call_id == calls[1].event_id
    assert first[0]["created"] is True
    digest = core.query(c.Digest())
    assert core.admin(c.Replay()).equal and core.query(c.Digest()) == digest
    core.close()


def test_a_retried_command_is_not_asked_again(tmp_path):
    writing, projections = locks()
    with FakeOpenAI(responder=lambda body: Reply.json({"operations": []})) as server:
        core = ShardCore(spec_for(tmp_path, server.base_url))
        cmd = record_command([command("I prefer green tea in the morning.", 0)])
        once = answers_first.handle(core, [cmd], writing=writing, projections=projections)
        asked = len(server.requests)
        again = answers_first.handle(core, [cmd], writing=writing, projections=projections)
        assert again == once and len(server.requests) == asked == 1
        core.close()


def test_queries_are_answered_while_the_model_thinks(tmp_path):
    """The model takes 1.5 s; a search sent meanwhile takes the projections' lock at once."""
    writing, projections = locks()
    with FakeOpenAI(responder=lambda body: Reply.json({"operations": []}, delay_s=DELAY_S)) as server:
        core = ShardCore(spec_for(tmp_path, server.base_url, timeout_s=10.0))
        core.handle([record_command([command("We chose Fly.io for hosting.", 0)])])  # a first turn, no model yet
        server.requests.clear()
        writer = threading.Thread(target=answers_first.handle, daemon=True, kwargs=dict(
            core=core, commands=[record_command([command("The club meets on Tuesdays.", 1)])],
            writing=writing, projections=projections))
        writer.start()
        deadline = time.monotonic() + 5
        while not server.requests and time.monotonic() < deadline:  # the ask is in flight
            time.sleep(0.01)
        assert server.requests, "the model was never asked"
        started = time.perf_counter()
        with projections:
            hits = search(core, "hosting")
        waited = time.perf_counter() - started
        writer.join(timeout=10)
        assert not writer.is_alive()
        assert waited < DELAY_S / 3, f"the search waited {waited:.2f} s for the model"
        assert hits and "Fly.io" in hits[0].text
        assert sum(e.kind == "message_recorded" for e in core.log.scan()) == 2
        core.close()
