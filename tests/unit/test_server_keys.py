"""Tenant API keys as a pure fold over key events; the key log's durability rules; the per-key rate limit."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from events.errors import InvalidInputError
from palimpsest.server.keys import ApiKeyCreated, ApiKeyRevoked, KeyLog, KeyRing, fold
from actors.limiter import TokenBuckets
from palimpsest.server.limits import KnownStreams, RateLimiter

T0 = datetime(2024, 5, 1, tzinfo=UTC)


def test_fold_creates_and_revokes_and_ignores_unknown_revocations():
    created = ApiKeyCreated(key_id="k1", tenant="acme", salt="00", digest="d", occurred_at=T0)
    keys = fold({}, [created, ApiKeyRevoked(key_id="nope", occurred_at=T0)])
    assert keys["k1"].active and set(keys) == {"k1"}
    later = datetime(2024, 5, 2, tzinfo=UTC)
    keys = fold(keys, [ApiKeyRevoked(key_id="k1", occurred_at=later), ApiKeyRevoked(key_id="k1", occurred_at=T0)])
    assert keys["k1"].revoked_at == later  # the first revocation stands


def test_a_key_verifies_until_revoked_and_the_store_keeps_no_secret(tmp_path):
    ring = KeyRing(tmp_path)
    token, key = ring.create("acme", admin=True)
    assert ring.verify(token) == key and key.admin and key.tenant == "acme"
    secret = token.split("_", 2)[2]
    assert secret not in (tmp_path / "keys.jsonl").read_text()
    assert ring.verify(token[:-1] + ("A" if token[-1] != "A" else "B")) is None
    assert ring.verify("plm_" + key.key_id) is None and ring.verify("") is None
    other = KeyRing(tmp_path)  # another process: sees the key, then the revocation, from the log alone
    assert other.verify(token) is not None
    ring.revoke(key.key_id, reason="leaked")
    assert other.verify(token) is None and ring.verify(token) is None
    assert [e["kind"] for e in map(__import__("json").loads, (tmp_path / "keys.jsonl").read_text().splitlines())] == [
        "api_key_created", "api_key_revoked"]


def test_bad_tenant_and_unknown_key_are_rejected_with_the_fix(tmp_path):
    ring = KeyRing(tmp_path)
    with pytest.raises(InvalidInputError) as exc:
        ring.create(" ")
    assert exc.value.problems[0][0] == "tenant"
    with pytest.raises(InvalidInputError) as exc:
        ring.revoke("nope")
    assert "keys list" in exc.value.problems[0][1]
    assert not (tmp_path / "keys.jsonl").exists()


def test_a_torn_last_line_is_ignored_and_the_next_append_starts_fresh(tmp_path):
    ring = KeyRing(tmp_path)
    token, _ = ring.create("acme")
    with (tmp_path / "keys.jsonl").open("a") as fh:
        fh.write('{"kind": "api_key_rev')
    assert KeyRing(tmp_path).verify(token) is not None
    token2, _ = ring.create("beta")
    fresh = KeyRing(tmp_path)
    assert fresh.verify(token) is not None and fresh.verify(token2).tenant == "beta"
    assert len(KeyLog(tmp_path).read_new()) == 2


def test_rate_limiter_allows_a_burst_then_asks_to_wait():
    now = [0.0]
    buckets = TokenBuckets(rate=2, burst=3, clock=lambda: now[0])
    limiter = RateLimiter(buckets.lease, rate=2, burst=3)
    assert [limiter.take("k") for _ in range(3)] == [None, None, None]
    wait = limiter.take("k")
    assert wait == pytest.approx(0.5)
    assert limiter.take("other") is None
    now[0] += 0.5
    assert limiter.take("k") is None


def test_replicas_leasing_from_one_set_of_buckets_share_the_limit():
    """Three replicas, one key: together they pass the burst plus what the rate refills, never three times it."""
    now = [0.0]
    buckets = TokenBuckets(rate=100, burst=20, clock=lambda: now[0])
    replicas = [RateLimiter(buckets.lease, rate=100, burst=20) for _ in range(3)]
    assert replicas[0].want == 5  # a twentieth of a second's worth per lease
    passed = 0
    for step in range(100):  # one second, 10 ms apart, each replica asked 3 times per step
        now[0] = step / 100
        passed += sum(r.take("k") is None for r in replicas for _ in range(3))
    assert 100 <= passed <= 20 + 100 + 1, passed
    limited = [r.take("k") for r in replicas]
    assert all(w is None or 0 < w <= 1 for w in limited)


def test_known_streams_read_only_complete_lines(tmp_path):
    table = tmp_path / "directory.jsonl"
    table.write_text('{"tenant": "acme", "user_id": "alice", "shard": 0}\n{"tenant": "beta", "user_id": "al')
    streams = KnownStreams(table)
    assert ("acme", "alice") in streams and ("beta", "alice") not in streams
    with table.open("a") as fh:
        fh.write('ice", "shard": 1}\n')
    assert ("beta", "alice") in streams and streams.of_tenant("beta") == ["alice"]
