"""``POST /v1/chat/completions`` and ``POST /v1/responses``: the OpenAI-compatible memory proxy. Point an OpenAI
client's ``base_url`` at the server (``http://HOST:PORT/v1``, the Palimpsest key as its ``api_key``) and every chat
gets the user's memory.

For each request: the tenant is the key's; the user is the ``X-Palimpsest-User`` header or the request's ``user``
field; the conversation is the ``X-Palimpsest-Conversation`` header (else, for a response, the request's
``conversation``; else one named after the chat's first user message, so a chat client resending its history stays
in one conversation). The user's context for the last user turn (the same token-budgeted context as ``/context``)
goes in as a system message after the request's own leading system messages (a chat completion) or after the
request's own instructions (a response, :mod:`palimpsest.server.proxy_responses`), and the request goes on to the
same path of the configured upstream (:mod:`palimpsest.server.proxy_upstream`), streamed or not; its answer comes
back as it is.

Once the upstream has answered in full, the proxy records (:mod:`palimpsest.server.proxy_record`) the user turn and
the reply, the reply with the memories it was given (as ``reply`` does: the usage judge reinforces those it drew
on), and, when the request continues a reply the proxy gave, the user's turn as feedback on it (as the Feedback
Judge does). A user's next call reads the memory once those are written, unless it holds the latest call's turn
itself (the same conversation continued: :meth:`~palimpsest.server.proxy_record.Turn.carried_by`). A failed call
records nothing. Errors, the proxy's own and the upstream's, are OpenAI-style: ``{"error": {"message", "type",
"param", "code"}}`` with the status (the proxy's also list the ``problems``, each a field and its fix).
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from fastapi.routing import APIRoute
from starlette.background import BackgroundTask

from events.commands import MAX_ID_CHARS, canonical_id, id_problem
from palimpsest.phases import timed
from palimpsest.server import proxy_responses
from palimpsest.server import proxy_upstream as up
from palimpsest.server.access import Caller, caller
from palimpsest.server.errors import ApiError
from palimpsest.server.proxy_record import Asked, Turn, opening, recorder
from palimpsest.server.threads import in_thread

USER_HEADER = "X-Palimpsest-User"
CONVERSATION_HEADER = "X-Palimpsest-Conversation"
MEMORIES_HEADER = "X-Palimpsest-Memories"  # on the answer: how many memories the request was given
# the answer's ``Server-Timing`` (palimpsest.phases) has the proxy's own phases too: the wait for the user's earlier
# recordings (settle), reading the memory (memory) and the upstream until its answer began (upstream)
CONTEXT_HEADER = "What you remember about this user from earlier conversations (use it if it helps):\n"
_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
          404: "not_found_error", 413: "invalid_request_error", 429: "rate_limit_error"}
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")  # the JSON escape of a UTF-16 surrogate (half of a pair, or lone)
PATHS = ("/v1/chat/completions", "/v1/responses")  # the proxy's own paths (errors there are OpenAI-shaped)
# OpenAI API paths the proxy does not serve: a client sharing its base URL with the proxy is told so in OpenAI's shape
UNSERVED = ("/v1/embeddings", "/v1/completions", "/v1/moderations", "/v1/audio", "/v1/images", "/v1/files",
            "/v1/batches", "/v1/fine_tuning", "/v1/assistants", "/v1/threads", "/v1/vector_stores", "/v1/uploads")


class OpenAIErrors(APIRoute):
    """A route that answers every error in OpenAI's shape: the API's own answer (its code, message and problems,
    from the handlers of :mod:`palimpsest.server.errors`) reshaped, so OpenAI clients raise it with its message."""

    def get_route_handler(self):
        handler = super().get_route_handler()

        async def answer(request: Request) -> Response:
            try:
                return await handler(request)
            except Exception as exc:  # noqa: BLE001 - every error is answered, by the handler the app has for it
                return _openai_shaped(await _answer_of(request, exc))

        return answer


async def _answer_of(request: Request, exc: Exception) -> Response:
    handlers = request.app.exception_handlers
    handler = next((handlers[k] for k in type(exc).__mro__ if k in handlers), handlers[Exception])
    response = handler(request, exc)
    return await response if hasattr(response, "__await__") else response


def _openai_shaped(response: Response) -> Response:
    try:
        ours = json.loads(response.body)
    except (AttributeError, ValueError):
        return response
    headers = {k: v for k, v in response.headers.items() if k in ("retry-after", "www-authenticate")}
    return JSONResponse(openai_error(response.status_code, ours), status_code=response.status_code, headers=headers)


def openai_http_errors(app) -> None:
    """Answer a wrong method on the proxy's paths (``GET /v1/chat/completions``: 405) and an OpenAI path it does not
    serve (``/v1/embeddings``: 404, naming what it serves) in OpenAI's shape; other paths keep the API's own."""
    from starlette.exceptions import HTTPException

    handler = app.exception_handlers[HTTPException]

    async def answer(request: Request, exc: HTTPException) -> Response:
        path = request.url.path
        if path in PATHS or path.startswith("/v1/models"):
            return _openai_shaped(handler(request, exc))
        if exc.status_code == 404 and path.startswith(UNSERVED):
            return JSONResponse(openai_error(404, {
                "error": "not_served", "message": f"the memory proxy does not serve {path}",
                "problems": [{"field": "path", "fix": "it serves /v1/chat/completions, /v1/responses and /v1/models; "
                                                      "call the others on the model's own endpoint"}]}),
                status_code=404)
        return handler(request, exc)

    app.add_exception_handler(HTTPException, answer)


def openai_error(status: int, ours: dict) -> dict:
    """The API's own error body (``error``, ``message``, ``problems``) in OpenAI's shape, its problems kept."""
    problems = ours.get("problems") or []
    fixes = "; ".join(f"{p['field']}: {p['fix']}" for p in problems)
    return {"error": {"message": ours.get("message", "") + (f" ({fixes})" if fixes else ""),
                      "type": _TYPES.get(status, "api_error"), "param": problems[0]["field"] if problems else None,
                      "code": ours.get("error"), "problems": problems}}


@dataclass(frozen=True)
class Form:
    """An OpenAI API form the proxy speaks: its path (the proxy's and the upstream's, under ``/v1``), what it reads
    of a request, where the context goes, the reply of an answer ((text, response id); None: no reply, nothing
    recorded), a reader of a streamed answer (``feed``, ``finished``, ``reply``) and the event ending a stream cut
    short."""

    path: str
    read: Callable[[dict], Asked]
    with_context: Callable[[dict, str | None], dict]
    reply: Callable[[bytes], tuple[str, str] | None]
    streamed: Callable[[], object]
    stream_error: Callable[[str], bytes]


router = APIRouter(prefix="/v1", tags=["openai"], route_class=OpenAIErrors)


@router.post("/chat/completions", summary="OpenAI-compatible chat completions with the user's memory (a proxy to "
                                          "the configured LLM; the user from X-Palimpsest-User or `user`)")
async def chat_completions(request: Request) -> Response:
    return await _proxied(request, CHAT)


@router.post("/responses", summary="OpenAI-compatible responses with the user's memory (a proxy to the configured "
                                   "LLM; the user from X-Palimpsest-User or `user`)")
async def responses(request: Request) -> Response:
    return await _proxied(request, RESPONSES)


async def _proxied(request: Request, form: Form) -> Response:
    who = await caller(request)
    upstream = who.served.settings.upstream
    if upstream is None:
        raise no_upstream(form.path[1:])
    body = await _body(request)
    asked = form.read(body)
    user_id = _user(request, body)
    conversation_id = _conversation(request, asked)
    stream = _stream(body)
    turn = Turn(who.tenant, user_id, conversation_id, asked.user_text, asked.prior_reply, datetime.now(UTC),
                prior_response_id=asked.prior_response_id)
    with timed("settle"):
        # the user's earlier calls recorded before the read (but the latest when this request holds its turn)
        await recorder(who.memory).settled(turn.stream, lambda pending: pending.carried_by(turn, asked))
    context = None
    with timed("memory"):
        if asked.query.strip() and who.knows(who.tenant, user_id):
            context = await in_thread(who.memory.build_context, who.tenant, user_id, asked.query,
                                      token_budget=upstream.context_tokens)
            context = context if context.items else None
        forwarded = form.with_context(body, CONTEXT_HEADER + context.text if context else None)
    with timed("upstream"):
        answer = await up.send(upstream, forwarded, stream=stream, path=form.path)
    headers = passed(answer, {MEMORIES_HEADER: str(len(context.items) if context else 0),
                               CONVERSATION_HEADER: header_value(conversation_id)})
    if answer.status_code >= 400:
        raw = await answer.read() if stream else answer.content
        await answer.close()
        return Response(up.error_body(answer.status_code, raw), status_code=answer.status_code,
                        media_type="application/json", headers=headers)
    sent = BackgroundTask(_answered, who)  # the recording starts once the answer has gone
    if not stream:
        response = Response(answer.content, status_code=answer.status_code, headers=headers,
                            media_type=answer.headers.get("content-type", "application/json"), background=sent)
        reply = form.reply(answer.content)
        if reply is not None:
            _record(who, turn, *reply, context)
        return response
    return StreamingResponse(_relay(who, turn, answer, context, form), status_code=answer.status_code,
                             headers=headers, media_type=answer.headers.get("content-type", "text/event-stream"),
                             background=sent)


def no_upstream(what: str) -> ApiError:
    """The answer (503) of a server started without an upstream LLM to forward ``what`` to."""
    return ApiError(503, "no_upstream", f"this server has no upstream LLM to forward {what} to",
                    [("server", f"start `palimpsest serve` with {up.ENV_URL} (and {up.ENV_API_KEY}) set to an "
                                "OpenAI-compatible endpoint")])


async def _answered(who: Caller) -> None:
    recorder(who.memory).start()


async def _relay(who: Caller, turn: Turn, answer: up.Answer, context, form: Form):
    """The upstream's events as they come; recorded once the upstream has answered in full."""
    reply = form.streamed()
    try:
        async for chunk in answer.chunks():
            reply.feed(chunk)
            yield chunk
    except up.STREAM_ERRORS as exc:
        yield form.stream_error(f"the upstream LLM ended the stream early ({type(exc).__name__}); nothing was "
                                "recorded, retry the request")
        return
    finally:
        await answer.close()
    if reply.finished:
        _record(who, turn, *reply.reply, context)


