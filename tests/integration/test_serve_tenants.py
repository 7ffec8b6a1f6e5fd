"""An adversarial tenant suite over a real Ray Serve deployment on a local Ray.

Two tenants hold users with the same ids; each tenant's data carries a
marker word and its memory/note ids are known. Every endpoint that takes an
id or a query is called with the other tenant's key, and no answer may carry
the other tenant's marker or ids. Missing, malformed, wrong and revoked keys
get 401 everywhere; the rate limit answers 429 with Retry-After; a body over
the cap 413; a rejected batch writes nothing.
"""

from __future__ import annotations

import httpx
import pytest

from palimpsest.server.keys import KeyRing
from palimpsest.server.run import start
from palimpsest.server.settings import ServeSettings
from tests.serve_helpers import free_port

pytestmark = pytest.mark.integration
WHEN = "2024-05-0{}T09:00:00+00:00"
NOW = "2024-06-01T00:00:00+00:00"
DATA = {
    "acme": ["ACMEMARK I prefer green tea in the morning", "ACMEMARK we decided to use PostgreSQL for Atlas",
             "ACMEMARK my sister Lena lives in Oslo"],
    "beta": ["BETAMARK I prefer black coffee at night", "BETAMARK we decided to use MySQL for Orion",
             "BETAMARK my brother Tom lives in Rome"],
}


@pytest.fixture(scope="module")
def served(ray_cluster, tmp_path_factory):
    store = tmp_path_factory.mktemp("served") / "store"
    settings = ServeSettings(store=str(store), port=free_port(), rate_per_s=5, burst=150, max_body_bytes=64 * 1024)
    running = start(settings, embedder="hash", num_shards=2)
    ring = KeyRing(store)
    keys = {t: ring.create(t)[0] for t in DATA} | {"admin": ring.create("ops", admin=True)[0]}
    client = httpx.Client(base_url=running.url, timeout=120)
    world = {"keys": keys, "ring": ring, "client": client, "running": running, "memory_ids": {}, "note_ids": {}}
    for tenant, texts in DATA.items():
        ids = []
        for user in ("alice", "bob"):
            msgs = [{"text": t, "occurred_at": WHEN.format(i + 1), "client_message_id": f"{user}-{i}",
                     "speaker": user} for i, t in enumerate(texts)]
            r = client.post(f"/v1/users/{user}/messages", json={"messages": msgs}, headers=_auth(keys[tenant]))
            assert r.status_code == 200, r.text
            ids += r.json()["memory_ids"]
        world["memory_ids"][tenant] = ids
        notes = client.get("/v1/users/alice/notes", headers=_auth(keys[tenant])).json()["notes"]
        world["note_ids"][tenant] = [n["note_id"] for n in notes]
    client.post("/v1/users/carol/messages", headers=_auth(keys["acme"]),
                json={"messages": [{"text": "ACMEMARK carol only exists at acme", "occurred_at": WHEN.format(4)}]})
    yield world
    client.close()
    running.stop()


