"""Answers of the JSON routes: encoded once, in the thread that ran the route, by pydantic-core.

A FastAPI route that returns a plain ``dict`` is answered in three steps:
the dict is validated against its return annotation (for a synchronous
route, in another trip through the thread pool), serialised, then sent.
The routes here build their answers from the store's own frozen results,
so there is nothing left to validate: :class:`JsonRoute` makes each route
return a ready :class:`JsonAnswer` instead (the route's declared return type
still documents it in the OpenAPI schema). On a 2-core machine the saved
thread hop and encoding are a noticeable part of a served search.

A synchronous route runs on the server's kept worker threads
(:func:`palimpsest.server.threads.in_thread`) rather than FastAPI's thread
pool, whose threads under Ray Serve live only as long as the request.
"""

from __future__ import annotations

import functools
import inspect

from fastapi.encoders import jsonable_encoder
from fastapi.routing import APIRoute
from pydantic_core import PydanticSerializationError, to_json
from starlette.responses import JSONResponse, Response

from palimpsest.server.threads import in_thread


class JsonAnswer(JSONResponse):
    def render(self, content) -> bytes:
        try:
            return to_json(content, inf_nan_mode="null")  # as FastAPI's own response serialiser writes NaN
        except PydanticSerializationError:  # a type pydantic-core does not know: FastAPI's generic encoder
            return to_json(jsonable_encoder(content), inf_nan_mode="null")


def answer(value):
    """``value`` as a response: a response as it is, anything else as JSON."""
    return value if isinstance(value, Response) else JsonAnswer(value)


def _answering(endpoint):
    if inspect.iscoroutinefunction(endpoint):
        @functools.wraps(endpoint)
        async def run_async(*args, **kwargs):
            return answer(await endpoint(*args, **kwargs))

        return run_async

    @functools.wraps(endpoint)  # FastAPI reads the wrapped signature: parameters and dependencies are unchanged
    async def run(*args, **kwargs):  # on a kept worker thread, not anyio's (palimpsest.server.threads)
        return await in_thread(_answered, endpoint, *args, **kwargs)

    return run


def _answered(endpoint, *args, **kwargs):
    return answer(endpoint(*args, **kwargs))


class JsonRoute(APIRoute):
    """A route whose endpoint's result is encoded where it ran (``APIRouter(route_class=JsonRoute)``)."""

    def __init__(self, path: str, endpoint, **kwargs) -> None:
        super().__init__(path, _answering(endpoint), **kwargs)
