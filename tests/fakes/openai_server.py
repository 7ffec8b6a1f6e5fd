"""A scripted OpenAI-compatible server on a real socket (chat completions and responses), for tests of anything that
calls an LLM.

Each test queues the replies the server gives, in order, and afterwards
reads what the server received::

    with FakeOpenAI() as server:
        server.script(Reply.json({"category": "preference"}), Reply.error(500))
        config = LlmConfig(base_url=server.base_url, model="fake-model")
        ...
        assert server.requests[0].body["model"] == "fake-model"

When the script runs out, the server answers 500 with a message saying so,
so a test that makes more calls than it scripted fails visibly; or, given a
``responder``, the reply it makes of each request's body (any number of calls,
e.g. a benchmark's)::

    FakeOpenAI(responder=lambda body: Reply.json({"operations": []}, delay_s=2.0))

A request with ``"stream": true`` is answered as OpenAI streams: server-sent chat-completion chunks (the content
a few characters at a time), then ``data: [DONE]``; ``Reply.text(..., stream_cut_after=N)`` drops the connection
after N chunks, as an upstream failing mid-answer does.

``POST /v1/responses`` takes the same script and answers in the Responses API's shape, plain or streamed
(:mod:`tests.fakes.openai_responses`): the scripted content as the response's one assistant message.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from collections.abc import Callable
from typing import Any

from tests.fakes.openai_responses import response_body, response_events


@dataclass(frozen=True)
class Reply:
    """One scripted answer: an assistant message (``content``) or an error status, after ``delay_s``."""

    status: int = 200
    content: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    finish_reason: str = "stop"
    raw_body: bytes | None = None  # sent verbatim instead of a chat completion
    stream_cut_after: int | None = None  # streamed: the connection drops after this many chunks (no [DONE])

    @classmethod
    def text(cls, content: str, **kw: Any) -> Reply:
        """The assistant replies with exactly ``content``."""
        return cls(content=content, **kw)

    @classmethod
    def json(cls, value: Any, **kw: Any) -> Reply:
        """The assistant replies with ``value`` as clean JSON."""
        return cls(content=json.dumps(value, ensure_ascii=False), **kw)

    @classmethod
    def error(cls, status: int, message: str = "scripted error", **kw: Any) -> Reply:
        """An OpenAI-style error body with ``status``."""
        body = json.dumps({"error": {"message": message, "type": "fake_error", "code": status}}).encode()
        return cls(status=status, raw_body=body, **kw)


@dataclass(frozen=True)
class ReceivedRequest:
    """What the server received: path, headers (lower-case names) and the decoded JSON body."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class FakeOpenAI:
    """``POST /v1/chat/completions`` and ``POST /v1/responses`` on 127.0.0.1 with an ephemeral port, answering
    from a script (and ``GET /v1/models``: one model, ``fake-model``).

    ``reject_json_schema=True`` emulates a server without structured-output
    support: it answers 400 to ``response_format.type == "json_schema"``
    without using up a scripted reply.
    """

    def __init__(self, *, reject_json_schema: bool = False, responder: Callable[[dict], Reply] | None = None) -> None:
        self.reject_json_schema = reject_json_schema
        self.responder = responder  # answers a request once the script is empty (None: a 500)
        self.requests: list[ReceivedRequest] = []
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """The API root to configure a client with (``http://127.0.0.1:PORT/v1``)."""
        if self._server is None:
            raise RuntimeError("the fake server is not running; call start() or use it as a context manager")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def script(self, *replies: Reply) -> None:
        """Queue ``replies``; each request takes the next one."""
        with self._lock:
            self._script.extend(replies)

    def remaining(self) -> int:
        """Scripted replies not yet given."""
        with self._lock:
            return len(self._script)

    def start(self) -> FakeOpenAI:
        handler = type("Handler", (_Handler,), {"fake": self})
        self._server = _Server(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True  # a handler still sleeping out a scripted delay must not block stop()
        # A short poll interval: stop() waits for the serve loop to notice, and tests stop servers often.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Close the socket: afterwards every connection to ``base_url`` is refused."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(timeout=5)
            self._server = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _answer(self, request: ReceivedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            if not request.path.endswith(("/chat/completions", "/responses")):
                return Reply.error(404, f"unknown path {request.path}; this fake serves /v1/chat/completions and "
                                        "/v1/responses")
            response_format = request.body.get("response_format") or {}
            if self.reject_json_schema and response_format.get("type") == "json_schema":
                return Reply.error(400, "response_format type json_schema is not supported by this server")
            if not self._script:
                if self.responder is not None:
                    return self.responder(request.body)
                return Reply.error(500, "fake server: no scripted reply left for this request")
            return self._script.popleft()


def schema_name(body: dict[str, Any]) -> str | None:
    """The name of the JSON schema a request asks its answer to match (``EpisodeTitle``, ...), if it names one."""
    response_format = body.get("response_format") or {}
    return (response_format.get("json_schema") or {}).get("name")


class _Server(ThreadingHTTPServer):
    request_queue_size = 128  # many clients connecting at once (a benchmark's) are queued, not refused


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAI
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        length = int(self.headers.get("Content-Length", 0))
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except ValueError:
            body = {"_unparseable": raw.decode("utf-8", "replace")}
        headers = {k.lower(): v for k, v in self.headers.items()}
        reply = self.fake._answer(ReceivedRequest(self.path, headers, body))
        if reply.delay_s:
            time.sleep(reply.delay_s)
        streamed = bool(body.get("stream")) and reply.raw_body is None and reply.status == 200
        if reply.raw_body is not None:
            payload = reply.raw_body
        elif self.path.endswith("/responses"):
            payload = (response_events if streamed else response_body)(body, reply.content or "", reply.finish_reason)
        else:
            payload = _chunks(body, reply) if streamed else _completion(body, reply)
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", "text/event-stream" if streamed else "application/json")
            self.send_header("Content-Length", str(len(payload)))  # a cut stream sends less: the client sees it
            self.send_header("Connection", "close")
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            if streamed and reply.stream_cut_after is not None:
                payload = b"".join(c + b"\n\n" for c in payload.split(b"\n\n")[:reply.stream_cut_after])
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client timed out and hung up, which is what a delay tests
        self.close_connection = True

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        """``GET /v1/models`` (the one model this fake is, ``fake-model``) and ``GET /v1/models/{id}``."""
        headers = {k.lower(): v for k, v in self.headers.items()}
        with self.fake._lock:
            self.fake.requests.append(ReceivedRequest(self.path, headers, {}))
        model = {"id": "fake-model", "object": "model", "created": 0, "owned_by": "fake"}
        status, answer = 200, {"object": "list", "data": [model]}
        if self.path.startswith("/v1/models/"):
            status, answer = (200, model) if self.path == "/v1/models/fake-model" else \
                (404, {"error": {"message": f"no model {self.path[11:]}", "type": "invalid_request_error",
                                 "param": None, "code": "model_not_found"}})
        elif self.path != "/v1/models":
            status, answer = 404, {"error": {"message": f"unknown path {self.path}", "type": "fake_error",
                                             "code": 404}}
        payload = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(payload)
        self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's signature
        pass  # keep test output clean


def _completion(request: dict[str, Any], reply: Reply) -> bytes:
    """A chat-completion response body carrying ``reply.content``."""
    created = int(time.time())
    return json.dumps(
        {
            "id": f"chatcmpl-fake-{created}",
            "object": "chat.completion",
            "created": created,
            "model": request.get("model", "fake-model"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.content},
                    "finish_reason": reply.finish_reason,
                }
            ],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        },
        ensure_ascii=False,
    ).encode("utf-8")


def _chunks(request: dict[str, Any], reply: Reply) -> bytes:
    """The server-sent events of a streamed chat completion carrying ``reply.content``, ending ``data: [DONE]``."""
    created, content = int(time.time()), reply.content or ""
    base = {"id": f"chatcmpl-fake-{created}", "object": "chat.completion.chunk", "created": created,
            "model": request.get("model", "fake-model")}
    deltas = [{"role": "assistant", "content": ""}] + [{"content": content[i:i + 8]} for i in range(0, len(content), 8)]
    chunks = [{**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": reply.finish_reason}]})
    if (request.get("stream_options") or {}).get("include_usage"):
        chunks.append({**base, "choices": [], "usage": {"prompt_tokens": 0, "completion_tokens": 0,
                                                        "total_tokens": 0}})
    events = [f"data: {json.dumps(c, ensure_ascii=False)}\n\n" for c in chunks] + ["data: [DONE]\n\n"]
    return "".join(events).encode("utf-8")