def _record(who: Caller, turn: Turn, reply: str, response_id: str, context) -> None:
    if turn.user_text.strip() or reply.strip():
        recorder(who.memory).record(turn.finished(reply, context, response_id))


def passed(answer: up.Answer, ours: dict[str, str]) -> dict[str, str]:
    """The upstream's own headers worth passing on (request ids, rate limits), then ours."""
    kept = {k: v for k, v in answer.headers.items()
            if k.startswith(("x-request-id", "openai-", "x-ratelimit-")) or k == "retry-after"}
    return {**kept, **ours}


async def _body(request: Request) -> dict:
    raw = await request.body()
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        nested = isinstance(exc, RecursionError)
        raise ApiError(400, "invalid_json", "the request body is not JSON" + (" this server reads (nested too "
                                                                               "deeply)" if nested else ""),
                       [("body", "send the request as JSON (a chat completion's model, messages, ...; a "
                                 "response's model, input, ...)")]) from None
    if not isinstance(body, dict):
        raise ApiError(400, "invalid_input", "the request body is not a JSON object",
                       [("body", "send a request object (a chat completion's model, messages, ...; a response's "
                                 "model, input, ...)")])
    # a lone surrogate (an unpaired \ud800-\udfff escape) is valid JSON but no text: it can be neither forwarded as
    # UTF-8 nor recorded. Only such an escape makes one (a body without any is not serialised again to look)
    try:
        if _SURROGATE_ESCAPE.search(raw):
            json.dumps(body, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ApiError(400, "invalid_json", f"the request body holds a lone surrogate ({exc.object[exc.start]!r}), "
                                            "which is no character",
                       [("body", "escape characters outside the Basic Multilingual Plane as a surrogate pair "
                                 "(\\ud83d\\ude00), or send them as UTF-8")]) from None
    return body


def _stream(body: dict) -> bool:
    given = body.get("stream")
    if given is not None and not isinstance(given, bool):
        raise ApiError(400, "invalid_input", f"stream is {given!r}, not a boolean",
                       [("stream", "give true (server-sent events) or false (one answer)")])
    return bool(given)


def _header(request: Request, name: str) -> str | None:
    """A header's value as the client wrote it: read as UTF-8 (HTTP hands its bytes over as Latin-1)."""
    given = request.headers.get(name)
    if given is None:
        return None
    try:
        return given.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return given


def header_value(text: str) -> str:
    """``text`` as a header's value: as it is when it is printable ASCII, else percent-encoded (UTF-8)."""
    return text if text.isascii() and text.isprintable() else quote(text, safe="")


def _user(request: Request, body: dict) -> str:
    given = _header(request, USER_HEADER) or body.get("user")
    if given is None or given == "":
        raise ApiError(400, "missing_user", f"no user: send the {USER_HEADER} header or the request's `user` field",
                       [(USER_HEADER, f"name the end user whose memory this chat uses, e.g. "
                                      f"default_headers={{'{USER_HEADER}': 'alice'}} on the OpenAI client, or "
                                      "user='alice' in the request")])
    user_id = canonical_id(given)
    problem = id_problem(user_id)
    if problem:
        field = USER_HEADER if _header(request, USER_HEADER) else "user"
        raise ApiError(400, "invalid_user", f"the user id {str(given)[:60]!r} is not valid: {problem}",
                       [(field, "give the end user's id: letters, digits and . _ - @ : (see the user ids guide)")])
    return user_id


def _conversation(request: Request, asked: Asked) -> str:
    given, field = _header(request, CONVERSATION_HEADER), CONVERSATION_HEADER
    if not given:
        given, field = asked.conversation, "conversation"
    if given:
        if not isinstance(given, str) or len(given) > MAX_ID_CHARS or \
                any(unicodedata.category(ch).startswith("C") for ch in given):
            raise ApiError(400, "invalid_input", f"the {field} is not a conversation id",
                           [(field, f"a text of at most {MAX_ID_CHARS} characters, without control characters")])
        return given
    return "chat-" + hashlib.sha256(asked.opening.encode("utf-8")).hexdigest()[:16]


def _text(message: dict) -> str:
    return up.content_text(message.get("content"))


def _read_chat(body: dict) -> Asked:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
        raise ApiError(400, "invalid_input", "the request's messages are not a non-empty list of message objects",
                       [("messages", "give a non-empty list of messages, each {'role': ..., 'content': ...}")])
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    query = _text(messages[users[-1]]) if users else ""
    return Asked(query, query if users and users[-1] == len(messages) - 1 else "", _prior_reply(messages, users),
                 _text(messages[users[0]]) if users else opening(messages[0]))


def _prior_reply(messages: list[dict], users: list[int]) -> str:
    """The assistant's text right before the last user turn (the reply that turn answers), or ""."""
    if not users or users[-1] == 0:
        return ""
    before = messages[users[-1] - 1]
    return _text(before) if before.get("role") == "assistant" else ""


def _with_context(messages: list[dict], context) -> list[dict]:
    """``messages`` with the context as a system message after their leading system (and developer) messages."""
    return _with_messages(messages, CONTEXT_HEADER + context.text if context is not None else None)


def _with_messages(messages: list[dict], context_text: str | None) -> list[dict]:
    if not context_text:
        return messages
    at = next((i for i, m in enumerate(messages) if m.get("role") not in ("system", "developer")), len(messages))
    return [*messages[:at], {"role": "system", "content": context_text}, *messages[at:]]


def _chat_reply(raw: bytes) -> tuple[str, str] | None:
    """The reply of a chat completion (its text, no id); None when the answer is no chat completion (nothing is
    recorded for it)."""
    try:
        answer = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(answer, dict) or not isinstance(answer.get("choices"), list):
        return None
    return up.reply_text(raw), ""


CHAT = Form(up.CHAT_PATH, _read_chat, lambda body, text: {**body, "messages": _with_messages(body["messages"], text)},
            _chat_reply, up.StreamedReply, up.stream_error)
RESPONSES = Form(proxy_responses.PATH, proxy_responses.read, proxy_responses.with_context, proxy_responses.reply,
                 proxy_responses.StreamedResponse, proxy_responses.stream_error)
