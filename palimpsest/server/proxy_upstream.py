"""The memory proxy's upstream: the OpenAI-compatible endpoint it forwards to (chat completions, responses, the
model list), read from the environment, and the calls to it.

The environment, first match wins (as for the memory's own model, :mod:`actors.llm.config`):

- ``PALIMPSEST_PROXY_UPSTREAM_URL``: the endpoint's API root (``https://api.openai.com/v1``,
  ``http://127.0.0.1:11434/v1`` for Ollama, ...); unset, the memory's model endpoint
  (``PALIMPSEST_LLM_BASE_URL``, ``OPENAI_BASE_URL``) if one is set; none of them: no proxy.
- ``PALIMPSEST_PROXY_UPSTREAM_API_KEY``: the key sent upstream (the client's own key is the Palimpsest key and never
  leaves the server); with the memory's endpoint, its key (``PALIMPSEST_LLM_API_KEY``, ``OPENAI_API_KEY``).
- ``PALIMPSEST_PROXY_UPSTREAM_MODEL``: the model every request is sent with (default: the one the request names).
- ``PALIMPSEST_PROXY_UPSTREAM_TIMEOUT_S`` (default 120): connecting and each read of the upstream's answer.
- ``PALIMPSEST_PROXY_CONTEXT_TOKENS`` (default 800): the tokens of memory given with each request.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import aiohttp

from events.errors import LlmError
from palimpsest.server.errors import ApiError

ENV_URL = "PALIMPSEST_PROXY_UPSTREAM_URL"
ENV_API_KEY = "PALIMPSEST_PROXY_UPSTREAM_API_KEY"
ENV_MODEL = "PALIMPSEST_PROXY_UPSTREAM_MODEL"
ENV_TIMEOUT = "PALIMPSEST_PROXY_UPSTREAM_TIMEOUT_S"
ENV_CONTEXT_TOKENS = "PALIMPSEST_PROXY_CONTEXT_TOKENS"
CHAT_PATH = "/chat/completions"
# the memory's own model endpoint, used when the proxy has none of its own: (URL variables, key variables)
ENV_LLM = (("PALIMPSEST_LLM_BASE_URL", "OPENAI_BASE_URL"), ("PALIMPSEST_LLM_API_KEY", "OPENAI_API_KEY"))


@dataclass(frozen=True, slots=True)
class Upstream:
    """Where the proxy forwards chat completions. The API key is kept out of ``repr`` so it never reaches a log."""

    base_url: str
    api_key: str | None = field(default=None, repr=False)
    model: str | None = None  # sent instead of the request's model, when set
    timeout_s: float = 120.0
    context_tokens: int = 800

    def __post_init__(self) -> None:
        object.__setattr__(self, "base_url", _check_url(self.base_url, "Upstream.base_url"))
        if not self.timeout_s > 0:
            raise LlmError(f"Upstream.timeout_s={self.timeout_s!r} is not a number of seconds > 0, e.g. 120")
        if not (isinstance(self.context_tokens, int) and self.context_tokens > 0):
            raise LlmError(f"Upstream.context_tokens={self.context_tokens!r} is not an integer > 0, e.g. 800")

    @property
    def completions_url(self) -> str:
        return self.base_url + CHAT_PATH

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Upstream | None:
        """The upstream the environment names, or None (no proxy). ``LlmError`` names a variable with a bad value."""
        env = os.environ if environ is None else environ
        value = lambda name: env.get(name, "").strip()  # noqa: E731 - a two-use helper
        url_var, url, key = ENV_URL, value(ENV_URL), value(ENV_API_KEY)
        if not url:
            url_var, url = next(((v, value(v)) for v in ENV_LLM[0] if value(v)), (ENV_URL, ""))
            key = key or next((value(v) for v in ENV_LLM[1] if value(v)), "")
        if not url:
            return None
        _check_url(url, url_var)
        numbers = {}
        for name, var, kind, hint in (("timeout_s", ENV_TIMEOUT, float, "a number of seconds > 0, e.g. 120"),
                                      ("context_tokens", ENV_CONTEXT_TOKENS, int, "an integer > 0, e.g. 800")):
            raw = value(var)
            if raw:
                try:
                    numbers[name] = kind(raw)
                except ValueError:
                    raise LlmError(f"{var}={raw!r} is not {hint}; fix or unset it") from None
                if numbers[name] <= 0:
                    raise LlmError(f"{var}={raw!r} is not {hint}; fix or unset it")
        return cls(base_url=url, api_key=key or None, model=value(ENV_MODEL) or None, **numbers)


def _check_url(value: object, source: str) -> str:
    parts = urlsplit(value) if isinstance(value, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
        raise LlmError(f"{source}={value!r} is not an http(s) URL; set it to the chat endpoint's API root, e.g. "
                       "https://api.openai.com/v1 or http://127.0.0.1:11434/v1 (Ollama)")
    return value.rstrip("/")


# -- calling it --------------------------------------------------------------------------------------------------
# The upstream is called with aiohttp, not httpx: measured against the scripted chat server on loopback (a 2 kB
# request, 400 calls one after another, three rounds), httpx's AsyncClient spent 1.44-1.62 ms of the calling
# process's CPU per call and aiohttp's ClientSession 0.59-0.61 ms; the proxy pays it on every call, on the cores
# that also encode and read the memory.
STREAM_ERRORS = (aiohttp.ClientError, asyncio.TimeoutError)  # the upstream unreachable, silent, or its stream cut short
_sessions: dict[tuple, tuple[asyncio.AbstractEventLoop, aiohttp.ClientSession]] = {}


class Answer:
    """The upstream's answer: its status, headers (names in lower case) and, unless streamed, its whole body;
    a streamed one is read with :meth:`chunks` and let go with :meth:`close`."""

    def __init__(self, response: aiohttp.ClientResponse, content: bytes) -> None:
        self._response = response
        self.status_code = response.status
        self.headers = {k.lower(): v for k, v in response.headers.items()}
        self.content = content

    async def read(self) -> bytes:
        """The whole body (of a streamed answer too: an error's)."""
        self.content = await self._response.read()
        return self.content

    async def chunks(self):
        """The body as it arrives (decoded, as a client would read it)."""
        async for chunk in self._response.content.iter_any():
            yield chunk

    async def close(self) -> None:
        """The connection back to the pool (closed instead when the body was not read to its end)."""
        self._response.release()


def session(upstream: Upstream) -> aiohttp.ClientSession:
    """The connection pool to ``upstream`` of the running event loop (one per loop and upstream: kept alive)."""
    loop = asyncio.get_running_loop()
    key = (id(loop), upstream.base_url, upstream.timeout_s)
    held = _sessions.get(key)
    if held is None or held[0] is not loop or held[1].closed:
        timeout = aiohttp.ClientTimeout(total=None, connect=min(upstream.timeout_s, 10.0),
                                        sock_read=upstream.timeout_s)
        connector = aiohttp.TCPConnector(limit=256, limit_per_host=0, keepalive_timeout=30)
        # trust_env: the HTTP(S)_PROXY and NO_PROXY variables apply, as they do for the other clients
        held = _sessions[key] = (loop, aiohttp.ClientSession(connector=connector, timeout=timeout, trust_env=True))
    return held[1]


async def close_sessions() -> None:
    """Close the running event loop's connection pools (the app's shutdown)."""
    loop = asyncio.get_running_loop()
    for key, (owner, held) in list(_sessions.items()):
        if owner is loop:
            del _sessions[key]
            await held.close()


def _headers(upstream: Upstream, streamed: bool) -> dict[str, str]:
    headers = {"content-type": "application/json", "accept": "text/event-stream" if streamed else "application/json"}
    if upstream.api_key:
        headers["authorization"] = f"Bearer {upstream.api_key}"
    return headers


def unreachable(upstream: Upstream, exc: BaseException) -> ApiError:
    """The answer when the upstream could not be reached (502) or did not answer in time (504)."""
    timed_out = isinstance(exc, asyncio.TimeoutError)
    what = f"no answer within {upstream.timeout_s:g} s" if timed_out else type(exc).__name__
    fix = f"check that it is running and that {ENV_URL} names its API root" + (
        f", or raise {ENV_TIMEOUT}" if timed_out else "")
    return ApiError(504 if timed_out else 502, "upstream_unreachable",
                    f"the upstream LLM at {upstream.base_url} could not be reached ({what}); nothing was recorded",
                    [("upstream", fix)])


async def send(upstream: Upstream, body: dict, *, stream: bool, path: str = CHAT_PATH) -> Answer:
    """The upstream's answer to ``body`` sent to ``path`` under its API root (the model replaced by the upstream's,
    if it names one), read whole unless ``stream`` (then the caller closes it); an :class:`ApiError` (502, 504)
    when it cannot be had."""
    if upstream.model:
        body = {**body, "model": upstream.model}
    return await _request(upstream, "POST", path, json.dumps(body, ensure_ascii=False).encode("utf-8"), stream)


async def fetch(upstream: Upstream, path: str) -> Answer:
    """The upstream's answer to ``GET`` ``path`` under its API root (``/models``), read whole; an
    :class:`ApiError` (502, 504) when it cannot be had."""
    return await _request(upstream, "GET", path, None, False)


async def _request(upstream: Upstream, method: str, path: str, content: bytes | None, stream: bool) -> Answer:
    response = None
    try:
        response = await session(upstream).request(method, upstream.base_url + path, data=content,
                                                   headers=_headers(upstream, stream))
        answer = Answer(response, b"" if stream else await response.read())
    except STREAM_ERRORS as exc:
        if response is not None:
            response.close()
        raise unreachable(upstream, exc) from exc
    if not stream:
        response.release()
    return answer


def error_body(status: int, raw: bytes) -> bytes:
    """An upstream's error answer as an OpenAI-style error: as it is when it is one, else its text wrapped in one."""
    try:
        parsed = json.loads(raw)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("error"), dict):
        return raw
    message = raw.decode("utf-8", "replace").strip()[:2000] or f"the upstream LLM answered {status}"
    return json.dumps({"error": {"message": message, "type": "upstream_error", "param": None, "code": status}},
                      ensure_ascii=False).encode("utf-8")


