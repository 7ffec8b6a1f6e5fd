"""The served app's thin layers: which ingress answers the port, answers encoded once, the body cap as plain ASGI."""

from __future__ import annotations

import math
import socket
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from fastapi import APIRouter, FastAPI
from fastapi.testclient import TestClient
from starlette.responses import PlainTextResponse

from actors.limiter import TokenBuckets
from events.errors import InvalidInputError
from palimpsest.server import app, errors, ingress
from palimpsest.server.admission import AdmissionSettings
from palimpsest.server.app import BodyCap
from palimpsest.server.limits import RateLimiter
from palimpsest.server.ports import free_port
from palimpsest.server.responses import JsonRoute
from palimpsest.server.settings import ServeSettings


def test_auto_is_direct_for_one_local_replica_and_proxy_otherwise(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    port = free_port()
    one = ingress.plan(ServeSettings(store="s", port=port))
    assert one.mode == "direct" and one.replica_urls == (f"http://127.0.0.1:{port}",)
    assert one.env["RAY_SERVE_ENABLE_DIRECT_INGRESS"] == "1"
    # the controller hands out ports from [MIN, MAX): exactly the configured one for one replica
    assert (one.env["RAY_SERVE_DIRECT_INGRESS_MIN_HTTP_PORT"], one.env["RAY_SERVE_DIRECT_INGRESS_MAX_HTTP_PORT"]) == (
        str(port), str(port + 1))
    assert one.proxy_port != port  # Serve's own proxy moves out of the way
    assert ingress.mode(ServeSettings(store="s", replicas=3)) == "proxy"
    many = ingress.plan(ServeSettings(store="s", port=port, replicas=2, ingress="direct"))
    assert many.replica_urls == (f"http://127.0.0.1:{port}", f"http://127.0.0.1:{port + 1}")
    proxy = ingress.plan(ServeSettings(store="s", port=port, ingress="proxy"))
    assert proxy.mode == "proxy" and proxy.proxy_port == port and proxy.env == {} and proxy.replica_urls == ()
    monkeypatch.setenv("RAY_ADDRESS", "ray://head:10001")  # a cluster: replicas may land on other nodes
    assert ingress.mode(ServeSettings(store="s")) == "proxy"


def test_a_ray_started_with_the_ingress_environment_needs_no_runtime_env_and_another_plan_overrides_it(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    port = free_port()
    direct = ingress.plan(ServeSettings(store="s", port=port)).env
    assert ingress.runtime_env(direct, direct) == {}  # the controller and replicas start in Ray's own workers
    assert ingress.runtime_env(direct, {}) == direct  # a Ray started by someone else: given to them
    other = ingress.plan(ServeSettings(store="s", port=free_port())).env
    assert ingress.runtime_env(other, direct) == other  # served again on another port: the new ports win
    # through the proxy after a direct store on the same Ray: Serve's defaults in place of the inherited switches
    assert ingress.runtime_env({}, direct) == {"RAY_SERVE_ENABLE_DIRECT_INGRESS": "0",
                                               "RAY_SERVE_RUN_USER_CODE_IN_SEPARATE_THREAD": "1",
                                               "RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH": ""}
    assert ingress.runtime_env({}, {}) == {}


def test_max_replicas_autoscales_between_the_two_through_the_proxy(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    fixed = ServeSettings(store="s", replicas=2)
    assert app.replicas(fixed) == {"num_replicas": 2} and app.replicas(replace(fixed, max_replicas=2)) == {
        "num_replicas": 2}
    scaled = ServeSettings(store="s", max_replicas=4, admission=AdmissionSettings(read_slots=6, write_slots=2))
    assert ingress.mode(scaled) == "proxy"  # replicas that come and go: no fixed port each
    assert app.replicas(scaled) == {"autoscaling_config": {
        "min_replicas": 1, "initial_replicas": 1, "max_replicas": 4, "target_ongoing_requests": 8,
        "upscale_delay_s": 10.0, "downscale_delay_s": 120.0}}
    with pytest.raises(InvalidInputError) as direct:
        ingress.mode(replace(scaled, ingress="direct"))
    assert direct.value.problems[0][0] == "ingress" and "proxy" in direct.value.problems[0][1]
    with pytest.raises(InvalidInputError) as fewer:
        ingress.plan(ServeSettings(store="s", port=free_port(), replicas=3, max_replicas=2))
    assert fewer.value.problems[0][0] == "max_replicas" and "--replicas" in fewer.value.problems[0][1]


def test_a_bad_ingress_or_a_taken_port_is_refused_naming_the_field():
    with pytest.raises(InvalidInputError) as bad:
        ingress.plan(ServeSettings(store="s", ingress="fast"))
    assert bad.value.problems[0][0] == "ingress" and "direct" in bad.value.problems[0][1]
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        for mode in ("direct", "proxy"):
            with pytest.raises(InvalidInputError) as taken:
                ingress.plan(ServeSettings(store="s", port=port, ingress=mode))
            field, fix = taken.value.problems[0]
            assert field == "port" and str(port) in fix and "--port" in fix


def _app(max_bytes: int = 100) -> FastAPI:
    app = FastAPI()
    errors.install(app)
    app.add_middleware(BodyCap, max_bytes=max_bytes)
    router = APIRouter(route_class=JsonRoute)

    @router.post("/echo")
    def echo(body: dict) -> dict:
        return {"got": body, "at": datetime(2024, 5, 1, tzinfo=UTC), "nan": math.nan, "text": "café 😀"}

    @router.get("/odd")
    async def odd() -> dict:
        return {"set": {3}}  # not JSON: FastAPI's generic encoder takes it

    @router.get("/text")
    def text() -> PlainTextResponse:
        return PlainTextResponse("as it is")

    @router.get("/fail")
    def fail() -> dict:
        raise errors.ApiError(404, "not_found", "no such thing", [("thing", "ask for another")])

    app.include_router(router)
    return app


def test_json_routes_answer_json_once_and_keep_their_schema_and_errors():
    client = TestClient(_app(10_000))
    r = client.post("/echo", json={"a": [1, 2]})
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert r.json() == {"got": {"a": [1, 2]}, "at": "2024-05-01T00:00:00Z", "nan": None, "text": "café 😀"}
    assert client.get("/odd").json() == {"set": [3]}
    assert client.get("/text").text == "as it is"
    assert client.get("/fail").status_code == 404 and client.get("/fail").json()["problems"][0]["field"] == "thing"
    bad = client.post("/echo", content=b"[1, 2]", headers={"content-type": "application/json"})
    assert bad.status_code == 400 and bad.json()["error"] == "invalid_input"  # request validation unchanged
    schema = client.get("/openapi.json").json()["paths"]["/echo"]["post"]
    assert "requestBody" in schema and "200" in schema["responses"]


def test_the_body_cap_refuses_declared_and_chunked_bodies_over_it_and_passes_the_rest_intact():
    client = TestClient(_app(100))
    small = {"k": "x" * 20}
    assert client.post("/echo", json=small).json()["got"] == small
    over = client.post("/echo", json={"k": "x" * 200})
    assert over.status_code == 413 and over.json()["problems"][0]["field"] == "body"

    def chunks(n: int):
        yield b'{"k": "'
        for _ in range(n):
            yield b"x" * 10
        yield b'"}'

    headers = {"content-type": "application/json"}
    chunked = client.post("/echo", content=chunks(5), headers=headers)
    assert chunked.status_code == 200 and chunked.json()["got"] == {"k": "x" * 50}
    assert client.post("/echo", content=chunks(30), headers=headers).status_code == 413


def test_spending_leased_tokens_needs_no_lease_and_the_limit_still_holds():
    buckets = TokenBuckets(rate=100.0, burst=5, clock=lambda: 0.0)  # time stands still
    leases = []

    def lease(key, want):
        leases.append(want)
        return buckets.lease(key, want)

    limiter = RateLimiter(lease, rate=100.0, burst=5)
    assert not limiter.spend("k") and leases == []  # nothing leased yet: the caller must take (a lease)
    assert limiter.take("k") is None and len(leases) == 1
    while limiter.spend("k"):
        pass
    assert len(leases) == 1  # the leased tokens were spent locally
    assert limiter.take("k") == pytest.approx(0.01)  # the burst is spent and no time passed: told to wait
    assert RateLimiter(lease, rate=0, burst=1).spend("k")  # limit off