def _auth(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


def _calls(other_ids: list[str], other_note: str) -> list[tuple[str, str, dict | None]]:
    """Every endpoint that takes a user, an id or a query, aimed at what the other tenant has."""
    return [
        ("POST", "/v1/users/alice/search", {"query": "what does the user prefer to drink", "k": 50, "now": NOW}),
        ("POST", "/v1/users/alice/search", {"query": "prefer decided lives", "k": 50, "scope": "all"}),
        ("POST", "/v1/users/alice/context", {"query": "where does the family live", "token_budget": 4000}),
        ("GET", "/v1/users/alice/notes?include_inactive=true", None),
        ("GET", "/v1/users/alice/episodes", None),
        ("GET", "/v1/users/alice/episodes?query=database&k=20", None),
        ("GET", "/v1/users/alice/retention", None),
        ("GET", "/v1/users/alice/profile?include_assistant_knowledge=true", None),
        ("GET", "/v1/users/alice/tiers", None),
        ("GET", "/v1/users/alice/archive", None),
        ("GET", "/v1/events?user_id=alice", None),
        ("GET", "/v1/events", None),
        ("GET", "/v1/users", None),
        ("POST", "/v1/archive/sweep", {"dry_run": True, "now": "2030-01-01T00:00:00+00:00"}),
        ("POST", "/v1/users/alice/tools/search_memories", {"arguments": {"query": "tea coffee database"}}),
        ("GET", "/v1/users/alice/graph/view", None),
        ("GET", "/v1/policies", None),
    ] + [
        ("GET", f"/v1/users/alice/notes/{other_note}", None),
        ("POST", "/v1/users/alice/archive", {"memory_ids": other_ids[:1]}),
        ("POST", "/v1/users/alice/archive/restore", {"memory_ids": other_ids[:1]}),
        ("GET", f"/v1/users/alice/memories/{other_ids[0]}", None),
        ("GET", f"/v1/users/alice/explain/{other_ids[0]}", None),
        ("GET", f"/v1/users/alice/explain/{other_note}?query=tea", None),
        ("GET", "/v1/users/alice/adjustments", None),
    ]


@pytest.mark.parametrize("reader,owner", [("beta", "acme"), ("acme", "beta")])
def test_no_endpoint_reads_the_other_tenants_data(served, reader, owner):
    client, key = served["client"], served["keys"][reader]
    forbidden = [owner.upper() + "MARK", *served["memory_ids"][owner], *served["note_ids"][owner]]
    assert served["note_ids"][owner], "the owner's data should have produced notes to aim at"
    seen_own = 0
    for method, path, body in _calls(served["memory_ids"][owner], served["note_ids"][owner][0]):
        r = client.request(method, path, json=body, headers=_auth(key))
        assert r.status_code in (200, 404), (path, r.status_code, r.text)
        leaked = [f for f in forbidden if f in r.text]
        assert not leaked, f"{method} {path} with {reader}'s key returned {owner}'s {leaked[:3]}"
        seen_own += reader.upper() + "MARK" in r.text
        if ("/notes/" in path or "/memories/" in path or "/explain/" in path
                or path.endswith(("/archive", "/restore")) and method == "POST"):
            assert r.status_code == 404 and r.json()["error"] == "not_found", (path, r.text)
    assert seen_own >= 5, "the reader's own data should have been found by most reads"


def test_a_user_only_another_tenant_has_does_not_exist(served):
    client = served["client"]
    for path in ("/v1/users/carol/retention", "/v1/users/carol/notes", "/v1/users/carol/profile"):
        assert client.get(path, headers=_auth(served["keys"]["acme"])).status_code == 200
        r = client.get(path, headers=_auth(served["keys"]["beta"]))
        assert r.status_code == 404 and "ACMEMARK" not in r.text and r.json()["problems"][0]["field"] == "user_id"
    r = client.post("/v1/users/carol/search", json={"query": "carol"}, headers=_auth(served["keys"]["beta"]))
    assert r.status_code == 404
    r = client.get("/v1/events?user_id=carol", headers=_auth(served["keys"]["beta"]))
    assert r.status_code == 404
    assert "carol" not in client.get("/v1/users", headers=_auth(served["keys"]["beta"])).json()["users"]


def test_the_tenant_comes_from_the_key_not_the_request(served):
    client, key = served["client"], served["keys"]["beta"]
    r = client.get("/v1/events?tenant=acme", headers=_auth(key))
    assert r.status_code == 403 and "ACMEMARK" not in r.text
    r = client.post("/v1/users/alice/messages", headers=_auth(key), json={"messages": [
        {"text": "BETAMARK sneaky", "occurred_at": WHEN.format(5), "tenant": "acme"}]})
    assert r.status_code == 400 and r.json()["problems"][0]["field"] == "messages[0].tenant"
    r = client.post("/v1/users/alice/search", headers=_auth(key), json={"query": "tea", "tenant": "acme"})
    assert r.status_code == 400 and r.json()["problems"][0]["field"] == "tenant"
    assert client.get("/v1/whoami", headers=_auth(key)).json()["tenant"] == "beta"


def test_admin_audits_across_tenants_and_tenant_keys_cannot(served):
    client, admin = served["client"], served["keys"]["admin"]
    tenants = {e["tenant"] for e in client.get("/v1/events", headers=_auth(admin)).json()["events"]}
    assert {"acme", "beta"} <= tenants
    only = client.get("/v1/events?tenant=acme&user_id=alice&kind=message_recorded", headers=_auth(admin)).json()
    assert len(only["events"]) == 3 and {e["tenant"] for e in only["events"]} == {"acme"}
    assert client.get("/v1/digest", headers=_auth(admin)).status_code == 200
    for path in ("/v1/digest",):
        r = client.get(path, headers=_auth(served["keys"]["acme"]))
        assert r.status_code == 403 and r.json()["problems"][0]["field"] == "authorization"
    assert client.post("/v1/replay", headers=_auth(served["keys"]["acme"])).status_code == 403


@pytest.mark.parametrize("header", [None, "Bearer", "Basic abc", "Bearer plm_nokey_nosecret", "Bearer garbage"])
def test_requests_without_a_valid_key_get_401_everywhere(served, header):
    client = served["client"]
    headers = {"Authorization": header} if header else {}
    for method, path, body in _calls(served["memory_ids"]["acme"], "n") + [("POST", "/v1/users/alice/messages", {
            "messages": [{"text": "x", "occurred_at": WHEN.format(1)}]})]:
        r = client.request(method, path, json=body, headers=headers)
        assert r.status_code == 401, (path, r.status_code)
        assert r.headers["www-authenticate"] == "Bearer" and "ACMEMARK" not in r.text


def test_a_wrong_secret_and_a_revoked_key_get_401(served):
    client, ring = served["client"], served["ring"]
    token, key = ring.create("acme", label="to revoke")
    assert client.get("/v1/users/alice/notes", headers=_auth(token)).status_code == 200
    assert client.get("/v1/whoami", headers=_auth(token[:-2] + "xx")).status_code == 401
    ring.revoke(key.key_id, reason="test")
    r = client.get("/v1/users/alice/notes", headers=_auth(token))
    assert r.status_code == 401 and r.json()["message"] == "unknown or revoked API key"


def test_rate_limit_answers_429_with_retry_after(served):
    client = served["client"]
    token, _ = served["ring"].create("acme", label="burst")
    codes = []
    for _ in range(1000):  # burst 150 at 5/s: limited after ~200 requests, later when requests are slow (load)
        codes.append(client.get("/v1/whoami", headers=_auth(token)))
        if codes[-1].status_code == 429:
            break
    limited = [r for r in codes if r.status_code == 429]
    assert limited and all(r.status_code in (200, 429) for r in codes)
    assert int(limited[0].headers["retry-after"]) >= 1 and limited[0].json()["error"] == "rate_limited"
    # another key is not affected
    assert client.get("/v1/whoami", headers=_auth(served["keys"]["beta"])).status_code == 200


def test_a_body_over_the_cap_is_413_and_writes_nothing(served):
    client, key = served["client"], served["keys"]["acme"]
    before = len(client.get("/v1/events?user_id=bob", headers=_auth(key)).json()["events"])
    big = [{"text": "ACMEMARK " + "x" * 1000, "occurred_at": WHEN.format(6)} for _ in range(80)]
    r = client.post("/v1/users/bob/messages", json={"messages": big}, headers=_auth(key))
    assert r.status_code == 413 and r.json()["problems"][0]["field"] == "body"
    assert len(client.get("/v1/events?user_id=bob", headers=_auth(key)).json()["events"]) == before


def test_a_rejected_batch_names_each_field_and_writes_nothing(served):
    client, key = served["client"], served["keys"]["acme"]
    before = len(client.get("/v1/events?user_id=bob", headers=_auth(key)).json()["events"])
    msgs = [{"text": "ACMEMARK fine", "occurred_at": WHEN.format(7)},
            {"text": "ACMEMARK no time"}, {"text": "", "occurred_at": "yesterday"}]
    r = client.post("/v1/users/bob/messages", json={"messages": msgs}, headers=_auth(key))
    assert r.status_code == 400, r.text
    fields = [p["field"] for p in r.json()["problems"]]
    assert "messages[1].occurred_at" in fields and "messages[2].text" in fields and "messages[2].occurred_at" in fields
    assert all(p["fix"] for p in r.json()["problems"])
    assert len(client.get("/v1/events?user_id=bob", headers=_auth(key)).json()["events"]) == before
    r = client.post("/v1/users/bob/search", json={"query": "", "k": 0}, headers=_auth(key))
    assert r.status_code == 400 and {p["field"] for p in r.json()["problems"]} == {"query", "k"}


def test_adding_again_by_client_id_is_idempotent(served):
    client, key = served["client"], served["keys"]["beta"]
    msgs = [{"text": "BETAMARK I prefer black coffee at night", "occurred_at": WHEN.format(1),
             "client_message_id": "alice-0", "speaker": "alice"}]
    r = client.post("/v1/users/alice/messages", json={"messages": msgs}, headers=_auth(key)).json()
    assert r["created"] == 0 and r["duplicates"] == 1 and r["memory_ids"] == served["memory_ids"]["beta"][:1]


def test_forget_is_for_the_keys_own_tenant_or_an_admin_and_erases_only_that_user(served, monkeypatch, capsys):
    from palimpsest.cli import main

    c, keys = served["client"], served["keys"]
    for tenant in ("acme", "beta"):
        msgs = [{"text": f"{tenant.upper()}MARK dave keeps bees on the roof", "occurred_at": WHEN.format(5),
                 "client_message_id": "dave-1"}]
        assert c.post("/v1/users/dave/messages", json={"messages": msgs}, headers=_auth(keys[tenant])).status_code == 200
    search = {"query": "who keeps bees", "k": 5}

    assert c.post("/v1/users/dave/forget", params={"tenant": "acme"}, headers=_auth(keys["beta"])).status_code == 403
    assert c.post("/v1/users/nobody/forget", headers=_auth(keys["beta"])).status_code == 404
    monkeypatch.setenv("PALIMPSEST_API_KEY", keys["beta"])  # the CLI as a client of the server
    assert main(["--server", served["running"].url, "forget", "--tenant", "beta", "--user", "dave", "--yes"]) == 0
    assert "forgot beta/dave" in capsys.readouterr().out
    assert c.post("/v1/users/dave/search", json=search, headers=_auth(keys["beta"])).json()["hits"] == []
    acme = c.post("/v1/users/dave/search", json=search, headers=_auth(keys["acme"])).json()["hits"]
    assert [h["text"] for h in acme] == ["ACMEMARK dave keeps bees on the roof"]  # the same id at acme: kept

    r = c.post("/v1/users/dave/forget", params={"tenant": "acme"}, headers=_auth(keys["admin"]))
    assert r.status_code == 200 and r.json()["forgotten"] is True
    assert c.post("/v1/users/dave/search", json=search, headers=_auth(keys["acme"])).json()["hits"] == []
