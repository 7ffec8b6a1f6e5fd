"""Answers of the JSON routes: encoded once, in the thread that ran the route, by pydantic-core.

A FastAPI route that returns a plain ``dict`` is answered in three steps:
the dict is validated against its return annotation (for a synchronous
route, in another trip through the thread pool), serialised, then sent.
The routes here build their answers from the store's own frozen results,
so there is nothing left to validate: :class:`JsonRoute` makes each route
return a ready :class:`JsonAnswer` instead (the route's declared return type
still documents it in the OpenAPI schema). On a 2-core machine the saved
thread hop and encoding are a noticeable part of a served search.
"""

from __future__ import annotations

import functools
import inspect

from fastapi.encoders import jsonable_encoder
from fastapi.routing import APIRoute
from pydantic_core import PydanticSerializationError, to_json
from starlette.responses import JSONResponse, Response


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
    def run(*args, **kwargs):
        return answer(endpoint(*args, **kwargs))

    return run


class JsonRoute(APIRoute):
    """A route whose endpoint's result is encoded where it ran (``APIRouter(route_class=JsonRoute)``)."""

    def __init__(self, path: str, endpoint, **kwargs) -> None:
        super().__init__(path, _answering(endpoint), **kwargs)