def reply_text(raw: bytes) -> str:
    """The assistant text of a chat completion's first choice ("" when it has none: a tool call, a refusal)."""
    try:
        choices = json.loads(raw).get("choices") or []
        content = (choices[0].get("message") or {}).get("content") if choices else None
    except (ValueError, AttributeError, TypeError):
        return ""
    return content_text(content)


def content_text(content: object) -> str:
    """The text of a message's content: a string, or the text of its parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


class StreamedReply:
    """The assistant text of a streamed chat completion, read from its server-sent events as they pass through."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._pending = b""
        self.finished = False  # a finish reason or ``[DONE]`` came: the upstream answered in full

    def feed(self, chunk: bytes) -> None:
        lines = (self._pending + chunk).split(b"\n")
        self._pending = lines.pop()
        for line in lines:
            line = line.strip()
            if not line.startswith(b"data:"):
                continue
            data = line[5:].strip()
            if data == b"[DONE]":
                self.finished = True
                continue
            try:
                event = json.loads(data)
            except ValueError:
                continue
            choices = event.get("choices") if isinstance(event, dict) else None
            for choice in choices if isinstance(choices, list) else ():
                if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                    continue
                self._parts.append(content_text((choice.get("delta") or {}).get("content")))
                self.finished = self.finished or bool(choice.get("finish_reason"))

    @property
    def text(self) -> str:
        return "".join(self._parts)

    @property
    def reply(self) -> tuple[str, str]:
        """(the reply's text, no response id: a chat completion's is not recorded)."""
        return self.text, ""


def stream_error(message: str) -> bytes:
    """A server-sent event carrying an OpenAI-style error (OpenAI's clients raise it), for a stream cut short."""
    return b"data: " + json.dumps({"error": {"message": message, "type": "upstream_error", "param": None,
                                             "code": 502}}).encode() + b"\n\n"
