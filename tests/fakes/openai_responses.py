"""The scripted server's answers in the shape of OpenAI's Responses API (``POST /v1/responses``): a response object
carrying the scripted text as one assistant message, or, streamed, the events OpenAI sends for it (created,
in progress, the message and its text part added, the text a few characters at a time, each part done, completed),
each as ``event: TYPE`` and ``data: JSON``. A reply whose finish reason is ``length`` is an incomplete response."""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

_ids = itertools.count(1)


def response_body(request: dict[str, Any], content: str, finish_reason: str = "stop") -> bytes:
    """A response object whose output is one assistant message saying ``content``."""
    return json.dumps(_response(request, content, finish_reason, next(_ids)), ensure_ascii=False).encode("utf-8")


def response_events(request: dict[str, Any], content: str, finish_reason: str = "stop") -> bytes:
    """The server-sent events of a streamed response saying ``content``."""
    n = next(_ids)
    done = _response(request, content, finish_reason, n)
    started = {**done, "status": "in_progress", "output": [], "usage": None, "incomplete_details": None}
    message = done["output"][0]
    at = {"item_id": message["id"], "output_index": 0, "content_index": 0}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": started},
        {"type": "response.in_progress", "response": started},
        {"type": "response.output_item.added", "output_index": 0,
         "item": {**message, "status": "in_progress", "content": []}},
        {"type": "response.content_part.added", **at, "part": {"type": "output_text", "text": "", "annotations": []}},
        *({"type": "response.output_text.delta", **at, "delta": content[i:i + 8], "logprobs": []}
          for i in range(0, len(content), 8)),
        {"type": "response.output_text.done", **at, "text": content, "logprobs": []},
        {"type": "response.content_part.done", **at, "part": message["content"][0]},
        {"type": "response.output_item.done", "output_index": 0, "item": message},
        {"type": "response." + done["status"], "response": done},
    ]
    return "".join(f"event: {e['type']}\ndata: {json.dumps({**e, 'sequence_number': i}, ensure_ascii=False)}\n\n"
                   for i, e in enumerate(events)).encode("utf-8")


def _response(request: dict[str, Any], content: str, finish_reason: str, n: int) -> dict[str, Any]:
    incomplete = finish_reason == "length"
    return {
        "id": f"resp_fake_{n}", "object": "response", "created_at": int(time.time()),
        "status": "incomplete" if incomplete else "completed", "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "instructions": request.get("instructions"), "model": request.get("model", "fake-model"),
        "output": [{"type": "message", "id": f"msg_fake_{n}", "status": "incomplete" if incomplete else "completed",
                    "role": "assistant", "content": [{"type": "output_text", "text": content, "annotations": []}]}],
        "parallel_tool_calls": True, "previous_response_id": request.get("previous_response_id"),
        "temperature": request.get("temperature"), "top_p": request.get("top_p"), "tool_choice": "auto",
        "tools": [], "text": {"format": {"type": "text"}}, "metadata": {}, "user": request.get("user"),
        "usage": {"input_tokens": 0, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 0,
                  "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 0},
    }
