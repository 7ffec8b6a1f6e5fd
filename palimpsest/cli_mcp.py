"""``palimpsest mcp --server URL``: the MCP tools over stdio for desktop agents, forwarded to a running server.

Each tool call becomes the server's HTTP request of the same operation
(:mod:`palimpsest.server.mcp_tools`, the same translation ``/mcp`` uses),
sent with ``Authorization: Bearer $PALIMPSEST_API_KEY``; the store is never
opened here and Ray is neither started nor imported.
stdout carries only MCP messages; diagnostics go to stderr.
"""

from __future__ import annotations

import argparse
import os
import sys


def cmd_mcp(args: argparse.Namespace) -> int:
    url = getattr(args, "server", None) or os.environ.get("PALIMPSEST_URL")
    key = os.environ.get("PALIMPSEST_API_KEY", "").strip()
    missing = [(name, fix) for name, value, fix in (
        ("--server", url, "give the server's URL, e.g. --server http://127.0.0.1:8765 (or set PALIMPSEST_URL)"),
        ("PALIMPSEST_API_KEY", key, "set it to a key from `palimpsest --store DIR keys create --tenant T`"),
    ) if not value]
    if missing:
        print("palimpsest mcp: " + "; ".join(f"{name} missing: {fix}" for name, fix in missing), file=sys.stderr)
        return 2
    import anyio

    anyio.run(serve_stdio, url.rstrip("/"), key)
    return 0


async def serve_stdio(url: str, key: str) -> None:
    import httpx
    from mcp.server.stdio import stdio_server

    from palimpsest.server.mcp_tools import build_server

    headers = {"authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=url, timeout=httpx.Timeout(120.0, connect=10.0)) as client:
        server = build_server(client, lambda ctx: headers)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())


def register(sub) -> None:
    sp = sub.add_parser("mcp", help="MCP server over stdio that forwards tool calls to a running `palimpsest serve`")
    sp.add_argument("--server", default=argparse.SUPPRESS, help="URL of the running server (default: $PALIMPSEST_URL); key: $PALIMPSEST_API_KEY")
    sp.set_defaults(func=cmd_mcp)
