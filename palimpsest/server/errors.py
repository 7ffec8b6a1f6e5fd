"""Every error the HTTP API answers, as JSON that names the field and the fix; never a traceback.

Body: ``{"error": code, "message": text, "problems": [{"field", "fix"}]}``.
400 invalid input (``query_limit``: an audit query past its time, row or
memory limit), 401 no valid key, 403 not allowed for this key (or an audit
query reaching for a file or setting), 404 no
such user/memory/note for the key's tenant (whether or not another tenant
has one), 409 a concurrent write, 413 body too large, 429 rate limited
(with ``Retry-After``), 503 the store is unreachable. Anything else is a
500 whose body says only that it was logged, with a request id to find it.
"""

from __future__ import annotations

import uuid

import ray
import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from events.errors import (
    ConcurrencyError,
    EncoderError,
    InvalidInputError,
    PalimpsestError,
    QueryForbiddenError,
    QueryLimitError,
    ShardUnavailableError,
    StoreError,
)

log = structlog.get_logger("palimpsest.server")

# Problems the shards report about ids the caller's user does not have: to the caller, these ids do not exist.
_NOT_FOUND_MARKS = ("not memories of", "is no note", "matches no memory of this user", "is no memory, note or graph",
                    "is no adjustment of")


class ApiError(Exception):
    """An answer other than 200, raised by the routes and the checks in front of them."""

    def __init__(self, status: int, code: str, message: str, problems: list[tuple[str, str]] = (),
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.problems = list(problems)
        self.headers = headers or {}


def not_found(what: str, fix: str) -> ApiError:
    return ApiError(404, "not_found", f"{what} not found", [(what.split(" ")[0], fix)])


def body(code: str, message: str, problems=()) -> dict:
    return {"error": code, "message": message, "problems": [{"field": f, "fix": m} for f, m in problems]}


def _respond(status: int, code: str, message: str, problems=(), headers=None) -> JSONResponse:
    return JSONResponse(body(code, message, problems), status_code=status, headers=headers)


def _invalid_input(_: Request, exc: InvalidInputError) -> JSONResponse:
    if exc.problems and all(any(mark in m for mark in _NOT_FOUND_MARKS) for _, m in exc.problems):
        fixes = [(f, "no such id for this user of your tenant; ids come from search, list and add results")
                 for f, _ in exc.problems]
        return _respond(404, "not_found", f"{exc.what}: not found", fixes)
    if isinstance(exc, QueryForbiddenError):
        return _respond(403, "forbidden", f"{exc.what}: not allowed", exc.problems)
    if isinstance(exc, QueryLimitError):
        return _respond(400, "query_limit", f"{exc.what}: stopped at its limit", exc.problems)
    return _respond(400, "invalid_input", f"rejected {exc.what}; nothing was written", exc.problems)


def _request_validation(_: Request, exc: RequestValidationError) -> JSONResponse:
    problems = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
        given = repr(err.get("input"))[:60] if err.get("type") != "missing" else "nothing"
        fix = "remove it (the tenant comes from your API key)" if loc.endswith("tenant") else \
            "remove it" if err.get("type") == "extra_forbidden" else f"{err.get('msg')} (got {given})"
        problems.append((loc, fix))
    return _respond(400, "invalid_input", "rejected request; nothing was written", problems)


def _api_error(_: Request, exc: ApiError) -> JSONResponse:
    return _respond(exc.status, exc.code, exc.message, exc.problems, exc.headers)


def _http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
    fix = "see the API under /docs" if exc.status_code in (404, 405) else str(exc.detail)
    return _respond(exc.status_code, "http_error", str(exc.detail), [("path", fix)])


def _unavailable(_: Request, exc: Exception) -> JSONResponse:
    log.warning("store_unavailable", error=str(exc).splitlines()[-1] if str(exc) else type(exc).__name__)
    return _respond(503, "unavailable", "the store is not reachable right now; retry shortly",
                    [("store", "a shard is restarting or the server is shutting down")], {"Retry-After": "2"})


def _palimpsest(_: Request, exc: PalimpsestError) -> JSONResponse:
    if isinstance(exc, ConcurrencyError):
        return _respond(409, "conflict", str(exc), [("request", "a concurrent write took the same place; retry")])
    if isinstance(exc, (StoreError, ShardUnavailableError)):
        return _unavailable(_, exc)
    if isinstance(exc, EncoderError):  # the store's encoder (a remote endpoint) failed: nothing was written
        return _respond(502, "encoder_unavailable", str(exc).splitlines()[0],
                        [("encoder", "the store's text encoder could not embed; retry, or check its endpoint")],
                        {"Retry-After": "5"})
    return _respond(400, "rejected", str(exc).splitlines()[0], [("request", str(exc))])


def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    request_id = uuid.uuid4().hex[:12]
    log.error("unexpected_error", request_id=request_id, path=request.url.path, exc_info=exc)
    return _respond(500, "internal", f"unexpected server error (logged as request {request_id})",
                    [("request", "report it with the request id; nothing acknowledged was lost")])


def install(app: FastAPI) -> None:
    app.add_exception_handler(InvalidInputError, _invalid_input)
    app.add_exception_handler(RequestValidationError, _request_validation)
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(ray.exceptions.RayActorError, _unavailable)
    app.add_exception_handler(ray.exceptions.GetTimeoutError, _unavailable)
    app.add_exception_handler(PalimpsestError, _palimpsest)
    app.add_exception_handler(Exception, _unexpected)
