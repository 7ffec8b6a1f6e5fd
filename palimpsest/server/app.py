"""The FastAPI application and the Ray Serve deployment that runs it.

Each replica attaches to the store's shard actors by name (they are started
by ``palimpsest serve`` before the deployment), embeds queries with the
store's own embedder and sends the same commands and queries as the
embedded :class:`palimpsest.Memory` — it *is* a ``Memory``, attached.
"""

from __future__ import annotations

import contextlib

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from ray import serve

from palimpsest.server import access, entry_protocol, errors, ingress, mcp_app, proxy_models, proxy_upstream, ui
from palimpsest.server import routes_audit, routes_inspect, routes_keys, routes_tenant
from palimpsest.server import routes_generated, routes_proxy, routes_reembed
from palimpsest.server.routes_store import router as store_router
from palimpsest.server.admission import Admission, AdmissionSettings
from palimpsest.server.admission_http import AdmissionMiddleware, at_entry
from palimpsest.server.quiet import QuietConsolidation
from palimpsest.server.routes_users import router as users_router
from palimpsest.server.settings import ServeSettings

API_VERSION = "v1"


class BodyCap:
    """413 for a request body over ``max_bytes``: by its declared length, or counted as a chunked body arrives.

    Plain ASGI (not ``@app.middleware``, whose wrapper runs each request in
    an extra task with its own streams): a declared length within the cap
    costs a header lookup.
    """

    def __init__(self, app, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = next((v for k, v in scope["headers"] if k == b"content-length"), None)
        if declared is not None:
            if declared.isdigit() and int(declared) > self.max_bytes:
                return await self._refuse(scope, receive, send)
            return await self.app(scope, receive, send)
        if scope["method"] not in ("POST", "PUT", "PATCH"):
            return await self.app(scope, receive, send)
        messages, size = [], 0  # chunked: read it all (refusing as soon as it is over), then hand it on
        while True:
            message = await receive()
            messages.append(message)
            size += len(message.get("body", b""))
            if size > self.max_bytes:
                return await self._refuse(scope, receive, send)
            if message["type"] != "http.request" or not message.get("more_body", False):
                break

        async def replay():
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope, receive, send) -> None:
        if scope.get("path") in routes_proxy.PATHS:  # a chat through the memory proxy: OpenAI's error shape
            body = routes_proxy.openai_error(413, errors.body(
                "too_large", f"request body over {self.max_bytes} bytes",
                [("body", "send a shorter chat (fewer or shorter messages), or start the server with a larger "
                          "--max-body-bytes")]))
        else:
            body = errors.body("too_large", f"request body over {self.max_bytes} bytes",
                               [("body", "send fewer messages per request (batches are idempotent by client id)")])
        await JSONResponse(body, status_code=413)(scope, receive, send)


def build_app(max_body_bytes: int, admission: AdmissionSettings | None = None) -> FastAPI:
    app = FastAPI(
        title="Palimpsest",
        version=API_VERSION,
        description="Event-sourced long-term memory for LLM agents. Every request needs `Authorization: Bearer KEY`; "
        "the tenant is the key's. The same operations are MCP tools at `/mcp` (streamable HTTP); the memory "
        "inspector (a web page over this API) is at `/ui`.",
    )
    errors.install(app)
    routes_proxy.openai_http_errors(app)
    gates = Admission(admission or AdmissionSettings())

    # inside the body cap: an oversized body costs no slot
    app.add_middleware(AdmissionMiddleware, admission=gates)
    app.add_middleware(BodyCap, max_bytes=max_body_bytes)

    @app.get("/health", tags=["service"], summary="Liveness and this replica's admission state (no key needed)")
    async def health() -> dict:
        return {"status": "ok", "ready": access._served is not None, "api": API_VERSION, "admission": gates.state()}

    # the memory proxy's routes first: a request is matched against the routes in order (by the router, and by Ray
    # Serve for its metrics before that), and a proxied chat call is on a user's path to their model's answer
    app.include_router(routes_proxy.router)
    app.include_router(proxy_models.router)
    app.include_router(users_router)
    app.include_router(routes_generated.router)  # the declared operations' routes (palimpsest.operations)
    app.include_router(store_router)
    for module in (routes_tenant, routes_audit, routes_keys, routes_inspect, routes_reembed, ui):
        app.include_router(module.router)
    mcp_app.mount(app)
    _consolidate_when_quiet(app, gates)
    return app


