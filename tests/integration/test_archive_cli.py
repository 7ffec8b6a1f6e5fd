"""Archival end to end through the CLI: sweep by retention, archive search, restore, counterfactual rankings.

The sample store is ingested once per session (tests/integration/conftest.py), copied and held open for the module, so the commands re-attach to the
running actors (tests/integration/cli_store.py); each test counts the logged events through it. Opening a
store costs seconds of actor start-up, so both tests share the one held copy: the counterfactual replay,
which asserts it writes nothing, runs first; the sweep and restore, which write, run last.
"""

from __future__ import annotations

import json

import pytest

from tests.integration.cli_store import copy_store, held, logged_events, run

pytestmark = pytest.mark.integration

USER = ("--tenant", "demo", "--user", "maya")
JUNE = "2024-06-01T00:00:00+00:00"  # two to ten weeks after the sample's conversations


@pytest.fixture(scope="module")
def sample_store(ray_cluster, sample_template):
    return sample_template[0]  # the session's one `palimpsest ingest` of the sample (conftest.py)


@pytest.fixture(scope="module")
def store(sample_store, tmp_path_factory):
    path = copy_store(sample_store, tmp_path_factory.mktemp("held") / "store")
    with held(path) as mem:
        yield path, mem


def test_replay_with_a_policy_and_queries_reports_rank_changes_and_writes_nothing(store, capsys, tmp_path):
    store, mem = store
    forgetful = tmp_path / "forgetful.json"
    forgetful.write_text(json.dumps({"name": "forgetful", "stability_days": {"decision": 1, "preference": 1}}))
    queries = tmp_path / "queries.txt"
    queries.write_text("which database does Atlas use?\nwhat does maya drink in the morning?\n")
    before = logged_events(mem)

    rc, out, _ = run(capsys, "--store", store, "replay", "--policy", str(forgetful), "--at", JUNE,
                     "--queries", str(queries), *USER, "-k", "5", "--json")
    [user] = json.loads(out)

    assert rc == 0 and [q["query"] for q in user["queries"]] == queries.read_text().splitlines()
    db = user["queries"][0]["ranks"]
    # Under the forgetful policy the decisions and preferences are archived in June: they drop out of the top 5.
    dropped = [r for r in db if r["rank_current"] is not None and r["rank_other"] is None]
    assert dropped and all(r["turn_id"] in {"atlas-1:4", "atlas-4:1", "atlas-3:3", "atlas-5:3", "atlas-5:1",
                                            "atlas-1:3", "atlas-2:3", "atlas-1:6"} for r in dropped)
    assert any(r["turn_id"] == "atlas-1:4" for r in dropped)  # the PostgreSQL decision itself
    assert logged_events(mem) == before  # no touches, no archival: the log was only read (the sweep test relies on it)

    rc, _, err = run(capsys, "--store", store, "replay", "--policy", str(forgetful), "--queries", str(queries))
    assert rc == 2 and "queries.txt:1: a query needs a tenant and a user; pass --tenant/--user" in err


def test_sweep_archives_faded_memories_without_deleting_and_restore_brings_one_back(store, capsys):
    store, mem = store
    before = logged_events(mem)
    rc, out, _ = run(capsys, "--store", store, "archive", "sweep", "--at", JUNE, "--dry-run", "--json")
    [planned] = json.loads(out)
    assert rc == 0 and planned["reason"] == "retention_floor" and logged_events(mem) == before

    rc, out, _ = run(capsys, "--store", store, "retention", *USER, "--at", JUNE, "--json")
    rows = json.loads(out)
    faded = {r["memory_id"] for r in rows if r["archive"]}
    assert set(planned["memory_ids"]) == faded and len(faded) == 12  # questions and small talk, not decisions or preferences
    constraint = next(r for r in rows if r["turn_id"] == "atlas-3:4")  # "we must not store members' phone numbers"
    assert constraint["exempt"] and not constraint["archive"]  # a constraint in force is never swept

    rc, out, _ = run(capsys, "--store", store, "archive", "sweep", "--at", JUNE, "--json")
    assert [set(r["memory_ids"]) for r in json.loads(out)] == [faded]
    assert logged_events(mem) == before + 1  # one memory_archived event, nothing removed
    rc, out, _ = run(capsys, "--store", store, "archive", "sweep", "--at", JUNE, "--json")
    assert json.loads(out) == []  # already archived: a second sweep writes nothing

    rc, out, _ = run(capsys, "--store", store, "archive", "list", *USER, "--json")
    listed = {r["memory_id"]: r for r in json.loads(out)}
    assert set(listed) == faded and all(r["retention"] < 0.05 for r in listed.values())

    query = "What stack are you thinking about?"  # atlas-1:2, a question long faded
    rc, out, _ = run(capsys, "--store", store, "search", *USER, query, "-k", "24", "--json")
    assert "atlas-1:2" not in {h["turn_id"] for h in json.loads(out)}
    rc, out, _ = run(capsys, "--store", store, "search", *USER, query, "-k", "3", "--scope", "archive", "--json")
    archived_hits = json.loads(out)
    assert archived_hits[0]["turn_id"] == "atlas-1:2" and archived_hits[0]["breakdown"]["archived"] == "retention_floor"
    assert all(h["memory_id"] in faded for h in archived_hits)

    target = archived_hits[0]["memory_id"]
    rc, out, _ = run(capsys, "--store", store, "archive", "restore", *USER, target)
    assert rc == 0 and "restored 1 memories" in out
    rc, out, _ = run(capsys, "--store", store, "search", *USER, query, "-k", "3", "--json")
    assert json.loads(out)[0]["memory_id"] == target
    rc, out, _ = run(capsys, "--store", store, "retention", *USER, "--json")
    assert {r["memory_id"]: r for r in json.loads(out)}[target]["access_count"] == 1  # a restore is a recall

    rc, _, err = run(capsys, "--store", store, "archive", "restore", *USER, target)
    assert rc == 2 and "not archived" in err and "memory_ids" in err
    rc, out, _ = run(capsys, "--store", store, "replay")
    assert rc == 0 and "digests match" in out
