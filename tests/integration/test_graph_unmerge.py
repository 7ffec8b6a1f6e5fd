"""Reversible merges through the API and the CLI: list a user's node merges, undo one with an event, and the
nodes stand apart again, are not merged again by the next consolidation, and survive a replay."""

from __future__ import annotations

import pytest

from events.errors import InvalidInputError
from palimpsest import Memory
from palimpsest.cli import main

pytestmark = pytest.mark.integration
USER = ("acme", "mel")


def test_a_merge_is_listed_undone_by_an_event_and_not_redone(ray_cluster, tmp_path, capsys):
    path = tmp_path / "store"
    with Memory.open(path, num_shards=1, embedder="hash") as mem:
        mem.consolidate_every = 0
        mem.create_memory(*USER, subject="Mel", memory_type="event", topic="go", object="camping trip")
        mem.create_memory(*USER, subject="Mel", memory_type="event", topic="plan", object="camping trips")
        mem.consolidate()
        [merge] = mem.graph_merges(*USER)
        assert sorted([merge["kept_label"], *merge["merged_labels"]]) == ["camping trip", "camping trips"]
        assert merge["similarity"] > 0.95 and not merge["undone"]

        # The CLI commands re-attach to this store's running actors (a second driver), then the store is reopened.
        assert main(["--store", str(path), "merges", "--tenant", "acme", "--user", "mel"]) == 0
        assert f"{merge['merge_id']}  active" in capsys.readouterr().out
        assert main(["--store", str(path), "unmerge", "--tenant", "acme", "--user", "mel", merge["merge_id"],
                     "--reason", "a trip and a plan are two things"]) == 0
        assert "stand apart from" in capsys.readouterr().out

    with Memory.open(path) as mem:
        mem.consolidate_every = 0
        [undone] = mem.graph_merges(*USER)
        assert undone["undone"] and undone["undo_reason"] == "a trip and a plan are two things"
        with pytest.raises(InvalidInputError, match="already undone"):
            mem.unmerge(*USER, merge["merge_id"])
        with pytest.raises(InvalidInputError, match="no merge"):
            mem.unmerge(*USER, "no-such-merge")
        mem.create_memory(*USER, subject="Mel", memory_type="event", topic="book", object="camping trips")
        mem.consolidate()
        assert [m["merge_id"] for m in mem.graph_merges(*USER)] == [merge["merge_id"]]  # the pair stays apart
        assert all(r.equal for r in mem.replay())
