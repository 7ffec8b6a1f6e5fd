"""Queries over the shards' read channels on a real local Ray: the same answers as through Ray, errors raised as
themselves, and a shard killed mid-session answers again (through Ray, then over its new incarnation's channel)."""

from __future__ import annotations

import os
import signal
import time
from datetime import UTC, datetime

import pytest
import ray

from actors import commands as c
from events.errors import InvalidInputError
from palimpsest import Memory
from palimpsest.remote import get
from tests.builders import command

pytestmark = pytest.mark.integration
NOW = datetime(2024, 6, 1, tzinfo=UTC)
TALK = [
    command("I adopted a puppy named Biscuit last week", 0, speaker="Alice", turn_id="D1:1"),
    command("My sister works as a nurse in Boston", 1, speaker="Alice", turn_id="D1:2"),
    command("我们上个月去了杭州看西湖", 2, speaker="Alice", turn_id="D1:3"),
]


@pytest.fixture
def mem(ray_cluster, tmp_path):
    memory = Memory.open(tmp_path / "store", num_shards=2, embedder="hash")
    memory.add_messages(TALK)
    yield memory
    memory.close()


def through_ray(memory: Memory, query) -> object:
    return get(memory.shards.of("acme", "alice").query.remote([query]))[0]


def test_a_search_over_the_channel_answers_what_ray_answers_and_a_shard_error_comes_back_as_itself(mem):
    hits = mem.search("acme", "alice", "Who is a nurse?", k=3, now=NOW)
    index = mem.shards.index_of("acme", "alice")
    client = mem.shards.channels._clients[index]
    assert client is not None and client.path.endswith(f"shard-{index}")  # the channel was used
    vec = mem.embedder.encode(["Who is a nurse?"])[0]
    query = c.Search(tenant="acme", user_id="alice", query="Who is a nurse?", query_vector=vec, k=3, now=NOW,
                     scope="active", fusion=mem.settings.fusion, touch_reason=None)
    assert [h.memory_id for h in hits] == [h.memory_id for h in through_ray(mem, query)]
    assert "nurse" in hits[0].text
    chinese = mem.search("acme", "alice", "杭州西湖", k=1, now=NOW)
    assert "西湖" in chinese[0].text
    ctx = mem.build_context("acme", "alice", "Biscuit the puppy", token_budget=200, now=NOW)
    assert "Biscuit" in ctx.text

    # A shard's error comes back as itself, over the channel, which stays open (one store for both: an open costs
    # seconds of the suite).
    with pytest.raises(InvalidInputError, match="matches no memory of this user"):  # raised by the shard
        mem.shards.ask("acme", "alice", c.MemoryRetention(tenant="acme", user_id="alice", memory_id="nope", now=NOW))
    assert mem.shards.channels._clients[index] is client
    assert mem.search("acme", "alice", "puppy", k=1, now=NOW)


def test_an_idle_shard_warms_its_users_read_indexes_and_writes_nothing(mem):
    actor = mem.shards.of("acme", "alice")
    mem.embed_labels()  # the labels' reactor's pass (the ingest's, not the idle shard's), done before counting
    events = mem.stats()["events"]
    deadline = time.monotonic() + 30
    while get(actor.warmed.remote()) < 1 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert get(actor.warmed.remote()) == 1  # its one user, once
    assert mem.stats()["events"] == events
    assert "nurse" in mem.search("acme", "alice", "Who is a nurse?", k=1, now=NOW)[0].text


def test_a_killed_shard_answers_again_and_its_new_channel_is_used(mem):
    before = [h.memory_id for h in mem.search("acme", "alice", "Boston", k=2, now=NOW)]
    index = mem.shards.index_of("acme", "alice")
    old = mem.shards.channels._clients[index]
    actor = mem.shards.actor(index)
    os.kill(ray.get(actor.pid.remote()), signal.SIGKILL)
    # The kept connection breaks: the query goes through Ray, which waits for the restart.
    assert [h.memory_id for h in mem.search("acme", "alice", "Boston", k=2, now=NOW)] == before
    assert index not in mem.shards.channels._clients and old.closed
    time.sleep(mem.shards.channels.RETRY_AFTER_S + 0.1)
    assert [h.memory_id for h in mem.search("acme", "alice", "Boston", k=2, now=NOW)] == before
    new = mem.shards.channels._clients[index]
    assert new is not None and new is not old and new.path != old.path


def test_with_the_channel_switched_off_every_query_goes_through_ray(ray_cluster, tmp_path, monkeypatch):
    monkeypatch.setenv("PALIMPSEST_READ_CHANNEL", "0")
    with Memory.open(tmp_path / "store", num_shards=1, embedder="hash") as memory:
        memory.add_messages(TALK)
        assert "nurse" in memory.search("acme", "alice", "nurse", k=1, now=NOW)[0].text
        assert memory.shards.channels._clients == {}


def test_wait_idle_returns_once_the_shards_warmed_and_an_ingest_leaves_them_quiet(mem):
    waited = mem.wait_idle(timeout=60)
    assert waited >= 0 and all(get(a.idle_work.remote()) == 0 for a in mem.shards.live())
    warmed = sum(get([a.warmed.remote() for a in mem.shards.live()]))
    assert warmed >= 1
    for actor in mem.shards.live():  # what an ingest of several chunks sends each shard at every chunk
        actor.quiet.remote(60.0)
    mem.add_messages([{"tenant": "acme", "user_id": "bob", "role": "user", "text": "I moved to Denver.",
                       "occurred_at": NOW}], batch_size=1)
    time.sleep(6)  # past the idle time a shard waits for
    assert sum(get([a.warmed.remote() for a in mem.shards.live()])) == warmed  # the lease held the warm-ups back
    for actor in mem.shards.live():
        actor.quiet.remote(0.0)
    assert mem.wait_idle(timeout=60) > 0
    assert sum(get([a.warmed.remote() for a in mem.shards.live()])) > warmed
    with pytest.raises(InvalidInputError, match="timeout"):
        mem.wait_idle(timeout=0)
