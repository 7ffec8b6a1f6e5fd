"""The MCP tools of a served store, each a thin translation of one tool call into one ``/v1`` HTTP request.

Written here: MemoryOS's ``add_memory`` and ``retrieve_memory``, MoFox's ``create_memory``, ``link_memories``
and ``search_memories`` (the memory-graph tools, their JSON schemas exported by
:mod:`projections.rules.tool_schema`); generated from their declarations: the declared
operations exposed to MCP (:mod:`palimpsest.operations`: ``build_context``, ``get_user_profile``, after
MemoryOS, ``user_stats``, …); ``retrieve_memory`` and ``add_memory`` keep MemoryOS's names and arguments and
send the declared ``search`` and ``add_messages`` requests. A tool call
becomes the HTTP request of the same operation, sent with the caller's own
``Authorization`` header, so both MCP transports share the HTTP routes'
checks, validation and error mapping and no business logic lives here:

- on the served app (``/mcp``) the request goes in-process to the FastAPI app
  (:mod:`palimpsest.server.mcp_app`);
- over stdio (``palimpsest mcp --server URL``) it goes to the server over HTTP.

An HTTP error comes back as an MCP tool error (``isError``) whose text names
each field and its fix, so the LLM can correct the call. No Ray, no FastAPI:
the stdio bridge imports this module in a light process.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import httpx
import mcp_types as types
from mcp.server.lowlevel import Server

from events.errors import InvalidInputError
from palimpsest.operation import Operation, http_request
from palimpsest.operations import OPERATIONS
from projections.rules.tool_calls import TOOLS as GRAPH_TOOLS
from projections.rules.tool_schema import function_schema

USER_ID = {"type": "string", "minLength": 1, "description": "Whose memory: the end user's id within your tenant "
                                                             "(the tenant itself comes from your API key)."}
_WHEN = {"type": "string", "description": "ISO-8601 timestamp with an offset, e.g. 2024-05-01T09:00:00+00:00; "
                                          "default: now."}

Request = tuple[str, str, dict | None, dict | None]  # method, path, JSON body, query parameters


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    properties: dict[str, Any]
    required: tuple[str, ...]
    request: Callable[[str, dict[str, Any]], Request]  # (user path, arguments without user_id) → HTTP request

    def input_schema(self) -> dict[str, Any]:
        return {"type": "object", "properties": {"user_id": USER_ID, **self.properties},
                "required": ["user_id", *self.required], "additionalProperties": False}

    def listed(self) -> types.Tool:
        return types.Tool(name=self.name, description=self.description, input_schema=self.input_schema())


def _add_memory(user: str, a: dict) -> Request:
    when = a.get("timestamp") or datetime.now(UTC).isoformat()
    meta = a.get("meta_data") or {}
    base = {"occurred_at": when, "conversation_id": a.get("conversation_id") or "default", "metadata": meta}
    messages = [{**base, "role": "user", "text": a.get("user_input")}]
    if a.get("agent_response"):
        messages.append({**base, "role": "assistant", "text": a["agent_response"]})
    if a.get("client_message_id"):
        for i, m in enumerate(messages):
            m["client_message_id"] = f"{a['client_message_id']}:{('user', 'assistant')[i]}"
    return "POST", f"{user}/messages", {"messages": messages}, None


def _graph_tool(name: str) -> Tool:
    fn = function_schema(GRAPH_TOOLS[name])["function"]
    params = copy.deepcopy(fn["parameters"])
    reference = {"type": "string", "description": "When the conversation happens (ISO-8601 with offset): relative "
                                                  "times such as 'yesterday 8pm' are resolved against it; default now."}
    return Tool(name, fn["description"], {**params["properties"], "reference": reference},
                tuple(params.get("required", ())),
                lambda user, a: ("POST", f"{user}/tools/{name}",
                                 {"arguments": {k: v for k, v in a.items() if k != "reference"},
                                  **({"reference": a["reference"]} if a.get("reference") else {})}, None))


TOOLS: dict[str, Tool] = {t.name: t for t in (
    Tool("add_memory",
         "Store one conversation turn in long-term memory: what the user said and, optionally, what the agent "
         "answered. Call it after every turn worth remembering. Idempotent when you pass client_message_id.",
         {"user_input": {"type": "string", "minLength": 1, "description": "The user's message, verbatim."},
          "agent_response": {"type": "string", "description": "The agent's reply to it, verbatim (optional)."},
          "timestamp": _WHEN,
          "conversation_id": {"type": "string", "description": "The conversation (session) id; default 'default'."},
          "client_message_id": {"type": "string", "description": "Your id for this turn; sending it again is a "
                                                                 "no-op that returns the same memory ids."},
          "meta_data": {"type": "object", "description": "Extra string/number/bool fields kept with the turn."}},
         ("user_input",), _add_memory),
    Tool("retrieve_memory",
         "Find what the user said before that is relevant to a query: the best matching remembered messages, "
         "each with its text, time, score and provenance. Use it before answering a question about the past.",
         {"query": {"type": "string", "minLength": 1, "description": "What to look for, in natural language."},
          "max_results": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 10,
                          "description": "How many memories to return."},
          "scope": {"type": "string", "enum": ["active", "archive", "all"], "default": "active",
                    "description": "active (default), archive (archived only) or all."},
          "now": _WHEN},
         ("query",),
         lambda user, a: ("POST", f"{user}/search", {"query": a.get("query"), "k": a.get("max_results", 10),
                                                     **{k: a[k] for k in ("scope", "now") if k in a}}, None)),
    _graph_tool("create_memory"),
    _graph_tool("link_memories"),
    _graph_tool("search_memories"),
)}


def _declared_tool(op: Operation) -> Tool:
    """The tool of a declared operation exposed to MCP: its parameters as the input schema, its HTTP request."""
    known = {p.name for p in op.params}

    def request(user: str, a: dict) -> Request:
        unknown = sorted(set(a) - known)
        if unknown:
            raise InvalidInputError([(n, f"no such argument of {op.name}; its arguments: user_id"
                                         + "".join(f", {k}" for k in sorted(known))) for n in unknown], what=op.name)
        return http_request(op, a, user)

    return Tool(op.name, op.mcp, {p.name: p.json_schema() for p in op.params},
                tuple(p.name for p in op.params if p.required), request)


TOOLS.update((op.name, _declared_tool(op)) for op in OPERATIONS.values() if op.mcp)


def tool_error(message: str, problems: list[tuple[str, str]]) -> types.CallToolResult:
    lines = [message] + [f"- {field}: {fix}" for field, fix in problems]
    return types.CallToolResult(content=[types.TextContent(text="\n".join(lines))], is_error=True,
                                structured_content={"error": message,
                                                    "problems": [{"field": f, "fix": x} for f, x in problems]})


def _from_http(response: httpx.Response) -> types.CallToolResult:
    try:
        body = response.json()
    except ValueError:
        return tool_error(f"the server answered {response.status_code} without JSON",
                          [("server", "check the server's URL and that it is a Palimpsest server")])
    if response.status_code >= 400:
        problems = [(p.get("field", ""), p.get("fix", "")) for p in body.get("problems", ())]
        return tool_error(f"{response.status_code} {body.get('error', 'error')}: {body.get('message', '')}",
                          problems)
    return types.CallToolResult(content=[types.TextContent(text=json.dumps(body, ensure_ascii=False))],
                                structured_content=body)


async def call(client: httpx.AsyncClient, name: str, arguments: Mapping[str, Any] | None,
               headers: Mapping[str, str]) -> types.CallToolResult:
    """Run tool ``name`` as its HTTP request on ``client`` with the caller's ``headers``; the answer as MCP."""
    tool = TOOLS.get(name)
    if tool is None:
        return tool_error(f"no tool {name!r}", [("name", f"use one of {', '.join(TOOLS)}")])
    args = dict(arguments or {})
    user_id = args.pop("user_id", None)
    if not isinstance(user_id, str) or not user_id.strip():
        return tool_error(f"rejected {name}: no user_id; nothing was written",
                          [("user_id", "give the end user's id as a non-empty string, e.g. 'alice'")])
    try:
        method, path, body, params = tool.request(f"/v1/users/{quote(user_id, safe='')}", args)
    except InvalidInputError as exc:
        return tool_error(f"rejected {name}; nothing was written", list(exc.problems))
    if body is not None:  # an argument left out is missing, not null: the route then says "Field required"
        body = {k: v for k, v in body.items() if v is not None}
        if "messages" in body:
            body["messages"] = [{k: v for k, v in m.items() if v is not None} for m in body["messages"]]
    try:
        response = await client.request(method, path, json=body, params=params, headers=dict(headers))
    except httpx.HTTPError as exc:
        return tool_error(f"the server did not answer: {type(exc).__name__}",
                          [("server", "check that `palimpsest serve` is running at the URL you gave")])
    return _from_http(response)


def list_tools() -> types.ListToolsResult:
    return types.ListToolsResult(tools=[t.listed() for t in TOOLS.values()])


def build_server(client: httpx.AsyncClient, headers_of: Callable[[Any], Mapping[str, str]]) -> Server:
    """An MCP server whose tools run on ``client``, each call carrying ``headers_of(request context)``."""

    async def on_list_tools(ctx, params) -> types.ListToolsResult:
        return list_tools()

    async def on_call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await call(client, params.name, params.arguments, headers_of(ctx))

    return Server("palimpsest", version="1", instructions=INSTRUCTIONS, on_list_tools=on_list_tools,
                  on_call_tool=on_call_tool)


INSTRUCTIONS = ("Long-term memory of your users. Every tool takes the end user's user_id. After each turn, "
                "add_memory; before answering about the past, retrieve_memory or build_context; for who the user "
                "is, get_user_profile; for structured facts and their causes, create_memory, link_memories and "
                "search_memories.")
