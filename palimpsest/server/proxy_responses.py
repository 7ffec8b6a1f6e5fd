"""The memory proxy's Responses API form (``POST /v1/responses``): what it reads of a request, where the user's
context goes, and the reply it reads of the upstream's answer, plain or streamed.

A request's ``input`` is a string (the user's turn) or a list of input items: messages (``{"role", "content"}``,
the content a string or a list of ``input_text``/``output_text`` parts, with or without ``"type": "message"``) and
others (function calls and their outputs, reasoning, references), which the proxy passes on without reading. The
memory goes in ``instructions``, after the request's own: that is where the Responses API puts the system
message, and instructions are not carried on by ``previous_response_id``, so each call of a chain is given the
context for its own turn only. The reply is the text of the response's assistant messages (``output_text``);
a response that failed, plain or streamed, is no reply and nothing is recorded.
"""

from __future__ import annotations

import json

from palimpsest.server.errors import ApiError
from palimpsest.server.proxy_record import Asked, opening
from palimpsest.server.proxy_upstream import content_text as _text

PATH = "/responses"
ANSWERED = ("completed", "incomplete")  # statuses of a response the upstream gave in full (incomplete: cut by
# max_output_tokens, as a chat completion's finish reason "length" is)


def read(body: dict) -> Asked:
    """The request's turns; an :class:`ApiError` (400) naming ``input`` when it has none the proxy can read."""
    given = body.get("input")
    continues = body.get("previous_response_id")
    continues = continues if isinstance(continues, str) else ""
    named = body.get("conversation")  # an id, or an object with one
    named = named.get("id") if isinstance(named, dict) else named
    if body.get("instructions") is not None and not isinstance(body["instructions"], str):
        raise ApiError(400, "invalid_input", "the request's instructions are not a text",
                       [("instructions", "give the instructions as a string (the memory goes after them)")])
    if isinstance(given, str) and given:
        return Asked(given, given, "", given, continues, named)
    if not isinstance(given, list) or not given or not all(isinstance(i, dict) for i in given):
        raise ApiError(400, "invalid_input", "the request's input is neither a text nor a non-empty list of items",
                       [("input", "give the user's turn as a string, or a non-empty list of input items, each "
                                  "{'role': ..., 'content': ...} or another item object")])
    users = [n for n, item in enumerate(given) if _role(item) == "user"]
    if not users:  # a tool's output, say: the chat is named after the response it continues, else its first item
        return Asked("", "", "", continues or opening(given[0]), continues, named)
    last = users[-1]
    query = _text(given[last].get("content"))
    before = given[last - 1] if last > 0 else {}
    prior = _text(before.get("content")) if _role(before) == "assistant" else ""
    return Asked(query, query if last == len(given) - 1 else "", prior, _text(given[users[0]].get("content")),
                 continues, named)


def _role(item: dict) -> str | None:
    return item.get("role") if item.get("type", "message") == "message" else None


def with_context(body: dict, context_text: str | None) -> dict:
    """``body`` with ``context_text`` in its instructions, after the request's own (``body`` when there is none)."""
    if not context_text:
        return body
    own = body.get("instructions")
    return {**body, "instructions": f"{own}\n\n{context_text}" if isinstance(own, str) and own else context_text}


def reply(raw: bytes) -> tuple[str, str] | None:
    """The reply of a response object: (its assistant text, its id); None when the response failed."""
    try:
        response = json.loads(raw)
    except ValueError:
        return None
    return _reply_of(response) if isinstance(response, dict) else None


def _reply_of(response: dict) -> tuple[str, str] | None:
    if response.get("status", "completed") not in ANSWERED:
        return None
    output = response.get("output")
    text = "".join(_text(item.get("content")) for item in output if isinstance(item, dict)
                   and item.get("type") == "message" and item.get("role", "assistant") == "assistant") \
        if isinstance(output, list) else ""
    return text, str(response.get("id") or "")


class StreamedResponse:
    """The reply of a streamed response, read from its server-sent events as they pass through: the text deltas,
    then the completed (or incomplete) response, which names its id; a failed one or an error event is no reply."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._pending = b""
        self._final: tuple[str, str] | None = None
        self._failed = False

    def feed(self, chunk: bytes) -> None:
        lines = (self._pending + chunk).split(b"\n")
        self._pending = lines.pop()
        for line in lines:
            if not line.startswith(b"data:"):
                continue
            try:
                event = json.loads(line[5:])
            except ValueError:
                continue
            kind = event.get("type") if isinstance(event, dict) else None
            if kind == "response.output_text.delta" and isinstance(event.get("delta"), str):
                self._parts.append(event["delta"])
            elif kind in ("response.completed", "response.incomplete") and isinstance(event.get("response"), dict):
                self._final = _reply_of(event["response"])
            elif kind in ("response.failed", "error"):
                self._failed = True

    @property
    def finished(self) -> bool:
        """The upstream answered in full (its response completed or was cut by its token limit)."""
        return self._final is not None and not self._failed

    @property
    def reply(self) -> tuple[str, str]:
        """(the reply's text, the response's id): the completed response's text, else the deltas'."""
        text, response_id = self._final or ("", "")
        return text or "".join(self._parts), response_id


def stream_error(message: str) -> bytes:
    """An error event (OpenAI's clients raise it) for a stream cut short."""
    error = {"message": message, "type": "upstream_error", "param": None, "code": 502}
    return b"event: error\ndata: " + json.dumps({"type": "error", "code": "upstream_error", "message": message,
                                                 "param": None, "error": error}).encode() + b"\n\n"
