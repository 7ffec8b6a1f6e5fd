"""The consolidation's note check and scheduled decay through the public API on a real local Ray.

"I prefer green tea in the morning", then "I switched to coffee": the notes
supersede the preference; consolidation carries that over to the graph (the
green-tea memory becomes ``superseded``, kept in the log and the export, gone
from default graph search), the same in parallel Ray tasks as in sequence, and
replay rebuilds it. Decay is measured on the user's clock, or ``--at``.
"""

from __future__ import annotations

from actors import commands as c

import xml.etree.ElementTree as ET

import pytest

from actors.consolidation import run_consolidation
from palimpsest import Memory
from palimpsest.cli import main

pytestmark = pytest.mark.integration
USER = ("acme", "atlas")


def say(text: str, when: str) -> dict:
    return {"text": text, "speaker": "Atlas", "role": "user", "occurred_at": when, "conversation_id": "c1"}


def memory_ids(mem: Memory, query: str) -> list[str]:
    hits = mem.search_memories(*USER, query=query, mode="fast", max_results=10)["hits"]
    return [h["memory_id"] for h in hits]


def graph_memories(mem: Memory) -> dict[str, dict]:
    """memory id → its GraphML attributes, from the export (every memory, whatever its status)."""
    root = ET.fromstring(mem.graph_export(*USER)["graphml"])
    ns = {"g": "http://graphml.graphdrawing.org/xmlns"}
    names = {k.get("id"): k.get("attr.name") for k in root.iter(f"{{{ns['g']}}}key")}
    out = {}
    for node in root.iter(f"{{{ns['g']}}}node"):
        attrs = {names[d.get("key")]: d.text for d in node.iter(f"{{{ns['g']}}}data")}
        if attrs.get("kind") == "memory":
            out[node.get("id").removeprefix("memory:")] = attrs
    return out


TEA_THEN_COFFEE = [say("I prefer green tea in the morning", "2024-05-01T08:00:00+00:00"),
                   say("I switched to coffee", "2024-05-06T08:00:00+00:00")]


@pytest.fixture(scope="module")
def store(ray_cluster, tmp_path_factory):
    path = tmp_path_factory.mktemp("conflicts") / "store"
    mem = Memory.open(path, num_shards=2, embedder="hash")
    mem.consolidate_every = 0  # consolidation only when the test asks
    for message in TEA_THEN_COFFEE:
        mem.add_messages([message], tenant="acme", user_id="atlas")
    mem.add_messages([say("I went hiking with Bob yesterday", "2024-05-02T18:00:00+00:00")], tenant="acme",
                     user_id="bob-friend")
    yield path, mem
    mem.close()


def test_the_notes_supersede_the_preference_and_the_graph_memory_is_still_found_before_consolidation(store):
    _, mem = store
    [old] = [n for n in mem.notes(*USER, include_inactive=True) if "green tea" in n["text"]]
    assert old["status"] == "superseded"
    tea = [mid for mid, m in graph_memories(mem).items() if "green tea" in m["label"]]
    assert len(tea) == 1 and tea[0] in memory_ids(mem, "green tea")


def test_parallel_and_sequential_consolidation_decide_the_same_events_with_the_users_notes(store):
    _, mem = store
    jobs = [job for part in mem.shards.ask_each(c.GraphJobs()) for job in part]
    assert {(j.tenant, j.user_id) for j in jobs} == {USER, ("acme", "bob-friend")}
    assert all(j.notes is not None and j.now is not None for j in jobs)
    parallel = run_consolidation(jobs, max_in_flight=2)
    sequential = run_consolidation(jobs, parallel=False)
    as_data = {user: [(i, type(e).__name__, e.model_dump()) for i, e in events] for user, events in parallel.items()}
    assert as_data == {user: [(i, type(e).__name__, e.model_dump()) for i, e in events]
                       for user, events in sequential.items()}
    assert any(type(e).__name__ == "GraphMemoryStatusChanged" and e.status == "superseded"
               for _, e in parallel[USER])


def test_consolidation_supersedes_the_green_tea_memory_keeps_its_history_and_replays(store):
    _, mem = store
    notes = {n["text"]: n["note_id"] for n in mem.notes(*USER, include_inactive=True)}
    [tea] = [mid for mid, m in graph_memories(mem).items() if "green tea" in m["label"]]

    report = mem.consolidate()
    assert report["superseded"] == 1 and report["archived"] == 0

    exported = graph_memories(mem)
    assert exported[tea]["status"] == "superseded"  # still in the export, with its status
    assert tea not in memory_ids(mem, "green tea")  # not a seed of default search ...
    assert tea not in memory_ids(mem, "coffee")  # ... nor a hop
    [change] = [e for e in mem.events(*USER, kinds=["graph_memory_status_changed"])]
    assert change.event.memory_id == tea and change.event.status == "superseded"
    assert notes["Atlas prefers green tea in the morning"] in change.event.reason
    assert change.event.superseded_by == notes["Atlas switched to coffee"]
    assert all(r.equal for r in mem.replay())

    kinds = ["graph_memory_status_changed", "graph_memories_consolidated", "graph_edge_linked"]
    written = [(e.event_id, e.event) for e in mem.events(*USER, kinds=kinds)]
    assert len(written) >= 2
    # a rerun of the consolidation (a new command with the same keyed events) writes nothing
    assert mem.shards.send(*USER, c.ApplyConsolidation(tenant=USER[0], user_id=USER[1], events=tuple(written))) == 0

    again = mem.consolidate(idle=True)  # nothing staged, every user asked: nothing decided twice
    assert (again["users"], again["staged"], again["events"]) == (2, 0, 0)


