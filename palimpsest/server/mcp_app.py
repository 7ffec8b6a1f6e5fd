"""``/mcp``: the MCP tools over streamable HTTP, mounted on the served FastAPI app.

Stateless and answering in JSON (no session to pin to a replica), so any
replica answers any request. Every request needs the same
``Authorization: Bearer KEY`` as the HTTP API, checked before the MCP layer
sees it (401 otherwise); each tool call is then the HTTP request of the same
operation, sent in-process to this app with that header
(:mod:`palimpsest.server.mcp_tools`), so it passes the same key, rate and
tenant checks and the same routes.

The MCP side starts with a replica's first ``/mcp`` request, not with the
replica: the MCP SDK's imports are about a second of a replica's start-up,
which a server that is never asked over MCP (and every new replica before
its first MCP request) does without. That first request waits for it;
requests arriving meanwhile wait for the same start.
"""

from __future__ import annotations

import asyncio
import contextlib

import httpx
from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from palimpsest.server import access, errors
from palimpsest.server.admission_http import InProcess

PATH = "/mcp"


class RequireKey:
    """ASGI wrapper: a request without a valid API key gets the HTTP API's 401 (or 503 while starting)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            try:
                access.verified(Request(scope).headers.get("authorization", ""))
            except errors.ApiError as exc:
                response = JSONResponse(errors.body(exc.code, exc.message, exc.problems), exc.status, exc.headers)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _headers_of(ctx) -> dict[str, str]:
    request = getattr(ctx, "request", None)
    headers = getattr(request, "headers", None) or {}
    return {"authorization": headers.get("authorization", "")}


class _Endpoint:
    """The MCP ASGI app, started by the first ``/mcp`` request while the app runs in its replica (an HTTP client
    and the session manager's task group cannot be pickled with the app that Ray Serve ships to the replica)."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app
        self.handler: ASGIApp | None = None  # set while the MCP side runs
        self.open = False  # the app's lifespan has begun and not ended
        self.side: asyncio.Task | None = None  # the MCP side: starts, then runs until the lifespan ends
        self.ready: asyncio.Event | None = None
        self.stop: asyncio.Event | None = None

    @contextlib.asynccontextmanager
    async def running(self):
        self.open = True
        try:
            yield
        finally:
            self.open = False
            if self.side is not None:
                self.stop.set()
                with contextlib.suppress(Exception):
                    await self.side

    async def _serve(self) -> None:
        # the MCP SDK's imports (about a second) in a thread: the replica's loop answers the other requests meanwhile
        streamable, build_server = await asyncio.to_thread(_mcp_side)
        transport = httpx.ASGITransport(app=InProcess(self.app))  # admitted as the /mcp request it serves
        async with httpx.AsyncClient(transport=transport, base_url="http://palimpsest", timeout=None) as client:
            manager = streamable.StreamableHTTPSessionManager(build_server(client, _headers_of), json_response=True,
                                                              stateless=True)
            async with manager.run():
                self.handler = streamable.StreamableHTTPASGIApp(manager)
                self.ready.set()
                try:
                    await self.stop.wait()
                finally:
                    self.handler = None

    async def _start(self) -> str | None:
        """Start the MCP side unless a request did already, and wait until it runs; why not, if it could not."""
        if not self.open:
            return "the MCP endpoint is not running"
        if self.side is None or (self.side.done() and not self.ready.is_set()):  # never started, or failed to
            self.ready, self.stop = asyncio.Event(), asyncio.Event()
            self.side = asyncio.get_running_loop().create_task(self._serve())
        ready = asyncio.ensure_future(self.ready.wait())
        try:
            await asyncio.wait({ready, self.side}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ready.cancel()
        if self.handler is not None:
            return None
        failed = self.side.exception() if self.side.done() and not self.side.cancelled() else None
        return f"the MCP endpoint did not start ({type(failed).__name__}: {failed})" if failed else \
            "the MCP endpoint is not running"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        handler = self.handler
        if handler is None:  # not started yet (or the app is stopping)
            why = await self._start()
            handler = self.handler
            if why is not None or handler is None:
                exc = errors.ApiError(503, "starting", why or "the MCP endpoint is not running",
                                      [("store", "retry shortly")], {"Retry-After": "2"})
                await JSONResponse(errors.body(exc.code, exc.message, exc.problems), 503,
                                   exc.headers)(scope, receive, send)
                return
        await handler(scope, receive, send)


def _mcp_side():
    """The MCP SDK's streamable HTTP module and the tools' server builder (imported at the first MCP request)."""
    from mcp.server import streamable_http_manager

    from palimpsest.server.mcp_tools import build_server

    return streamable_http_manager, build_server


def mount(app: FastAPI) -> None:
    """Add ``/mcp`` to ``app``; the MCP side runs from the first MCP request until the app's lifespan ends."""
    endpoint = _Endpoint(app)
    app.router.routes.append(Route(PATH, endpoint=RequireKey(endpoint)))
    outer = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(a):
        async with outer(a) as state, endpoint.running():
            yield state

    app.router.lifespan_context = lifespan
