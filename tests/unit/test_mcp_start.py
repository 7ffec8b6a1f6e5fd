"""``/mcp``'s MCP side starts with a replica's first MCP request, not with the replica: the served app imports no
MCP module, concurrent first requests share one start, and a start that fails is a clear 503 the next request
retries (palimpsest/server/mcp_app.py)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import httpx
from fastapi import FastAPI

from palimpsest.server import mcp_app

ROOT = Path(__file__).resolve().parents[2]
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "test", "version": "0"}}}
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def test_the_served_app_imports_no_mcp_module():
    code = "import sys, palimpsest.server.app; print(sorted(m for m in sys.modules if m.split('.')[0] == 'mcp'))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


async def _posts(endpoint: mcp_app._Endpoint, n: int) -> list[httpx.Response]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=endpoint), base_url="http://t") as client:
        return await asyncio.gather(*(client.post("/", json=INITIALIZE, headers=HEADERS) for _ in range(n)))


def _session(calls) -> list:
    """Run ``calls(endpoint)`` (a coroutine function) inside the endpoint's lifespan; what it returned."""
    async def run():
        endpoint = mcp_app._Endpoint(FastAPI())
        async with endpoint.running():
            out = await calls(endpoint)
        assert endpoint.handler is None  # the MCP side ended with the lifespan
        return out
    return asyncio.run(run())


def test_concurrent_first_requests_share_one_start_and_are_all_answered(monkeypatch):
    starts = []
    real = mcp_app._mcp_side
    monkeypatch.setattr(mcp_app, "_mcp_side", lambda: starts.append(1) or real())
    answers = _session(lambda endpoint: _posts(endpoint, 3))
    assert [a.status_code for a in answers] == [200, 200, 200]
    assert all(json.loads(a.text)["result"]["serverInfo"]["name"] for a in answers)
    assert starts == [1]


def test_a_start_that_fails_is_a_clear_503_and_the_next_request_starts_it_again(monkeypatch):
    real = mcp_app._mcp_side

    def broken():
        raise ImportError("no module named 'mcp.server'")

    async def calls(endpoint):
        monkeypatch.setattr(mcp_app, "_mcp_side", broken)
        first = (await _posts(endpoint, 1))[0]
        monkeypatch.setattr(mcp_app, "_mcp_side", real)
        return first, (await _posts(endpoint, 1))[0]

    first, second = _session(calls)
    assert first.status_code == 503 and first.headers["retry-after"] == "2"
    assert "did not start (ImportError: no module named 'mcp.server')" in first.json()["message"]
    assert second.status_code == 200


def test_outside_the_app_s_lifespan_the_endpoint_answers_503():
    answer = asyncio.run(_posts(mcp_app._Endpoint(FastAPI()), 1))[0]
    assert answer.status_code == 503 and answer.json()["message"] == "the MCP endpoint is not running"