def test_decay_runs_on_the_users_clock_and_the_cli_travels_in_time(store, tmp_path, capsys):
    _, mem = store
    assert mem.consolidate(idle=True)["archived"] == 0  # on the user's own clock nothing has decayed yet

    path = str(tmp_path / "cli-store")
    # The store stays open while the CLI commands run: each re-attaches to its running actors, as a second driver
    # of a store does (what a command prints and writes is the same as when it opens the store itself).
    with Memory.open(path, num_shards=1, embedder="hash") as fresh:
        fresh.add_messages(TEA_THEN_COFFEE, tenant="acme", user_id="atlas")
        rc = main(["--store", path, "consolidate", "--at", "2026-01-01T00:00:00+00:00"])  # no --decay: none archived
        out = capsys.readouterr().out
        assert rc == 0 and "1 superseded by the notes, 0 archived by decay" in out
        rc = main(["--store", path, "consolidate", "--decay", "--at", "2026-01-01T00:00:00+00:00"])
        out = capsys.readouterr().out
        assert rc == 0 and "0 superseded by the notes" in out and "0 archived by decay" not in out
    with Memory.open(path) as reopened:  # what the commands wrote is in the logs
        statuses = {m["status"] for m in graph_memories(reopened).values()}
        assert statuses == {"superseded", "archived"}  # a year and a half later, the rest decayed
        assert memory_ids(reopened, "coffee") == []
        assert all(r.equal for r in reopened.replay())
        assert main(["--store", path, "consolidate", "--decay", "--at", "2026-01-01T00:00:00+00:00", "--json"]) == 0
    report = capsys.readouterr().out
    assert '"users": 1' in report and '"events": 0' in report  # with --decay even an idle user; nothing twice
    with pytest.raises(SystemExit):  # a naive time is ambiguous: argparse refuses it
        main(["--store", path, "consolidate", "--at", "2026-01-01T00:00:00"])
    assert "no timezone" in capsys.readouterr().err


def test_the_timed_scheduler_consolidates_in_the_background_and_sweeps_decay_only_when_asked(tmp_path):
    import time

    def statuses(mem: Memory) -> dict[str, tuple[str, str]]:
        return {mid: (m["status"], m["consolidated"]) for mid, m in graph_memories(mem).items()}

    with Memory.open(tmp_path / "sched", num_shards=1, embedder="hash") as mem:
        mem.consolidate_every = 0
        mem.add_messages([say("I went hiking with Bob yesterday", "2020-05-02T18:00:00+00:00"),
                          say("I adopted a cat named Luna", "2024-05-02T18:00:00+00:00")], tenant="acme",
                         user_id="atlas")
        assert {c for _, c in statuses(mem).values()} == {"false"}  # staged, nothing consolidated yet
        mem.schedule_consolidation(0.2)
        deadline = time.monotonic() + 30
        while {c for _, c in statuses(mem).values()} != {"true"} and time.monotonic() < deadline:
            time.sleep(0.2)
        assert {s for s, _ in statuses(mem).values()} == {"active"}  # consolidated, the 2020 hike not archived
        assert {c for _, c in statuses(mem).values()} == {"true"}
        mem.schedule_consolidation(0.2, decay=True)
        while "archived" not in {s for s, _ in statuses(mem).values()} and time.monotonic() < deadline:
            time.sleep(0.2)
        mem.schedule_consolidation(None)
        assert "archived" in {s for s, _ in statuses(mem).values()}  # four years before the user's latest message


def test_consolidation_runs_by_itself_every_n_staged_memories(tmp_path):
    def consolidated(mem: Memory) -> list[str]:
        return sorted(m["consolidated"] for m in graph_memories(mem).values())

    with Memory.open(tmp_path / "count", num_shards=1, embedder="hash") as mem:
        mem.consolidate_every = 3
        mem.add_messages([say("I adopted a cat named Luna", "2024-05-02T18:00:00+00:00"),
                          say("I went hiking with Bob yesterday", "2024-05-03T18:00:00+00:00")],
                         tenant="acme", user_id="atlas")
        staged = len(graph_memories(mem))
        assert 0 < staged < 3 and consolidated(mem) == ["false"] * staged  # under the count: nothing yet
        for topic in ("pottery", "violin", "camping")[: 3 - staged]:
            mem.create_memory(*USER, subject="Atlas", memory_type="event", topic=topic)
        assert consolidated(mem) == ["true"] * 3  # the third staged memory triggered the round
