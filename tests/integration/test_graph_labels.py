"""Graph labels embedded after the ingest: the turns' memories are staged without vectors; the labels' reactor
embeds every such label in one pass, recorded as ``graph_labels_embedded``, once the ingest pauses (or before a
consolidation); a graph read records nothing and ranks as it will once they are recorded; replay reads the
recorded vectors."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import numpy as np
import pytest

from actors import commands as c
from events.errors import InvalidInputError
from palimpsest import Memory
from palimpsest.label_reactor import IDLE_S_ENV
from tests.builders import command

pytestmark = pytest.mark.integration
TURNS = [
    command("I adopted a puppy named Max last week.", 0, speaker="Mel", user_id="mel", turn_id="D1:1",
            occurred_at="2023-05-08T13:56:00+00:00"),
    command("我昨天去了瑜伽课，感觉很放松。", 1, speaker="Mel", user_id="mel", turn_id="D1:2",
            occurred_at="2023-05-08T14:00:00+00:00"),
    command("I started painting sunsets on weekends.", 2, speaker="Jon", user_id="jon", turn_id="D1:3",
            occurred_at="2023-05-08T14:05:00+00:00"),
]


def kinds(mem: Memory, user_id: str) -> list[str]:
    return [e.kind for e in mem.events(tenant="acme", user_id=user_id)]


def label_events(mem: Memory, user_id: str) -> list[dict]:
    return [e for e in mem.events(tenant="acme", user_id=user_id, kinds=["graph_labels_embedded"])]


def ranked(answer: dict) -> list[tuple]:
    """Each hit's id, score but for its access term (the reads' own touches raise it), and distance."""
    return [(h["memory_id"], h["score"] - h["contributions"]["access"], h["distance"]) for h in answer["hits"]]


def test_a_graph_read_records_nothing_and_ranks_as_after_the_labels_are_recorded(ray_cluster, tmp_path):
    with Memory.open(tmp_path / "store", num_shards=2, embedder="hash") as mem:  # the reactor off (tests/conftest)
        mem.add_messages(TURNS, tenant="acme")
        assert "graph_memory_staged" in kinds(mem, "mel") and not label_events(mem, "mel")
        [(_, _, pending)] = mem.shards.ask("acme", "mel", c.UnembeddedLabels(tenant="acme", user_id="mel"))
        assert pending and all(isinstance(x, str) and x for x in pending)

        log_before = mem.events(tenant="acme", user_id="mel")
        hits = mem.search_memories("acme", "mel", query="puppy", mode="fast", max_results=1)["hits"]
        assert hits and "puppy" in hits[0]["summary"].lower()  # found by vector, right after the ingest
        read = mem.search_memories("acme", "mel", query="Why did I adopt a puppy?", mode="deep", max_results=5)
        plain = c.SearchMemories(tenant="acme", user_id="mel", query="puppy", query_vector=mem.embedder.encode(
            ["puppy"])[0], now=datetime(2023, 6, 1, tzinfo=UTC))
        assert set(mem.shards.ask("acme", "mel", plain)) == {"unembedded"}  # the shard does not rank without them
        after = [e for e in mem.events(tenant="acme", user_id="mel") if e.kind != "memory_touched"]
        assert [e.event_id for e in after] == [e.event_id for e in log_before]
        assert not label_events(mem, "mel")
        assert mem.shards.ask("acme", "mel", c.UnembeddedLabels(tenant="acme", user_id="mel")) == [
            ("acme", "mel", pending)]

        assert mem.embed_labels("acme", "mel") == len(pending)  # the reactor's pass: recorded once
        [event] = label_events(mem, "mel")
        assert sorted(event.event.vectors) == sorted(pending)
        assert not label_events(mem, "jon")  # another user's labels wait for their own pass
        assert mem.embed_labels("acme", "mel") == 0  # nothing left: nothing recorded twice
        again = mem.search_memories("acme", "mel", query="Why did I adopt a puppy?", mode="deep", max_results=5)
        assert ranked(read) and [m for m, _, d in ranked(read)] == [m for m, _, d in ranked(again)]
        assert [s for _, s, _ in ranked(read)] == pytest.approx([s for _, s, _ in ranked(again)], abs=1e-4)

        report = mem.consolidate()  # a write comparing the labels' vectors: the reactor catches up first
        assert report["staged"] > 0 and len(label_events(mem, "jon")) == 1 and len(label_events(mem, "mel")) == 1
        assert mem.shards.ask("acme", "jon", c.UnembeddedLabels(tenant="acme", user_id="jon")) == []
        assert all(report.equal for report in mem.replay())

        mem.search("acme", "jon", "painting")
        assert mem._labels and mem._query_vectors._vectors
        assert mem.forget("acme", "jon")["forgotten"]  # the driver's copies of label and query texts go too
        assert not mem._labels and not mem._query_vectors._vectors


def test_the_reactor_records_the_labels_once_the_ingest_pauses_and_at_close(ray_cluster, tmp_path, monkeypatch):
    monkeypatch.setenv(IDLE_S_ENV, "0.3")
    with Memory.open(tmp_path / "store", num_shards=1, embedder="hash") as mem:
        mem.add_messages(TURNS[:2], tenant="acme")
        deadline = time.monotonic() + 30
        while not label_events(mem, "mel") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(label_events(mem, "mel")) == 1  # no call asked for it
        assert mem.shards.ask("acme", "mel", c.UnembeddedLabels(tenant="acme", user_id="mel")) == []
        mem._label_reactor.idle_s = 3600  # the next ingest's pause never comes: closing records its labels
        mem.add_messages(TURNS[2:], tenant="acme")
    with Memory.open(tmp_path / "store", embedder="hash") as mem:
        assert len(label_events(mem, "jon")) == 1
        assert mem.shards.ask("acme", "jon", c.UnembeddedLabels(tenant="acme", user_id="jon")) == []


def test_label_vectors_from_another_model_or_of_the_wrong_shape_are_refused_by_name(ray_cluster, tmp_path):
    with Memory.open(tmp_path / "store", num_shards=1, embedder="hash") as mem:
        mem.add_messages(TURNS[:1], tenant="acme")
        [(_, _, pending)] = mem.shards.ask("acme", "mel", c.UnembeddedLabels(tenant="acme", user_id="mel"))
        before = len(mem.events(tenant="acme", user_id="mel"))
        for model_id, vectors, field in (("other-model", np.zeros((len(pending), mem.embedder.dim)), "model_id"),
                                         (mem.embedder.model_id, np.zeros((len(pending), 3)), "vectors")):
            with pytest.raises(InvalidInputError) as err:
                mem.shards.send("acme", "mel", c.RecordLabelVectors(
                    tenant="acme", user_id="mel", labels=tuple(pending), vectors=vectors, model_id=model_id))
            assert field in {f for f, _ in err.value.problems}
        assert len(mem.events(tenant="acme", user_id="mel")) == before  # nothing half-written
