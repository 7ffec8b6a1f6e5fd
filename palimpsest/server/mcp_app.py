"""``/mcp``: the MCP tools over streamable HTTP, mounted on the served FastAPI app.

Stateless and answering in JSON (no session to pin to a replica), so any
replica answers any request. Every request needs the same
``Authorization: Bearer KEY`` as the HTTP API, checked before the MCP layer
sees it (401 otherwise); each tool call is then the HTTP request of the same
operation, sent in-process to this app with that header
(:mod:`palimpsest.server.mcp_tools`), so it passes the same key, rate and
tenant checks and the same routes.
"""

from __future__ import annotations

import contextlib

import httpx
from fastapi import FastAPI
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from palimpsest.server import access, errors
from palimpsest.server.admission_http import InProcess
from palimpsest.server.mcp_tools import build_server

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
    """The MCP ASGI app, built when the app starts in its replica (an HTTP client and the session
    manager's task group cannot be pickled with the app that Ray Serve ships to the replica)."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app
        self.handler: ASGIApp | None = None

    @contextlib.asynccontextmanager
    async def running(self):
        transport = httpx.ASGITransport(app=InProcess(self.app))  # admitted as the /mcp request it serves
        async with httpx.AsyncClient(transport=transport, base_url="http://palimpsest", timeout=None) as client:
            manager = StreamableHTTPSessionManager(build_server(client, _headers_of), json_response=True,
                                                   stateless=True)
            async with manager.run():
                self.handler = StreamableHTTPASGIApp(manager)
                try:
                    yield
                finally:
                    self.handler = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.handler is None:
            exc = errors.ApiError(503, "starting", "the MCP endpoint is not running", [("store", "retry shortly")],
                                  {"Retry-After": "2"})
            await JSONResponse(errors.body(exc.code, exc.message, exc.problems), 503, exc.headers)(scope, receive, send)
            return
        await self.handler(scope, receive, send)


def mount(app: FastAPI) -> None:
    """Add ``/mcp`` to ``app``; the MCP side runs for the app's lifetime (its lifespan)."""
    endpoint = _Endpoint(app)
    app.router.routes.append(Route(PATH, endpoint=RequireKey(endpoint)))
    outer = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(a):
        async with outer(a) as state, endpoint.running():
            yield state

    app.router.lifespan_context = lifespan
