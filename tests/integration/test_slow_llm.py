"""A slow language model never holds up a search: the shard asks it for follow-ups with no lock held.

A real local Ray, real DuckDB and LanceDB files, and the scripted OpenAI-compatible server over a real socket
answering every episode title after ``DELAY_S``. The store is written offline, then opened with the model
configured: the first search's touches are flushed by the shard's timer, whose reaction finds a closed episode
without a model title and queues the call (:mod:`actors.reactor`). While that call is in flight, another search
must answer well within the delay; before, the flush held the projections' lock for the whole call.
"""

from __future__ import annotations

import time

import pytest

from palimpsest import Memory
from tests.builders import command
from tests.fakes.openai_server import FakeOpenAI, Reply, schema_name

pytestmark = pytest.mark.integration
DELAY_S = 3.0
MODEL = "slow-model"
TITLE = {"title": "Planning the Atlas launch", "summary": "Maya set the launch for May."}
NOTHING = {"ProfileDistillation": {"traits": {}, "user_knowledge": [], "assistant_knowledge": []},
           "NoteOperations": {"operations": []}, "GraphMemories": {"memories": []}}


def slow_titles(body: dict) -> Reply:
    name = schema_name(body)
    if name == "EpisodeTitle":
        return Reply.json(TITLE, delay_s=DELAY_S)
    return Reply.json(NOTHING.get(name, {}))


def _wait_for(predicate, seconds: float) -> float:
    """Poll ``predicate`` until it holds; the monotonic time it did (fails the test after ``seconds``)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return time.monotonic()
        time.sleep(0.01)
    pytest.fail(f"not within {seconds} s")


def test_a_search_answers_while_a_title_call_is_in_flight(ray_cluster, tmp_path, monkeypatch):
    store = tmp_path / "store"
    offline = Memory.open(store, num_shards=1, embedder="hash")
    try:
        offline.add_messages([command("We planned the Atlas launch for May.", 0, speaker="Maya", conversation_id="c-1"),
                              command("Miso knocked my coffee over.", 90, speaker="Maya", conversation_id="c-2")])
    finally:
        offline.close()

    with FakeOpenAI(responder=slow_titles) as server:
        monkeypatch.setenv("PALIMPSEST_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("PALIMPSEST_LLM_MODEL", MODEL)
        monkeypatch.setenv("PALIMPSEST_LLM_TIMEOUT_S", str(DELAY_S * 3))
        mem = Memory.open(store)
        try:
            assert [e["titler"] for e in mem.episodes("acme", "alice")] == ["extractive", "extractive"]
            assert mem.search("acme", "alice", "Atlas launch")  # its touches' flush queues the title
            asked = _wait_for(lambda: any(schema_name(r.body) == "EpisodeTitle" for r in server.requests), 30)

            started = time.monotonic()
            hits = mem.search("acme", "alice", "coffee")
            answered = time.monotonic()
            assert hits and answered - started < 1.0, f"a search took {answered - started:.2f} s"
            assert answered - asked < DELAY_S  # the call was still in flight: no title yet either
            assert mem.episodes("acme", "alice")[0]["titler"] == "extractive"

            # Once the model answers, the reactor records the call and the title.
            _wait_for(lambda: mem.episodes("acme", "alice")[0]["titler"] == f"llm:{MODEL}", 30)
            assert mem.episodes("acme", "alice")[0]["title"] == TITLE["title"]
            purposes = [e.event.purpose for e in mem.events("acme", "alice", kinds=["llm_call_recorded"])]
            assert purposes == ["episode_title"]
            assert all(report.equal for report in mem.replay())  # the title is in the log: no model asked again
            assert sum(schema_name(r.body) == "EpisodeTitle" for r in server.requests) == 1
        finally:
            mem.close()
