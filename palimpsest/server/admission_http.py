"""Admission at the HTTP entry of a replica: each request classed (read, write, proxy), admitted or refused 503.

:class:`AdmissionMiddleware` is the app's outermost layer but one (the body
cap is outside it), so it holds for direct ingress and behind Ray Serve's
proxy alike, before any body is parsed or any thread is taken. A request's
tenant is its key's (a request without a valid key is let through to be
answered 401 by the route, and costs no slot); the verified key is left in
the scope for the route's own check (:func:`palimpsest.server.access.caller`).

``/mcp`` is admitted by what the JSON-RPC call does: a tool that writes
(``add_memory``, ``create_memory``, ...) as a write, anything else as a read.
Its tool call then runs as an in-process request to the same app
(:mod:`palimpsest.server.mcp_app`), marked by :class:`InProcess` as already
admitted. ``/health``, the API docs and the inspector's static pages are
never held back.

A refusal is answered at once: 503, the API's error body (``overloaded``,
naming the class and what to do) and ``Retry-After``.

Under direct ingress the same admission runs one layer further out: Ray
Serve's HTTP server in the replica wraps its own per-request work (request
ids, metrics, route matching, a task watching for the client's disconnect)
around the app, costing more than a refusal itself. :class:`EntryAdmission`,
installed in that server by Serve's HTTP callback hook
(``RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH``, see
:mod:`palimpsest.server.ingress`), admits with the replica's gates (made
known for the app's lifetime by :func:`at_entry`) before any of it, and marks
the request admitted so the app's own layer lets it through; in any other
process (Serve's proxy) it lets every request through. Further out still, the
direct replica's HTTP protocol (:mod:`palimpsest.server.entry_protocol`) asks
:func:`refused_at_entry` once a request's headers are parsed, and answers a
request refused there without starting it.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import re
import time

from starlette.responses import JSONResponse

from events.errors import InvalidInputError
from palimpsest.operation import READ as READ_OP
from palimpsest import phases
from palimpsest.operations import OPERATIONS
from palimpsest.server import access, errors
from palimpsest.server.admission import PROXY, READ, WRITE, Admission, Overloaded

ADMITTED = "palimpsest.admitted"  # scope key of a request already admitted (an MCP tool's in-process call)
KEY = "palimpsest.key"  # scope key of the (Authorization header, verified key) the entry checked
PHASES = "palimpsest.phases"  # scope key of the request's phases (palimpsest.phases.Phases), timed as it runs
WAIT_HEADER = b"x-palimpsest-wait-ms"  # a client's own, shorter, budget for the wait for a slot
_entry: Admission | None = None  # this process's replica gates, at its HTTP server's entry (direct ingress)
_EXEMPT = ("/health", "/docs", "/redoc", "/openapi.json", "/ui")
# POST routes that only read (the others write): hand-written ones, and the declared read operations sent as POST
_READ_POSTS = ["/v1/users/{user_id}/search", "/v1/users/{user_id}/context", "/v1/users/{user_id}/tools/search_memories",
               "/v1/audit/sql", "/v1/counterfactual"]
_READ_POSTS += [path for op in OPERATIONS.values() if op.kind == READ_OP and op.http.method == "POST"
                for path, _, _ in op.routes()]
_INGEST = re.compile("^/v1/users/([^/]+)/messages$")  # a user's ingest: written with its user's other ingests
_READ_POST = re.compile("|".join("^" + re.sub(r"\\\{[a-z_]+\\\}", "[^/]+", re.escape(p)) + "$" for p in _READ_POSTS))


def request_class(method: str, path: str) -> str | None:
    """The admission class of an HTTP request; None for what is never held back (health, docs, static pages)."""
    if path == "/" or path.startswith(_EXEMPT):
        return None
    if path in ("/v1/chat/completions", "/v1/responses"):
        return PROXY
    if method in ("GET", "HEAD", "OPTIONS") or _READ_POST.match(path):
        return READ
    return WRITE


def write_group(method: str, path: str, tenant: str):
    """The slot group of a request (:class:`palimpsest.server.admission.Gate`): a tenant's ingests for one user
    share a write slot (the server writes them to the user's shard as one batch); None for any other request."""
    found = _INGEST.match(path) if method == "POST" else None
    return ("ingest", tenant, found.group(1)) if found else None


_mcp_tools_loaded = False  # this process has imported the MCP tools (classify_mcp)


async def classify_mcp(body: bytes) -> str:
    """:func:`mcp_class`, the first calls importing the MCP tools (the MCP SDK: a third of a second or more of CPU) in
    a thread, not on the replica's loop, which answers the other requests meanwhile."""
    global _mcp_tools_loaded
    if not _mcp_tools_loaded:  # a call arriving meanwhile waits for the same import in a thread of its own
        await asyncio.to_thread(importlib.import_module, "palimpsest.server.mcp_tools")
        _mcp_tools_loaded = True
    return mcp_class(body)


def mcp_class(body: bytes) -> str:
    """The class of an ``/mcp`` call: a write when a tool it calls writes, else a read (listing tools, searching)."""
    from palimpsest.server.mcp_tools import TOOLS

    try:
        calls = json.loads(body)
    except ValueError:
        return READ  # answered as a JSON-RPC parse error, no work
    for call in calls if isinstance(calls, list) else [calls]:
        params = call.get("params") if isinstance(call, dict) and call.get("method") == "tools/call" else None
        tool = TOOLS.get(params.get("name")) if isinstance(params, dict) else None
        if tool is None:
            continue
        args = {k: v for k, v in (params.get("arguments") or {}).items() if k != "user_id"}
        try:
            method, path, _, _ = tool.request("/v1/users/u", args)
        except (InvalidInputError, TypeError, ValueError, AttributeError):  # refused by the tool itself: no work
            continue
        if request_class(method, path) == WRITE:
            return WRITE
    return READ


def overloaded(exc: Overloaded) -> JSONResponse:
    """The refusal: 503 with Retry-After and the API's error body (OpenAI's shape for the memory proxy's route)."""
    what = {READ: "reads", WRITE: "writes", PROXY: "memory-proxy calls"}[exc.klass]
    body = errors.body("overloaded", f"the server is at capacity for {what} ({exc.reason}); nothing was done",
                       [("request", f"retry after {exc.retry_after_s} s (Retry-After); the server refuses work past "
                                    "its capacity instead of queueing it")])
    response = JSONResponse(body, status_code=503, headers={"Retry-After": str(exc.retry_after_s)})
    if exc.klass == PROXY:
        from palimpsest.server.routes_proxy import _openai_shaped  # its clients read errors in OpenAI's shape

        return _openai_shaped(response)
    return response


def _tenant(scope) -> str | None:
    """The tenant of the request's key, the verified key left in the scope; None without a valid key."""
    header = next((v for k, v in scope["headers"] if k == b"authorization"), b"").decode("latin-1")
    checked = scope.get(KEY)
    if checked is not None and checked[0] == header:  # verified by the entry protocol a moment ago
        return checked[1].tenant
    try:
        key = access.verified(header)
    except errors.ApiError:
        return None
    scope[KEY] = (header, key)
    return key.tenant


def _asked_ms(scope) -> float | None:
    raw = next((v for k, v in scope["headers"] if k == WAIT_HEADER), None)
    try:
        return float(raw) if raw is not None else None
    except ValueError:
        return None


async def admit(admission: Admission, app, scope, receive, send) -> None:
    """Classify, admit (or refuse 503), run the request, give its slot back when it is answered. The answer says
    where the request's time went: ``Server-Timing`` (:mod:`palimpsest.phases`)."""
    if scope["type"] != "http":
        return await app(scope, receive, send)
    if scope.get(ADMITTED):  # admitted further out (the replica's entry, an MCP tool's call): timed into its record
        token = phases.use(scope.get(PHASES))
        try:
            return await app(scope, receive, send)
        finally:
            phases.reset(token)
    scope[ADMITTED] = True  # decided here: a layer further in lets it through
    klass = request_class(scope["method"], scope["path"])
    if klass is None:
        return await app(scope, receive, send)
    arrived = time.perf_counter()
    if not admission.settings.timing:  # no record: nothing is timed, nothing told
        return await _admitted(admission, klass, app, scope, receive, send, arrived)
    timing = scope[PHASES] = phases.Phases()
    token = phases.use(timing)
    try:
        await _admitted(admission, klass, app, scope, receive, _timing_sent(send, timing, arrived), arrived)
    finally:
        phases.reset(token)


async def _admitted(admission: Admission, klass: str, app, scope, receive, send, arrived: float) -> None:
    if not admission.settings.enabled:
        return await app(scope, receive, send)
    if scope["path"] == "/mcp" and scope["method"] == "POST":
        messages = await _read_body(receive)
        klass = await classify_mcp(b"".join(m.get("body", b"") for m in messages))
        receive = _replay(messages, receive)
    tenant = _tenant(scope)
    if tenant is None:  # answered 401 by the route, no work
        return await app(scope, receive, send)
    try:
        group = write_group(scope["method"], scope["path"], tenant)
        slot = await admission.enter(klass, tenant, _asked_ms(scope), group)
    except Overloaded as exc:
        return await overloaded(exc)(scope, receive, send)
    phases.add("admit", (time.perf_counter() - arrived) * 1000)
    held = [slot]

    def give_back() -> None:
        if held:
            admission.leave(klass, held.pop())

    async def answered(message) -> None:
        await send(message)
        # the slot is free once the client has the whole answer: what the app does after it (Serve's bookkeeping)
        # must not make the client's next request wait for, or be refused for, a slot its last one still holds
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            give_back()

    try:
        await app(scope, receive, answered)
    finally:
        give_back()


def _timing_sent(send, timing: phases.Phases, arrived: float):
    """``send`` with the request's phases, and its total so far, as a ``Server-Timing`` header on the answer."""
    async def timed_send(message) -> None:
        if message["type"] == "http.response.start":
            value = timing.header(total=(time.perf_counter() - arrived) * 1000).encode("latin-1")
            message = {**message, "headers": [*message.get("headers", ()), (b"server-timing", value)]}
        await send(message)

    return timed_send


class AdmissionMiddleware:
    """The app's admission layer (plain ASGI): :func:`admit` with the replica's gates."""

    def __init__(self, app, admission: Admission) -> None:
        self.app, self.admission = app, admission

    async def __call__(self, scope, receive, send) -> None:
        await admit(self.admission, self.app, scope, receive, send)


class EntryAdmission:
    """The same admission at the entry of Ray Serve's HTTP server in a replica, before Serve's own per-request
    work; every request let through where no replica's gates are known (:func:`at_entry`)."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if _entry is None:
            return await self.app(scope, receive, send)
        await admit(_entry, self.app, scope, receive, send)


def refused_at_entry(scope) -> JSONResponse | None:
    """The refusal a request meets at this process's HTTP entry from its headers alone, before any task, middleware
    or body is spent on it (:mod:`palimpsest.server.entry_protocol`); None: it goes on to :func:`admit`, which
    decides again (a slot may have freed meanwhile). Not for ``/mcp`` (its class is in its body) or ``HEAD``."""
    admission = _entry
    if admission is None or not admission.settings.enabled or scope["type"] != "http" or scope["method"] == "HEAD":
        return None
    klass = request_class(scope["method"], scope["path"])
    if klass is None or scope["path"] == "/mcp":
        return None
    tenant = _tenant(scope)
    if tenant is None:  # answered 401 by the route
        return None
    refused = admission.refusal(klass, tenant, _asked_ms(scope))
    if refused is None:
        return None
    response = overloaded(refused)
    if admission.settings.timing:
        response.headers["server-timing"] = phases.Phases().header(total=0.0)
    return response


def entry_middlewares() -> list:
    """Ray Serve's HTTP callback (``RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH``): the middlewares its HTTP
    servers put outermost."""
    from starlette.middleware import Middleware

    return [Middleware(EntryAdmission)]


@contextlib.contextmanager
def at_entry(admission: Admission):
    """While it lasts (a served app's lifespan), this process's HTTP entry admits with ``admission``."""
    global _entry
    _entry = admission
    try:
        yield
    finally:
        if _entry is admission:
            _entry = None


class InProcess:
    """An app as seen by an in-process caller whose request was admitted already (the MCP tool calls)."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        await self.app({**scope, ADMITTED: True}, receive, send)


async def _read_body(receive) -> list[dict]:
    messages = []
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request" or not message.get("more_body", False):
            return messages


def _replay(messages: list[dict], receive):
    async def replay():
        return messages.pop(0) if messages else await receive()

    return replay
