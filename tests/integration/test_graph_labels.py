"""Graph labels embedded after the ingest: the turns' memories are staged without vectors, and the driver
embeds every such label in one pass, recorded as ``graph_labels_embedded`` before a consolidation or a graph
read; replay reads the recorded vectors."""

from __future__ import annotations

import numpy as np
import pytest

from actors import commands as c
from events.errors import InvalidInputError
from palimpsest import Memory
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


def test_labels_wait_for_the_first_graph_read_and_are_recorded_once(ray_cluster, tmp_path):
    with Memory.open(tmp_path / "store", num_shards=2, embedder="hash") as mem:
        mem.add_messages(TURNS, tenant="acme")
        assert "graph_memory_staged" in kinds(mem, "mel") and not label_events(mem, "mel")
        [(_, _, pending)] = mem.shards.ask("acme", "mel", c.UnembeddedLabels(tenant="acme", user_id="mel"))
        assert pending and all(isinstance(x, str) and x for x in pending)

        hits = mem.search_memories("acme", "mel", query="puppy", mode="fast", max_results=1)["hits"]
        assert hits and "puppy" in hits[0]["summary"].lower()  # found by vector, right after the ingest
        [event] = label_events(mem, "mel")
        assert sorted(event.event.vectors) == sorted(pending)
        assert not label_events(mem, "jon")  # another user's labels wait for their own read
        assert mem.embed_labels("acme", "mel") == 0  # nothing left: nothing recorded twice

        report = mem.consolidate()
        assert report["staged"] > 0 and len(label_events(mem, "jon")) == 1 and len(label_events(mem, "mel")) == 1
        assert mem.shards.ask("acme", "jon", c.UnembeddedLabels(tenant="acme", user_id="jon")) == []
        assert all(report.equal for report in mem.replay())

        mem.search("acme", "jon", "painting")
        assert mem._labels and mem._query_vectors._vectors
        assert mem.forget("acme", "jon")["forgotten"]  # the driver's copies of label and query texts go too
        assert not mem._labels and not mem._query_vectors._vectors


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
