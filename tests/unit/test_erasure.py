"""Erasure by crypto-shredding, on a shard core without Ray: a real DuckDB log, a real LanceDB directory, a key
store under a master key, the hash embedder. English and Chinese users, two tenants with the same user id."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime

import pyarrow as pa
import pytest

from actors import commands as c
from actors.core import ShardCore
from actors.spec import ShardSpec
from events.audit import AuditReader
from events.crypto import SEALED_STUB, PayloadCipher
from events.envelope import from_arrow
from events.erasure_events import PayloadErased
from events.errors import InvalidInputError, StoreError
from events.keystore import KeyStore
from projections.adapters.embedding import HashEmbedder
from projections.folds import state as shard_state
from projections.rules.extraction import key_terms
from projections.rules.text import chinese_words, query_tokens
from tests.builders import command
from tests.shard_helpers import record, search

NOW = datetime(2024, 6, 1, tzinfo=UTC)
MASTER = bytes(range(32))
ALICE = [command("I adopted a puppy named Biscuit last week", 0, speaker="Alice", client_message_id="a1"),
         command("我喜欢在周末去西山爬山", 1, speaker="Alice", client_message_id="a2"),
         command("My sister works as a nurse in Boston", 2, speaker="Alice", client_message_id="a3")]
BOB = [command("I repaired the old blue kayak on Saturday", 0, user_id="bob", client_message_id="b1"),
       command("我决定改用深色主题", 1, user_id="bob", client_message_id="b2")]
OTHER_TENANT = [command("I collect vintage postcards from Lisbon", 0, tenant="globex", client_message_id="g1")]
SECRETS = ("Biscuit", "西山爬山", "nurse in Boston")


def spec_of(tmp_path, *, encrypted: bool = True, master: bytes = MASTER) -> ShardSpec:
    return ShardSpec(index=0, log_path=tmp_path / "log" / "shard-000.duckdb", lance_dir=tmp_path / "vectors",
                     model_id=HashEmbedder.model_id, dim=384, snapshot_dir=tmp_path / "snapshots",
                     key_store=tmp_path / "keys" / "shard-000.keys" if encrypted else None,
                     master_key=master if encrypted else None)


@pytest.fixture
def core(tmp_path):
    shard = ShardCore(spec_of(tmp_path))
    record(shard, ALICE)
    record(shard, BOB)
    record(shard, OTHER_TENANT)
    yield shard
    shard.close()


def forget(shard: ShardCore, tenant: str = "acme", user_id: str = "alice", **kw) -> dict:
    [outcome] = shard.handle([c.ForgetUser(tenant=tenant, user_id=user_id, now=NOW, **kw)])
    return outcome


def user_digest(shard: ShardCore, stream) -> str:
    """The digest of one user's projections alone."""
    return shard_state.digest(shard_state.ShardState(users={stream: shard.state.users[stream]}))["combined"]


def stored(shard: ShardCore, table: str = "events", column: str = "payload") -> list[str]:
    return [r[0] for r in shard.log._con.execute(f"SELECT {column} FROM {table}").fetchall()]


def test_an_encrypted_log_stores_no_plaintext_and_reads_every_event_back(core):
    payloads = stored(core)
    assert payloads and all(p == SEALED_STUB for p in payloads)
    sealed = stored(core, column="sealed")
    assert all(s[0] == 2 and len(s) > 33 for s in sealed)  # format byte, generation, nonce, tag
    assert not [s for s in SECRETS if any(s.encode() in p for p in sealed)]
    texts = [e.event.text for e in core.log.scan() if e.kind == "message_recorded"]
    assert texts == [m["text"] for m in ALICE + BOB] + [OTHER_TENANT[0]["text"]]
    assert search(core, "puppy Biscuit")[0].text == ALICE[0]["text"]
    assert os.stat(core.spec.key_store).st_mode & 0o777 == 0o600


def test_forget_erases_one_user_and_leaves_every_other_user_as_it_was(core):
    others = [("acme", "bob"), ("globex", "alice")]
    before = {s: user_digest(core, s) for s in others}
    head = core.log.head("acme", "alice")

    outcome = forget(core)

    memos = (key_terms, chinese_words, query_tokens)
    assert all(m.cache_info().currsize == 0 for m in memos)  # no memo of the rules keeps a forgotten user's words
    assert outcome == {"tenant": "acme", "user_id": "alice", "forgotten": True, "event_id": outcome["event_id"],
                       "through_seq": head, "key_generation": 1}
    assert {s: user_digest(core, s) for s in others} == before
    assert search(core, "puppy Biscuit") == [] and search(core, "爬山") == []
    assert core.query(c.Notes(tenant="acme", user_id="alice", now=NOW)) == []
    assert core.query(c.Episodes(tenant="acme", user_id="alice")) == []
    assert core.vectors._table.count_rows("tenant = 'acme' AND user_id = 'alice'") == 0
    erased = [e for e in core.log.scan() if e.stream == ("acme", "alice")]
    assert [type(e.event) for e in erased] == [PayloadErased] * head + [type(erased[-1].event)]
    assert erased[-1].kind == "user_forgotten" and erased[-1].event.through_seq == head

    report = core.admin(c.Replay())
    assert report.equal and report.erased == head
    assert {s: user_digest(core, s) for s in others} == before
    assert search(core, "vintage postcards", tenant="globex")[0].text == OTHER_TENANT[0]["text"]  # same id, kept


def test_forget_is_a_no_op_for_an_unknown_user_and_for_one_forgotten_with_nothing_since(core):
    count = core.log.count()
    assert forget(core, user_id="nobody")["reason"] == "no such user in this store"
    forget(core)
    again = forget(core)
    assert again["forgotten"] is False and "already forgotten" in again["reason"]
    assert core.log.count() == count + 1


