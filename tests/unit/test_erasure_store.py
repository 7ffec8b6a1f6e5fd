"""An encrypted store's master key and format flag, a store from before encryption, and ``palimpsest forget``'s
refusals (no confirmation, a plaintext store): no Ray, nothing written."""

from __future__ import annotations

import base64
import io
import json
import os

import pytest

from events.crypto import SEALED_STUB
from events.errors import StoreError
from palimpsest import config as store_config
from palimpsest.cli import main

KEY = base64.b64encode(bytes(range(32))).decode()


def test_a_new_store_is_encrypted_under_a_key_file_only_its_owner_reads(tmp_path, monkeypatch):
    monkeypatch.delenv(store_config.MASTER_KEY_ENV, raising=False)
    cfg = store_config.StoreConfig.create(tmp_path / "s", 1, "hash")
    key_file = store_config.master_key_file(tmp_path / "s")

    assert json.loads((tmp_path / "s" / "store.json").read_text())["encryption"] == "aes-256-gcm"
    assert os.stat(key_file).st_mode & 0o777 == 0o600
    assert len(store_config.master_key(tmp_path / "s", cfg)) == 32
    os.chmod(key_file, 0o644)
    with pytest.raises(StoreError, match="chmod 600"):
        store_config.master_key(tmp_path / "s", cfg)


def test_the_environment_key_wins_and_a_malformed_one_says_how_to_make_one(tmp_path, monkeypatch):
    monkeypatch.setenv(store_config.MASTER_KEY_ENV, KEY)
    cfg = store_config.StoreConfig.create(tmp_path / "s", 1, "hash")
    assert not store_config.master_key_file(tmp_path / "s").exists()  # the key stays out of the store
    assert store_config.master_key(tmp_path / "s", cfg) == bytes(range(32))
    monkeypatch.setenv(store_config.MASTER_KEY_ENV, "not a key")
    with pytest.raises(StoreError, match="base64-encoded 32-byte key"):
        store_config.master_key(tmp_path / "s", cfg)
    monkeypatch.delenv(store_config.MASTER_KEY_ENV)
    with pytest.raises(StoreError, match="PALIMPSEST_MASTER_KEY is not set and .*master.key does not exist"):
        store_config.master_key(tmp_path / "s", cfg)


def test_a_store_json_from_before_encryption_opens_as_a_plaintext_store(tmp_path):
    (tmp_path / "store.json").write_text(json.dumps(
        {"num_shards": 2, "embedder": "hash", "model_id": "palimpsest/hash-384", "dim": 384, "format_version": 1,
         "settings": {}}))
    cfg = store_config.StoreConfig.load(tmp_path)
    assert cfg.encryption == "none" and not cfg.encrypted and store_config.master_key(tmp_path, cfg) is None
    (tmp_path / "store.json").write_text(json.dumps({**json.loads((tmp_path / "store.json").read_text()),
                                                     "encryption": "rot13"}))
    with pytest.raises(StoreError, match="unknown encryption 'rot13'"):
        store_config.StoreConfig.load(tmp_path)


def test_an_encrypted_store_whose_key_store_is_lost_is_refused_before_it_opens(tmp_path, monkeypatch):
    monkeypatch.delenv(store_config.MASTER_KEY_ENV, raising=False)
    cfg = store_config.StoreConfig.create(tmp_path, 1, "hash")
    store_config.log_path(tmp_path, 0).parent.mkdir()
    store_config.log_path(tmp_path, 0).write_bytes(b"")
    with pytest.raises(StoreError, match="key store .*shard-000.keys is missing"):
        store_config.check_layout(tmp_path, cfg)


def test_forget_without_yes_and_without_a_terminal_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert main(["--store", str(tmp_path), "forget", "--tenant", "acme", "--user", "alice"]) == 2
    assert "--yes: missing; forgetting a user cannot be undone" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_forget_on_a_plaintext_store_says_how_to_migrate_before_starting_anything(tmp_path, capsys):
    store_config.StoreConfig.create(tmp_path, 1, "hash", encrypted=False)
    assert main(["--store", str(tmp_path), "forget", "--tenant", "acme", "--user", "alice", "--yes"]) == 2
    err = capsys.readouterr().err
    assert "store: this store is not encrypted" in err and "encrypt --out NEW" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store.json"]


def test_encrypt_copies_a_plaintext_store_into_one_that_folds_alike_and_can_forget(tmp_path, monkeypatch):
    from datetime import UTC, datetime

    from actors import commands as c
    from actors.core import ShardCore
    from actors.spec import ShardSpec
    from projections.adapters.embedding import HashEmbedder
    from projections.folds import state as shard_state
    from tests.builders import command
    from tests.shard_helpers import record, search

    monkeypatch.delenv(store_config.MASTER_KEY_ENV, raising=False)
    old, new = tmp_path / "old", tmp_path / "new"
    cfg = store_config.StoreConfig.create(old, 1, "hash", encrypted=False)

    def spec(root, master=None):
        return ShardSpec(index=0, log_path=store_config.log_path(root, 0), lance_dir=root / "vectors",
                         model_id=HashEmbedder.model_id, dim=384,
                         key_store=store_config.key_store(root, 0) if master else None, master_key=master)

    shard = ShardCore(spec(old))
    record(shard, [command("I adopted a puppy named Biscuit", 0), command("我喜欢在周末去西山爬山", 1),
                   command("I repaired the blue kayak", 0, user_id="bob")])
    shard.handle([c.ArchiveMemories(tenant="acme", user_id="bob", memory_ids=(search(shard, "kayak", user_id="bob")[0]
                                                                             .memory_id,), now=datetime.now(UTC),
                                    reason="by hand")])
    folded = shard_state.digest(shard.state)
    shard.close()

    assert main(["--store", str(old), "encrypt", "--out", str(new)]) == 0

    assert store_config.StoreConfig.load(old) == cfg  # the old store is only read
    master = store_config.master_key(new, store_config.StoreConfig.load(new))
    payloads = duckdb_payloads(store_config.log_path(new, 0))
    assert payloads and all(p == SEALED_STUB for p in payloads)
    copy = ShardCore(spec(new, master))
    assert shard_state.digest(copy.state) == folded
    assert search(copy, "puppy Biscuit")[0].text == "I adopted a puppy named Biscuit"
    [outcome] = copy.handle([c.ForgetUser(tenant="acme", user_id="alice", now=datetime.now(UTC))])
    assert outcome["forgotten"] and search(copy, "puppy Biscuit") == []
    copy.close()
    assert main(["--store", str(old), "encrypt", "--out", str(new)]) == 2  # not into a store that exists


def duckdb_payloads(path) -> list[str]:
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    try:
        return [r[0] for r in con.execute("SELECT payload FROM events").fetchall()]
    finally:
        con.close()
