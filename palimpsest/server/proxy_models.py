"""``GET /v1/models`` and ``GET /v1/models/{model}`` on the memory proxy: the configured upstream's answer, as it
came. Chat clients and frameworks pointed at the proxy list the models to offer before their first chat; the
list is the upstream's (nothing of the memory is read or recorded). The caller needs a key of this server, as for
a chat; the upstream is asked with its own key. Errors are OpenAI-shaped (the upstream's passed through)."""

from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import Response

from palimpsest.server import proxy_upstream as up
from palimpsest.server.access import caller
from palimpsest.server.routes_proxy import OpenAIErrors, no_upstream, passed

router = APIRouter(prefix="/v1", tags=["openai"], route_class=OpenAIErrors)


@router.get("/models", summary="The upstream LLM's models (the memory proxy's upstream, as it answers)")
async def models(request: Request) -> Response:
    return await _forwarded(request, "/models")


@router.get("/models/{model:path}", summary="One of the upstream LLM's models (as the upstream answers)")
async def model(request: Request, model: str) -> Response:
    return await _forwarded(request, "/models/" + quote(model, safe=""))


async def _forwarded(request: Request, path: str) -> Response:
    who = await caller(request)
    upstream = who.served.settings.upstream
    if upstream is None:
        raise no_upstream(path[1:])
    answer = await up.fetch(upstream, path)
    content = up.error_body(answer.status_code, answer.content) if answer.status_code >= 400 else answer.content
    return Response(content, status_code=answer.status_code, headers=passed(answer, {}),
                    media_type=answer.headers.get("content-type", "application/json"))