def test_a_new_message_after_forget_starts_a_fresh_key_and_everything_survives_a_restart(core, tmp_path):
    forget(core)
    record(core, [command("I moved to Porto in May", 9, speaker="Alice", client_message_id="a4")])
    assert [h.text for h in search(core, "Porto")] == ["I moved to Porto in May"]
    assert core.log.cipher.keys.current(("acme", "alice")) == 2
    digest = core.query(c.Digest())
    core.close()

    again = ShardCore(spec_of(tmp_path))
    assert again.query(c.Digest()) == digest
    assert [h.text for h in search(again, "Porto Biscuit nurse", k=5)] == ["I moved to Porto in May"]
    again.close()


def test_an_erasure_the_shard_died_inside_is_finished_at_its_next_start(tmp_path):
    from events.envelope import PendingEvent
    from events.erasure_events import UserForgotten

    shard = ShardCore(spec_of(tmp_path))
    record(shard, ALICE + BOB)
    head = shard.log.head("acme", "alice")
    # The event committed, then the process died before any erasure step (the snapshots come from the close).
    shard.log.append([PendingEvent("acme", "alice", "f1", UserForgotten(key_generation=1, through_seq=head, at=NOW))])
    shard.close()
    snapshot = shard.users.snapshots.path(("acme", "alice"))
    assert snapshot.exists() and b"Biscuit" not in snapshot.read_bytes()  # sealed under alice's key

    again = ShardCore(spec_of(tmp_path))
    assert not snapshot.exists()
    assert again.log.cipher.keys.current(("acme", "alice")) is None
    assert again.vectors._table.count_rows("user_id = 'alice'") == 0
    assert search(again, "puppy") == [] and search(again, "kayak", user_id="bob")
    again.close()


def test_a_plaintext_store_refuses_to_forget_and_says_how_to_migrate(tmp_path):
    shard = ShardCore(spec_of(tmp_path, encrypted=False))
    record(shard, ALICE)
    assert any("Biscuit" in p for p in stored(shard))  # a store from before encryption: its log is plaintext
    count = shard.log.count()
    with pytest.raises(InvalidInputError, match="encrypt --out NEW") as err:
        forget(shard, command_id="forget-1")
    assert err.value.problems[0][0] == "store"
    assert shard.log.count() == count and shard.log.command("forget-1") is None
    shard.close()


def test_a_wrong_master_key_is_refused_with_the_fix(core, tmp_path):
    core.close()
    with pytest.raises(StoreError, match="another master key; set PALIMPSEST_MASTER_KEY"):
        ShardCore(spec_of(tmp_path, master=bytes(32)))
    core.__init__(spec_of(tmp_path))  # reopened for the fixture's close


def test_a_sealed_payload_moved_to_another_row_does_not_open(core):
    rows = core.log._con.sql("SELECT * FROM events ORDER BY tenant, user_id, seq").fetch_arrow_table()
    payloads = rows.column("sealed").to_pylist()
    payloads[0], payloads[1] = payloads[1], payloads[0]
    swapped = rows.set_column(rows.schema.get_field_index("sealed"), "sealed", pa.array(payloads, pa.binary()))
    with pytest.raises(StoreError, match="altered or moved"):
        from_arrow(swapped, core.log.cipher)


def test_outcomes_naming_several_users_are_sealed_per_user_and_a_forgotten_users_rows_leave_them(core):
    sweep = c.SweepArchive(now=datetime(2031, 1, 1, tzinfo=UTC))
    [first] = core.handle([sweep])
    assert {(r["tenant"], r["user_id"]) for r in first} == {("acme", "alice"), ("acme", "bob"), ("globex", "alice")}
    assert any(ALICE[0]["text"] in r["texts"] for r in first)  # the outcome names the archived texts
    outcomes = stored(core, "commands", "outcome")
    assert not [s for s in SECRETS if any(s in o for o in outcomes)]
    assert core.handle([sweep]) == [first]  # a retry reads the sealed outcome back

    forget(core)
    [after] = core.handle([sweep])
    assert after == [r for r in first if (r["tenant"], r["user_id"]) != ("acme", "alice")]


def test_the_offline_audit_shows_payloads_opened_and_a_forgotten_users_marked_erased(core, tmp_path):
    forget(core)
    core.close()
    files = [core.spec.log_path]
    cipher = PayloadCipher(KeyStore(core.spec.key_store, MASTER, read_only=True))
    audit = AuditReader(files, ciphers=[cipher])
    rows = audit.sql("SELECT tenant, user_id, kind, payload FROM events WHERE kind IN "
                     "('message_recorded', 'user_forgotten') ORDER BY tenant, user_id, seq").to_pylist()
    texts = {(r["tenant"], r["user_id"]): [] for r in rows}
    for r in rows:
        texts[(r["tenant"], r["user_id"])].append(json.loads(r["payload"]))
    assert [p["text"] for p in texts[("acme", "bob")]] == [m["text"] for m in BOB]
    assert texts[("acme", "alice")][:3] == [{"erased": True, "kind": "message_recorded", "key_generation": 1}] * 3
    assert texts[("acme", "alice")][3]["through_seq"] > 0  # the user_forgotten event is clear
    audit.close()
    raw = AuditReader(files).sql("SELECT payload FROM events WHERE user_id = 'bob'").column("payload").to_pylist()
    assert set(raw) == {SEALED_STUB}  # without the keys: the stub (the ciphertext is in the log's `sealed`)
    core.__init__(spec_of(tmp_path))
