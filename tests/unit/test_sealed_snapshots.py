"""Snapshots of an encrypted store are sealed per user (issue 41): no message text in their files, the same
state back at the next start, unreadable once the user is forgotten (copies included), and an older store's
plaintext snapshots sealed at start. On a shard core without Ray: a real DuckDB log, LanceDB directory and key
store; English and Chinese texts."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from datetime import UTC, datetime

import pytest

from actors import commands as c
from actors.core import ShardCore
from actors.snapshots import ALL_SEALED, SnapshotStore
from actors.spec import ShardSpec
from events.errors import StoreError
from events.keystore import KeyStore
from events.sealed_blob import CHUNK, open_blob, seal_blob
from projections.adapters.embedding import HashEmbedder
from tests.builders import command
from tests.shard_helpers import record, search

MASTER = bytes(range(64, 96))
MARKERS = ("Zanzibarmarker", "玄武湖标记")
ALICE = [command(f"I keep my {MARKERS[0]} notebook in the blue drawer", 0, client_message_id="a1"),
         command(f"周末我去{MARKERS[1]}附近散步", 1, client_message_id="a2")]
BOB = [command("I repaired the old kayak on Saturday", 0, user_id="bob", client_message_id="b1")]


def spec_of(root, **kw) -> ShardSpec:
    return ShardSpec(index=0, log_path=root / "log" / "shard-000.duckdb", lance_dir=root / "vectors",
                     model_id=HashEmbedder.model_id, dim=384, snapshot_dir=root / "snapshots",
                     key_store=root / "keys" / "shard-000.keys", master_key=MASTER, **kw)


def holding(directory, needles=MARKERS) -> list[str]:
    """The files under ``directory`` whose bytes hold any of ``needles`` (UTF-8)."""
    found = []
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        data = path.read_bytes()
        if any(n.encode("utf-8") in data for n in needles):
            found.append(str(path.relative_to(directory)))
    return found


def fresh_digest(root) -> dict:
    core = ShardCore(dataclasses.replace(spec_of(root), snapshot_dir=None))
    try:
        return core.query(c.Digest())
    finally:
        core.close()


def test_sealed_snapshots_hold_no_text_and_give_the_same_state_back(tmp_path):
    core = ShardCore(spec_of(tmp_path))
    record(core, ALICE)
    record(core, BOB)
    digest = core.query(c.Digest())
    core.close()  # writes every user's snapshot

    snaps = sorted((tmp_path / "snapshots").rglob("*.snap"))
    assert len(snaps) == 2 and holding(tmp_path / "snapshots") == []
    headers = [json.loads(p.read_bytes().split(b"\n", 1)[0]) for p in snaps]
    assert all(h["sealed"] == 1 for h in headers)  # generation 1 of each user's key

    again = ShardCore(spec_of(tmp_path))
    assert set(again.users.snapshot_heads) == {("acme", "alice"), ("acme", "bob")}  # started from the snapshots
    assert again.query(c.Digest()) == digest == fresh_digest(tmp_path)
    assert MARKERS[0] in search(again, f"{MARKERS[0]} notebook")[0].text
    again.close()


def test_a_snapshot_copied_before_a_forget_does_not_open_after_it(tmp_path):
    core = ShardCore(spec_of(tmp_path))
    record(core, ALICE)
    record(core, BOB)
    core.close()
    alice = SnapshotStore(tmp_path / "snapshots" / "shard-000", "x").path(("acme", "alice"))
    kept = tmp_path / "kept.snap"
    shutil.copy(alice, kept)

    core = ShardCore(spec_of(tmp_path))
    [outcome] = core.handle([c.ForgetUser(tenant="acme", user_id="alice", now=datetime.now(UTC))])
    assert outcome["forgotten"] and not alice.exists()
    core.close()
    shutil.copy(kept, alice)  # the copy comes back (a backup of the directory, a disk image)

    again = ShardCore(spec_of(tmp_path))
    assert ("acme", "alice") not in again.users.snapshot_heads  # its key is gone: ignored, folded from the log
    assert search(again, f"{MARKERS[0]} notebook") == []
    assert search(again, "kayak", user_id="bob")
    again.close()
    assert holding(tmp_path / "snapshots") == [] and MARKERS[0].encode() not in kept.read_bytes()


def test_a_sealed_snapshot_relabelled_as_another_user_does_not_open(tmp_path):
    core = ShardCore(spec_of(tmp_path))
    record(core, ALICE)
    record(core, [{**m, "client_message_id": f"b{i}", "user_id": "bob"} for i, m in enumerate(ALICE)])
    core.close()
    store = core.users.snapshots  # its key store is still open in memory
    head, body = store.path(("acme", "alice")).read_bytes().split(b"\n", 1)
    header = {**json.loads(head), "user_id": "bob"}  # same seq, same key generation: only the seal tells
    store.path(("acme", "bob")).write_bytes(json.dumps(header).encode() + b"\n" + body)
    assert store.load(("acme", "alice"), 100) is not None
    assert store.load(("acme", "bob"), 100) is None  # before any comparison with the log's checksum

    again = ShardCore(spec_of(tmp_path))
    assert set(again.users.snapshot_heads) == {("acme", "alice")}  # bob folded from the log
    assert again.query(c.Digest()) == fresh_digest(tmp_path)
    again.close()


def test_an_older_stores_plaintext_snapshots_are_sealed_at_start_and_still_used(tmp_path):
    core = ShardCore(spec_of(tmp_path))
    record(core, ALICE)
    record(core, BOB)
    digest = core.query(c.Digest())
    sealed = core.users.snapshots
    plain = SnapshotStore(sealed.directory, sealed.fingerprint)  # as a release before sealing wrote them
    resident = core.state.users.resident
    checksums = core.log.checksums({s: m.head for s, m in resident.items()})
    for stream, memory in resident.items():
        plain.save(stream, memory, checksums[stream])
    ghost = ("acme", "ghost")  # a user with no live key (forgotten before this release): its snapshot goes
    plain.save(ghost, resident[("acme", "bob")], 0)
    (sealed.directory / "left-by-a-crash.tmp").write_bytes(b"plaintext " + MARKERS[0].encode())
    (sealed.directory / ALL_SEALED).unlink()  # an older release's directory has no such mark
    assert holding(tmp_path / "snapshots") != []  # the scan finds plaintext where there is some
    core.log.close()  # a crash: no close, no snapshots written over these

    again = ShardCore(spec_of(tmp_path))
    assert holding(tmp_path / "snapshots") == []
    assert sorted(p.name for p in sealed.directory.iterdir()) == sorted(
        [ALL_SEALED, *(sealed.path(s).name for s in resident)])  # the ghost's and the temporary file are gone
    assert set(again.users.snapshot_heads) == set(resident)  # and the sealed ones are used
    assert again.query(c.Digest()) == digest
    again.close()


def test_a_plaintext_snapshot_met_in_an_encrypted_store_after_start_is_ignored(tmp_path):
    keys = KeyStore(tmp_path / "keys", MASTER)
    keys.ensure([("acme", "alice")])
    core = ShardCore(dataclasses.replace(spec_of(tmp_path), key_store=None, master_key=None))
    record(core, ALICE)
    memory = core.state.users.resident[("acme", "alice")]
    core.log.close()
    from events.crypto import PayloadCipher

    store = SnapshotStore(tmp_path / "snaps", "fp")
    store.save(("acme", "alice"), memory, 7)
    assert SnapshotStore(tmp_path / "snaps", "fp", PayloadCipher(keys)).load(("acme", "alice"), 10) is None
    sealed = SnapshotStore(tmp_path / "snaps", "fp", PayloadCipher(keys))
    sealed.save(("acme", "alice"), memory, 7)
    assert sealed.load(("acme", "alice"), 10)[1] == 7
    assert store.load(("acme", "alice"), 10) is None  # and a sealed one in a plaintext store


def test_a_blob_of_several_chunks_opens_whole_and_a_cut_or_reordered_one_does_not(tmp_path):
    keys = KeyStore(tmp_path / "keys", MASTER)
    stream = ("acme", "alice")
    keys.ensure([stream])
    plain = os.urandom(2 * CHUNK + 1000)
    gen, sealed = seal_blob(keys, stream, plain, b"ctx")
    assert open_blob(keys, stream, gen, sealed, b"ctx") == plain
    first, second, last = sealed[:CHUNK + 28], sealed[CHUNK + 28:2 * (CHUNK + 28)], sealed[2 * (CHUNK + 28):]
    assert len(last) == 1000 + 28  # three chunks, each nonce + ciphertext + tag
    for bad in (first + second, first + last, second + first + last, sealed[:-1]):
        with pytest.raises(StoreError, match="altered, cut short or moved"):
            open_blob(keys, stream, gen, bad, b"ctx")
    with pytest.raises(StoreError):
        open_blob(keys, stream, gen, sealed, b"another context")
    assert seal_blob(keys, ("acme", "nobody"), plain, b"ctx") is None  # no key is created for a blob
    assert keys.current(("acme", "nobody")) is None
    keys.destroy(stream, gen)
    assert open_blob(keys, stream, gen, sealed, b"ctx") is None
