"""The replay path's batch decoding and its collector pause, on a real key store (AES-GCM, zlib) and real folds.

``PayloadCipher.open_payloads`` opens a batch's sealed payloads with one key lookup per (user, generation): each row
must open exactly as :meth:`PayloadCipher.open_payload` opens it alone (clear rows, a forgotten user's rows, short
and long payloads), and a damaged row must still be refused with the fix. ``state.fold`` pauses Python's cyclic
garbage collector while it runs and gives it back as it was, after nested folds and after an error too.
"""

from __future__ import annotations

import gc
import os
import zlib
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest

from events.crypto import MIN_COMPRESS, PayloadCipher, _pack, _unpack
from events.envelope import from_arrow, to_arrow
from events.errors import StoreError
from events.keystore import KeyStore
from projections.folds import state as shard_state
from tests.builders import embedding, message, stream, touch

MASTER = bytes(range(32))
AT = datetime(2024, 6, 1, 12, tzinfo=UTC)
TEXTS = ["hi", "I adopted a puppy named Biscuit last week " * 4, "我喜欢在周末去西山爬山"]  # JSON under MIN_COMPRESS bytes: as is


def _log(users: tuple[str, ...] = ("alice", "bob")) -> list:
    out = []
    for user in users:
        events = []
        for i, text in enumerate(TEXTS):
            events += [(f"{user}-m{i}", message(text, f"{user}-{i}")),
                       (f"{user}-e{i}", embedding(f"{user}-m{i}", [float(i + 1)] * 8))]
        events.append((f"{user}-t", touch(f"{user}-m0", f"{user}-m2")))
        out += stream(*events, user_id=user)
    return out


def _columns(table) -> list[list]:
    return [table.column(n).to_pylist() for n in ("tenant", "user_id", "event_id", "kind", "schema_version",
                                                  "sealed")]


def test_open_payloads_opens_each_row_as_open_payload_does_with_a_forgotten_user_among_them(tmp_path):
    keys = KeyStore(tmp_path / "shard.keys", MASTER)
    cipher = PayloadCipher(keys)
    envelopes = _log()
    table = to_arrow(envelopes, cipher)
    keys.destroy(("acme", "bob"), keys.current(("acme", "bob")))  # bob forgotten: his rows open to None
    cols = _columns(table)
    batch = cipher.open_payloads(*cols)
    one_by_one = [cipher.open_payload(*row) for row in zip(*cols)]
    assert batch == one_by_one
    assert {p is None for p, _ in batch} == {True, False}  # both kinds of row were there
    assert [e.event for e in from_arrow(table, cipher)][:6] == [e.event for e in envelopes[:6]]  # alice's, as written


def test_open_payloads_passes_clear_rows_through_and_refuses_a_damaged_one_with_the_fix(tmp_path):
    cipher = PayloadCipher(KeyStore(tmp_path / "shard.keys", MASTER))
    tenants, users, ids, kinds, versions, sealed = _columns(to_arrow(_log(("alice",)), cipher))
    sealed[1] = None  # a clear row (a user_forgotten event is stored so)
    assert cipher.open_payloads(tenants, users, ids, kinds, versions, sealed)[1] is None
    altered = list(sealed)
    altered[2] = altered[2][:-1] + bytes([altered[2][-1] ^ 1])
    with pytest.raises(StoreError, match=f"{ids[2]} does not open under its user's key.*restore the log"):
        cipher.open_payloads(tenants, users, ids, kinds, versions, altered)
    altered[2] = sealed[2][:10]  # shorter than a header and a nonce, after rows of the same key opened
    with pytest.raises(StoreError, match=f"{ids[2]} is not of format 2"):
        cipher.open_payloads(tenants, users, ids, kinds, versions, altered)


def test_bodies_are_zstd_from_min_compress_bytes_and_zlib_bodies_of_older_logs_still_open():
    short, long = b'{"text":"hi"}', ('{"text":"' + "I adopted a puppy named Biscuit " * 20 + '"}').encode()
    assert len(short) < MIN_COMPRESS <= len(long)
    assert _pack(short) == b"j" + short and _unpack(_pack(short)) == short
    packed = _pack(long)
    assert packed[:1] == b"s" and len(packed) < len(long) and _unpack(packed) == long
    assert _unpack(b"z" + zlib.compress(long, 1)) == long  # a body an earlier palimpsest wrote
    by_pyarrow = pa.Codec("zstd", 1).compress(long, asbytes=True)  # the zstd frames of logs before zstandard
    assert _unpack(b"s" + len(long).to_bytes(4, "big") + by_pyarrow) == long
    noise = os.urandom(600)  # does not compress: stored as it is
    assert _pack(noise) == b"j" + noise


def _watching(envelopes: list, seen: list[bool]):
    for env in envelopes:
        seen.append(gc.isenabled())
        yield env


@pytest.mark.parametrize("enabled", [True, False])
def test_fold_pauses_the_collector_and_gives_it_back_as_it_was(enabled):
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        seen: list[bool] = []
        state = shard_state.fold(shard_state.ShardState(), _watching(_log(), seen))
        assert seen and not any(seen)  # off while every event was folded
        assert gc.isenabled() is enabled
        with shard_state.collector_paused():  # nested: the inner fold does not turn it back on
            shard_state.fold(shard_state.ShardState(), _log())
            assert not gc.isenabled()
        assert gc.isenabled() is enabled
        with pytest.raises(shard_state.ProjectionOrderError):
            shard_state.fold(shard_state.ShardState(), list(reversed(_log())))
        assert gc.isenabled() is enabled
        assert shard_state.digest(state) == shard_state.digest(shard_state.fold(shard_state.ShardState(), _log()))
    finally:
        (gc.enable if was else gc.disable)()


def test_a_visited_session_is_the_session_its_constructor_builds():
    from projections.folds.tiers import Page, Session, _visited

    page = Page("m1", 1, "c1", "user", AT, ("puppy", "biscuit"))
    s = Session("s-m1", (page,), AT, AT, 2, 5, None, None, (("puppy", 1), ("biscuit", 1)), ("puppy", "biscuit"))
    for at in (AT - timedelta(hours=1), AT + timedelta(hours=1)):
        got = _visited(s, at)
        want = Session(s.session_id, s.pages, s.created_at, max(s.last_access, at), 3, 6, None, None,
                       s.keyword_counts, s.keywords)
        assert got == want and got.canonical() == want.canonical() and got.terms == want.terms
        assert got is not s and s.visits == 2  # a new session: the one held elsewhere (the index) is unchanged
