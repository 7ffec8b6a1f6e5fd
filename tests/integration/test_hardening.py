"""Issue 14 on a real Ray: reads do not route, lost directory rebuilt, model id checked, tenant scoping, close."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime

import pytest
import ray

from events.errors import InvalidInputError, StoreError
from palimpsest import Memory
from palimpsest import config as store_config

MSGS = [{"text": f"alice likes tea {i}", "occurred_at": f"2024-05-01T09:0{i}:00+00:00"} for i in range(3)]


def test_reads_of_an_unknown_user_answer_empty_and_write_no_route(memory, store_path):
    memory.add_messages(MSGS, tenant="acme", user_id="alice")
    before = store_config.routing_table(store_path).read_bytes()
    assert memory.search("acme", "nobody", "tea") == []
    memory.build_context("ghost", "nobody", "tea")
    assert store_config.routing_table(store_path).read_bytes() == before
    with pytest.raises(InvalidInputError, match="tenant"):
        memory.search("t" * 1_000_000, "alice", "tea")


def test_operator_calls_need_the_tenant_with_a_user(memory):
    for tenant in ("acme", "globex"):
        memory.add_messages(MSGS, tenant=tenant, user_id="alice")
    for call in (lambda: memory.sweep(user_id="alice"), lambda: memory.review_notes(user_id="alice"),
                 lambda: memory.events(user_id="alice"), lambda: memory.note_history("n1", user_id="alice")):
        with pytest.raises(InvalidInputError, match="tenant"):
            call()
    assert {e.tenant for e in memory.events("acme", "alice")} == {"acme"}
    # A real note of acme's alice: found under acme only; without a tenant the call names the missing tenant.
    memory.add_messages([{"text": "I prefer green tea in the morning.", "occurred_at": "2024-05-02T09:00:00+00:00"}],
                        tenant="acme", user_id="alice")
    [note] = [n for n in memory.notes("acme", "alice") if "tea" in n["text"]]
    found = memory.note_history(note["note_id"], tenant="acme")
    assert (found["tenant"], found["user_id"]) == ("acme", "alice") and found["chain"]
    with pytest.raises(InvalidInputError) as err:
        memory.note_history(note["note_id"])
    assert err.value.problems[0][0] == "tenant"
    with pytest.raises(InvalidInputError) as err:
        memory.note_history(note["note_id"], tenant="globex")
    assert err.value.problems[0][0] == "note_id"  # another tenant's chain is not found
    from projections.folds.policy import DEFAULT_POLICY
    assert {u["tenant"] for u in memory.counterfactual(DEFAULT_POLICY, tenant="acme")} == {"acme"}


def test_a_lost_directory_is_rebuilt_from_the_logs(ray_cluster, store_path):
    with Memory.open(store_path, num_shards=2, embedder="hash") as mem:
        mem.add_messages(MSGS, tenant="acme", user_id="alice")
        mem.add_messages(MSGS, tenant="acme", user_id="bob")
        routes = mem.cluster.lookup([("acme", "alice"), ("acme", "bob")])
    store_config.routing_table(store_path).unlink()
    with Memory.open(store_path) as mem:
        assert mem.cluster.lookup([("acme", "alice"), ("acme", "bob")]) == routes
        mem.add_messages(MSGS, tenant="acme", user_id="bob")
        assert len(mem.events("acme", "bob", kinds=["message_recorded"])) == 3


def test_a_deleted_log_and_an_edited_model_are_refused(ray_cluster, store_path):
    with Memory.open(store_path, num_shards=2, embedder="hash") as mem:
        mem.add_messages(MSGS, tenant="acme", user_id="alice")
    data = json.loads((store_path / "store.json").read_text())
    (store_path / "store.json").write_text(json.dumps({**data, "embedder": "minilm", "model_id": "sentence-transformers/all-MiniLM-L6-v2"}))
    with pytest.raises(StoreError, match="holds vectors of model"):
        Memory.open(store_path)
    (store_path / "store.json").write_text(json.dumps(data))
    store_config.log_path(store_path, 1).unlink()
    with pytest.raises(StoreError, match="shard-001.duckdb is missing"):
        Memory.open(store_path)
    assert not store_config.log_path(store_path, 1).exists()


def test_another_driver_closing_leaves_the_shards_up(ray_cluster, store_path):
    with Memory.open(store_path, num_shards=2, embedder="hash") as mem:
        mem.add_messages(MSGS, tenant="acme", user_id="alice")
        address = ray.get_runtime_context().gcs_address
        script = (f"import ray; ray.init(address={address!r}, namespace='palimpsest'); from palimpsest import Memory; "
                  f"m = Memory.open({str(store_path)!r}); m.search('acme', 'alice', 'tea'); m.close()")
        subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
        assert len(mem.search("acme", "alice", "tea", now=datetime.now(UTC))) == 3