def _consolidate_when_quiet(app: FastAPI, gates: Admission) -> None:
    """For the app's lifetime, the replica's graph consolidation runs while no request does
    (:mod:`palimpsest.server.quiet`), and the replica's HTTP entry admits with its gates
    (:func:`palimpsest.server.admission_http.at_entry`); at its end, the proxy's upstream connections close."""
    outer = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(a):
        from palimpsest.memory import CONSOLIDATE_EVERY

        quiet = QuietConsolidation(gates.idle_for, CONSOLIDATE_EVERY)
        quiet.start(lambda: access._served.memory if access._served is not None else None)
        try:
            with at_entry(gates):
                async with outer(a) as state:
                    yield state
        finally:
            quiet.stop()
            await proxy_upstream.close_sessions()  # the memory proxy's connections to its upstream

    app.router.lifespan_context = lifespan


def open_served(settings: ServeSettings) -> access.Served:
    """This process's view of the served store: a ``Memory`` attached to the running shard actors."""
    from pathlib import Path

    from actors.limiter import wait_for_limiter
    from palimpsest.config import store_id
    from palimpsest.memory import Memory

    # started beside the server process's own open of the store (palimpsest.server.run.start): attach once the
    # shards are up, never start them here (a shard a replica started would end with the replica)
    wait_for_limiter(store_id(Path(settings.store)))
    memory = Memory.open(settings.store, create=False)
    memory.embedder  # load the model now, not on the first request
    memory.consolidate_every = 0  # staged memories are consolidated while the replica is quiet, not in a request
    return access.Served(memory, settings)


def replicas(settings: ServeSettings) -> dict:
    """How many replicas: ``settings.replicas``, or with ``max_replicas`` above it Ray Serve's autoscaling between the
    two, aiming at as many requests in flight per replica as its admission runs at once (reads and writes; a
    replica holding more is queueing them). The rate limit is per key across replicas (one shared bucket); each
    replica's admission keeps one tenant to its share of that replica's queue, and the proxy spreads a tenant's
    requests over the replicas."""
    if not settings.autoscaled:
        return {"num_replicas": settings.replicas}
    admission = settings.admission
    return {"autoscaling_config": {
        "min_replicas": settings.replicas, "initial_replicas": settings.replicas,
        "max_replicas": settings.max_replicas,
        "target_ongoing_requests": admission.read_slots + admission.write_slots,
        "upscale_delay_s": 10.0, "downscale_delay_s": 120.0,
    }}


def deployment(settings: ServeSettings, env: dict[str, str] | None = None):
    """The bound Serve application: ``settings.replicas`` replicas of the ingress, ``env`` set in each
    (the direct ingress switches, :mod:`palimpsest.server.ingress`)."""
    app = build_app(settings.max_body_bytes, settings.admission)
    options = {"num_cpus": 0, **({"runtime_env": {"env_vars": dict(env)}} if env else {})}

    # Serve hands a replica up to everything its admission holds (running and waiting) and a margin for the
    # requests it never holds back (health, docs); its own queue in front (at the proxy, or at a direct
    # replica's port) is bounded too: past both, Serve itself answers 503. The replica's admission refuses
    # first, with the API's error body.
    ongoing = settings.admission.capacity + 16

    @serve.deployment(
        name="palimpsest",
        **replicas(settings),
        ray_actor_options=options,
        max_ongoing_requests=ongoing,
        max_queued_requests=ongoing,
        backpressure_config={"status_code": 503, "retry_after_s": settings.admission.retry_after_s},
        logging_config={"enable_access_log": False},  # a log line per request costs CPU the answers need
        graceful_shutdown_wait_loop_s=0.5,
        graceful_shutdown_timeout_s=30,
    )
    @serve.ingress(app)
    class Api:
        def __init__(self, settings: ServeSettings) -> None:
            ingress.reuse_address()  # before Serve starts this replica's own HTTP server (direct ingress)
            entry_protocol.install()  # that server answers a refusal from the request's headers alone
            access.install(open_served(settings))

    return Api.bind(settings)
