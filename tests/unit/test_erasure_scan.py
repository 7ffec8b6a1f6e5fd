"""The erasure scan: after a forget no file under the store holds the user's texts (English and Chinese), vectors
or data key; the same scan finds them where they are stored before (the positive control)."""

from __future__ import annotations

import base64
import hashlib
from datetime import UTC, datetime

import numpy as np

from actors import commands as c
from actors.core import ShardCore
from actors.spec import ShardSpec
from benchmarks.erasure_scan import needles, scan
from events.audit import AuditReader
from events.crypto import PayloadCipher
from events.keystore import KeyStore, _open, _wrap_aad
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from projections.adapters.embedding import HashEmbedder
from tests.builders import command
from tests.shard_helpers import record

MASTER = bytes(range(32, 64))
ALICE = [command("I adopted a puppy named Biscuit last week", 0, speaker="Alice", client_message_id="a1"),
         command("我喜欢在周末去西山爬山，然后喝桂花茶", 1, speaker="Alice", client_message_id="a2"),
         command("My sister Jolene works as a night nurse in Boston", 2, speaker="Alice", client_message_id="a3")]
BOB = [command("I repaired the old blue kayak on Saturday", 0, user_id="bob", client_message_id="b1")]


class DenseEmbedder(HashEmbedder):
    """Dense, deterministic vectors (a seeded normal per text) under the hash model's id: the hash embedder's are
    so sparse (mostly zeros) that no window of them is a distinctive needle; a real model's are dense like these."""

    def encode(self, texts):
        seeds = [int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "big") for t in texts]
        out = np.stack([np.random.default_rng(s).standard_normal(self.dim) for s in seeds]).astype(np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


DENSE = DenseEmbedder()


def spec_of(root, encrypted: bool = True) -> ShardSpec:
    return ShardSpec(index=0, log_path=root / "log" / "shard-000.duckdb", lance_dir=root / "vectors",
                     model_id=HashEmbedder.model_id, dim=384, snapshot_dir=root / "snapshots",
                     key_store=root / "keys" / "shard-000.keys" if encrypted else None,
                     master_key=MASTER if encrypted else None)


def export(root, out) -> None:
    cipher = PayloadCipher(KeyStore(root / "keys" / "shard-000.keys", MASTER, read_only=True))
    audit = AuditReader([root / "log" / "shard-000.duckdb"], ciphers=[cipher])
    audit.export_parquet(out)
    audit.close()


def test_after_forget_no_file_under_the_store_holds_the_users_texts_vectors_or_key(tmp_path):
    store, plain = tmp_path / "store", tmp_path / "plain"
    shard = ShardCore(spec_of(store))
    record(shard, ALICE, DENSE)
    record(shard, BOB, DENSE)
    shard.handle([c.SweepArchive(now=datetime(2031, 1, 1, tzinfo=UTC))])  # an outcome that names the texts
    vectors = [row.vector for row in shard.state.users[("acme", "alice")].vectors.rows.values()]
    wrapped = next(r["wrapped"] for r in shard.log.cipher.keys._lines if r["user_id"] == "alice")
    data_key = _open(AESGCM(MASTER), wrapped, _wrap_aad("acme", "alice", 1))
    wanted = needles([m["text"] for m in ALICE], vectors, keys=[data_key, wrapped.encode()])
    shard.close()  # writes the snapshots
    export(store, tmp_path / "export-before")
    copy = ShardCore(spec_of(plain, encrypted=False))  # the same user in a plaintext store
    record(copy, ALICE, DENSE)
    copy.close()

    before = scan(store, wanted)
    areas, kinds = before.by_area(store), before.by_kind()
    assert areas.get("vectors", 0) >= 3 and areas.get("keys", 0) == 1
    assert kinds["vector"] >= 3 and "log" not in areas  # the log holds only ciphertext
    assert "snapshots" not in areas and "text" not in kinds  # so do the snapshots: sealed per user
    exported = scan(tmp_path / "export-before", wanted).by_kind()
    # A decrypted export holds plaintext (Snappy pages hide some of it from a literal scan, not all).
    assert exported.get("text", 0) >= 3 and exported.get("vector_b64", 0) >= 1
    plain_hits = scan(plain, wanted).by_area(plain)
    assert plain_hits.get("log", 0) >= 3  # an unencrypted log holds the texts and base64 vectors in clear
    assert plain_hits.get("snapshots", 0) >= 3  # and its snapshots hold them too: the scan finds them there

    shard = ShardCore(spec_of(store))
    [outcome] = shard.handle([c.ForgetUser(tenant="acme", user_id="alice", now=datetime.now(UTC))])
    assert outcome["forgotten"]
    served = AuditReader.of_tables([shard.log.rows()])  # the audit of a served store: rows from the shard
    served.export_parquet(store / "exports" / "after")
    served.close()
    while_open = scan(store, wanted)
    shard.close()
    after = scan(store, wanted)

    assert while_open.total_hits == 0 and after.total_hits == 0, after.hits
    assert after.files >= 8 and after.bytes > 100_000
    assert len(list((store / "snapshots" / "shard-000").glob("*.snap"))) == 1  # the other user's, sealed
    assert base64.b64encode(data_key) not in (store / "keys" / "shard-000.keys").read_bytes()
