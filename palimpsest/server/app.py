"""The FastAPI application and the Ray Serve deployment that runs it.

Each replica attaches to the store's shard actors by name (they are started
by ``palimpsest serve`` before the deployment), embeds queries with the
store's own embedder and sends the same commands and queries as the
embedded :class:`palimpsest.Memory` — it *is* a ``Memory``, attached.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from ray import serve

from palimpsest.server import access, errors, mcp_app, ui
from palimpsest.server import routes_audit, routes_graph, routes_inspect, routes_keys, routes_signals, routes_tenant
from palimpsest.server.routes_store import router as store_router
from palimpsest.server.routes_users import router as users_router
from palimpsest.server.settings import ServeSettings

API_VERSION = "v1"


def build_app(max_body_bytes: int) -> FastAPI:
    app = FastAPI(
        title="Palimpsest",
        version=API_VERSION,
        description="Event-sourced long-term memory for LLM agents. Every request needs `Authorization: Bearer KEY`; "
        "the tenant is the key's. The same operations are MCP tools at `/mcp` (streamable HTTP); the memory "
        "inspector (a web page over this API) is at `/ui`.",
    )
    errors.install(app)

    @app.middleware("http")
    async def cap_body(request: Request, call_next):
        declared = request.headers.get("content-length")
        too_big = declared is not None and declared.isdigit() and int(declared) > max_body_bytes
        if not too_big and declared is None and request.method in ("POST", "PUT", "PATCH"):
            too_big = len(await request.body()) > max_body_bytes  # chunked: measured, then cached for the route
        if too_big:
            return JSONResponse(
                errors.body("too_large", f"request body over {max_body_bytes} bytes",
                            [("body", "send fewer messages per request (batches are idempotent by client id)")]),
                status_code=413)
        return await call_next(request)

    @app.get("/health", tags=["service"], summary="Liveness (no key needed)")
    def health() -> dict:
        return {"status": "ok", "ready": access._served is not None, "api": API_VERSION}

    app.include_router(users_router)
    app.include_router(store_router)
    for module in (routes_tenant, routes_signals, routes_graph, routes_audit, routes_keys, routes_inspect, ui):
        app.include_router(module.router)
    mcp_app.mount(app)
    return app


def open_served(settings: ServeSettings) -> access.Served:
    """This process's view of the served store: a ``Memory`` attached to the running shard actors."""
    from palimpsest.memory import Memory

    memory = Memory.open(settings.store, create=False)
    memory.embedder  # load the model now, not on the first request
    return access.Served(memory, settings)


def deployment(settings: ServeSettings, env: dict[str, str] | None = None):
    """The bound Serve application: ``settings.replicas`` replicas of the ingress, ``env`` set in each
    (the direct ingress switches, :mod:`palimpsest.server.ingress`)."""
    app = build_app(settings.max_body_bytes)
    options = {"num_cpus": 0, **({"runtime_env": {"env_vars": dict(env)}} if env else {})}

    @serve.deployment(
        name="palimpsest",
        num_replicas=settings.replicas,
        ray_actor_options=options,
        max_ongoing_requests=64,
        graceful_shutdown_wait_loop_s=0.5,
        graceful_shutdown_timeout_s=30,
    )
    @serve.ingress(app)
    class Api:
        def __init__(self, settings: ServeSettings) -> None:
            access.install(open_served(settings))

    return Api.bind(settings)
