"""Every failure a route can meet answers JSON naming the field and the fix, with the right status; no traceback."""

from __future__ import annotations

import pytest
import ray
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import BaseModel

from events.errors import (
    ConcurrencyError,
    InvalidInputError,
    QueryForbiddenError,
    QueryLimitError,
    ShardUnavailableError,
    StoreError,
)
from palimpsest.server import errors


class Body(BaseModel):
    k: int


def _app() -> FastAPI:
    app = FastAPI()
    errors.install(app)
    raising = {
        "invalid": InvalidInputError([("messages[0].text", "empty; give the text")], what="batch"),
        "unknown_note": InvalidInputError([("note_id", "'n1' is no note in this store")], what="note history"),
        "conflict": ConcurrencyError("stream ('acme', 'alice') is at seq 4, expected 3"),
        "store": StoreError("cannot open event log"),
        "bad_query": InvalidInputError([("query", "Catalog Error: Table with name nope does not exist!")],
                                       what="audit query"),
        "forbidden_query": QueryForbiddenError([("query", "Permission Error: Cannot access file")], what="audit query"),
        "costly_query": QueryLimitError([("query", "ran longer than 10 s (audit_limits.timeout_s)")],
                                        what="audit query"),
        "shard": ShardUnavailableError("shard 1 is restarting"),
        "actor": ray.exceptions.RayActorError(),
        "timeout": ray.exceptions.GetTimeoutError("took too long"),
        "limited": errors.ApiError(429, "rate_limited", "too fast", [("authorization", "retry after 2 s")],
                                   {"Retry-After": "2"}),
        "bug": RuntimeError("secret internals at line 42"),
    }

    @app.get("/raise/{name}")
    def fail(name: str):
        raise raising[name]

    @app.post("/body")
    def body(b: Body):
        return {"k": b.k}

    return app


CASES = [
    ("invalid", 400, "invalid_input", "messages[0].text"),
    ("unknown_note", 404, "not_found", "note_id"),
    ("conflict", 409, "conflict", "request"),
    ("store", 503, "unavailable", "store"),
    ("bad_query", 400, "invalid_input", "query"),  # never 503 with Retry-After: a retry fails the same way
    ("forbidden_query", 403, "forbidden", "query"),
    ("costly_query", 400, "query_limit", "query"),
    ("shard", 503, "unavailable", "store"),
    ("actor", 503, "unavailable", "store"),
    ("timeout", 503, "unavailable", "store"),
    ("limited", 429, "rate_limited", "authorization"),
    ("bug", 500, "internal", "request"),
]


@pytest.fixture(scope="module")
def client():
    with TestClient(_app(), raise_server_exceptions=False) as c:
        yield c


@pytest.mark.parametrize(("name", "status", "code", "field"), CASES, ids=[c[0] for c in CASES])
def test_each_failure_has_its_status_and_names_a_field_and_a_fix(client, name, status, code, field):
    r = client.get(f"/raise/{name}")
    assert r.status_code == status and r.headers["content-type"] == "application/json"
    body = r.json()
    assert body["error"] == code and body["problems"][0]["field"] == field and body["problems"][0]["fix"]
    assert "Traceback" not in r.text and "line 42" not in r.text
    if status in (429, 503):
        assert int(r.headers["retry-after"]) >= 1
    else:
        assert "retry-after" not in r.headers


def test_a_malformed_body_and_an_unknown_path_are_json_too(client):
    r = client.post("/body", json={"k": "many"})
    assert r.status_code == 400 and r.json()["problems"][0]["field"] == "k"
    r = client.get("/nowhere")
    assert r.status_code == 404 and r.json()["problems"][0]["field"] == "path"
