"""The MCP tools, driven by the real ``mcp`` client over streamable HTTP (``/mcp``) and stdio (``palimpsest mcp``).

One served store (local Ray, Ray Serve, hash embedder) with two tenants:
the client lists the tools, calls every one, gets a tool error naming the
field and its fix, is refused without a key, and tenant B's key reads none
of tenant A's data through any tool.
"""

from __future__ import annotations

import json
import os
import sys
from contextlib import asynccontextmanager

import anyio
import httpx
import httpx2
import pytest
import ray
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from actors.ray_init import NAMESPACE
from palimpsest.server.keys import KeyRing
from palimpsest.server.run import start
from palimpsest.server.settings import ServeSettings
from tests.serve_helpers import free_port

pytestmark = pytest.mark.integration
TOOLS = {"add_memory", "retrieve_memory", "get_user_profile", "create_memory", "link_memories", "search_memories",
         "build_context"}
REF = "2024-05-03T20:00:00+00:00"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    ray.init(address="local", num_cpus=2, include_dashboard=False, namespace=NAMESPACE)
    store = tmp_path_factory.mktemp("mcp") / "store"
    running = start(ServeSettings(store=str(store), port=free_port(), rate_per_s=0), embedder="hash", num_shards=2)
    ring = KeyRing(store)
    yield {"url": running.url, "keys": {t: ring.create(t)[0] for t in ("acme", "beta")}, "running": running}
    running.stop()
    ray.shutdown()


@asynccontextmanager
async def _http_session(url: str, key: str):
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=120) as client:
        async with streamable_http_client(f"{url}/mcp", http_client=client) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


@asynccontextmanager
async def _stdio_session(url: str, key: str):
    env = {**os.environ, "PALIMPSEST_API_KEY": key}
    params = StdioServerParameters(command=sys.executable, args=["-m", "palimpsest.cli", "mcp", "--server", url],
                                   env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


SESSIONS = {"http": _http_session, "stdio": _stdio_session}


def _data(result) -> dict:
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


async def _every_tool(session, user: str, mark: str) -> dict:
    listed = (await session.list_tools()).tools
    assert {t.name for t in listed} == TOOLS
    for tool in listed:
        assert len(tool.description) > 40 and "user_id" in tool.input_schema["required"], tool.name
    out = {"added": _data(await session.call_tool("add_memory", {
        "user_id": user, "user_input": f"{mark} I prefer green tea in the morning", "agent_response": "Noted!",
        "timestamp": "2024-05-01T09:00:00+00:00", "client_message_id": f"{mark}-1"}))}
    again = _data(await session.call_tool("add_memory", {
        "user_id": user, "user_input": f"{mark} I prefer green tea in the morning", "agent_response": "Noted!",
        "timestamp": "2024-05-01T09:00:00+00:00", "client_message_id": f"{mark}-1"}))
    assert again["duplicates"] == 2 and again["memory_ids"] == out["added"]["memory_ids"]
    out["retrieved"] = _data(await session.call_tool("retrieve_memory", {"user_id": user, "query": "tea",
                                                                         "max_results": 5}))
    out["profile"] = _data(await session.call_tool("get_user_profile", {"user_id": user}))
    out["created"] = _data(await session.call_tool("create_memory", {
        "user_id": user, "subject": mark, "memory_type": "event", "topic": "slept badly",
        "time_expression": "yesterday 8pm", "reference": REF}))
    await session.call_tool("create_memory", {"user_id": user, "subject": mark, "memory_type": "opinion",
                                              "topic": "unhappy today", "reference": REF})
    out["linked"] = await session.call_tool("link_memories", {
        "user_id": user, "source_memory_description": "slept badly", "target_memory_description": "unhappy today",
        "relation_type": "causality", "reference": REF})
    out["searched"] = _data(await session.call_tool("search_memories", {"user_id": user, "query": "slept badly",
                                                                        "reference": REF}))
    out["context"] = _data(await session.call_tool("build_context", {"user_id": user, "query": "what does "
                                                                     "the user drink", "token_budget": 500}))
    return out


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_every_tool_over_the_real_client(served, transport):
    async def run():
        async with SESSIONS[transport](served["url"], served["keys"]["acme"]) as session:
            out = await _every_tool(session, f"alice-{transport}", "ACMEMARK")
            bad = await session.call_tool("search_memories", {"user_id": f"alice-{transport}", "query": "x",
                                                              "max_results": 500})
            missing = await session.call_tool("retrieve_memory", {"query": "tea"})
        return out, bad, missing

    out, bad, missing = anyio.run(run)
    assert out["added"]["created"] == 2 and len(out["added"]["memory_ids"]) == 2
    assert "green tea" in out["retrieved"]["hits"][0]["text"]
    assert out["created"]["staged"] is True and out["created"]["memory_id"]
    assert "profile" in json.dumps(out["profile"]) or out["profile"] is not None
    assert not out["linked"].is_error or "link" in out["linked"].content[0].text
    assert "green tea" in json.dumps(out["context"])
    assert bad.is_error and "max_results" in bad.content[0].text and "between 1 and 100" in bad.content[0].text
    assert missing.is_error and "user_id" in missing.content[0].text


def test_tenant_b_reads_nothing_of_tenant_a(served):
    async def run():
        async with _http_session(served["url"], served["keys"]["acme"]) as a:
            await a.call_tool("add_memory", {"user_id": "shared", "user_input": "ACMESECRET my pin is 4711",
                                             "timestamp": "2024-05-01T09:00:00+00:00"})
        results = []
        for transport in SESSIONS:
            async with SESSIONS[transport](served["url"], served["keys"]["beta"]) as b:
                for name, args in [("retrieve_memory", {"query": "pin"}), ("build_context", {"query": "pin"}),
                                   ("get_user_profile", {}), ("search_memories", {"query": "pin"})]:
                    results.append(await b.call_tool(name, {"user_id": "shared", **args}))
        return results

    for result in anyio.run(run):
        text = result.content[0].text
        assert "ACMESECRET" not in text and "4711" not in text
        assert result.is_error and "404" in text and "user_id" in text, text


def test_mcp_without_a_valid_key_is_refused(served):
    for headers in ({}, {"Authorization": "Bearer pal_nope_nope"}):
        r = httpx.post(f"{served['url']}/mcp", headers={**headers, "Accept": "application/json, text/event-stream"},
                       json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, timeout=60)
        assert r.status_code == 401 and r.json()["problems"][0]["field"] == "authorization", r.text


def test_cli_through_the_server_prints_what_the_embedded_cli_prints(served, monkeypatch, capsys):
    import contextlib
    import subprocess
    import time

    from palimpsest import cli

    key = served["keys"]["acme"]
    httpx.post(f"{served['url']}/v1/users/cli/messages", headers={"Authorization": f"Bearer {key}"}, timeout=60,
               json={"messages": [{"text": t, "occurred_at": f"2024-05-0{i + 1}T09:00:00+00:00", "turn_id": f"D1:{i}"}
                                  for i, t in enumerate(["I prefer green tea", "My sister lives in Oslo",
                                                         "We use PostgreSQL at work"])]})
    monkeypatch.setattr(cli, "open_store", lambda args: contextlib.nullcontext(served["running"].memory))
    env = {**os.environ, "PALIMPSEST_API_KEY": key}
    for argv in (["search", "--tenant", "acme", "--user", "cli", "what does she drink", "-k", "3",
                  "--at", "2024-06-01T00:00:00+00:00"],
                 ["context", "--tenant", "acme", "--user", "cli", "where does the sister live", "--budget", "200",
                  "--at", "2024-06-01T00:00:00+00:00"]):
        assert cli.main(argv) == 0
        embedded = capsys.readouterr().out
        started = time.perf_counter()
        remote = subprocess.run([sys.executable, "-m", "palimpsest.cli", "--server", served["url"], *argv], env=env,
                                capture_output=True, text=True, timeout=120)
        seconds = time.perf_counter() - started
        assert remote.returncode == 0, remote.stderr
        keep = [line for line in embedded.splitlines()  # Ray forwards the replicas' log lines to this stdout
                if not line.strip().startswith("score ") and " pid=" not in line]
        assert keep == [line for line in remote.stdout.splitlines() if not line.strip().startswith("score ")]
        assert "green tea" in embedded or "Oslo" in embedded
        with capsys.disabled():
            print(f"\n{argv[0]} through the server from a cold process: {seconds:.2f}s")
    wrong = subprocess.run([sys.executable, "-m", "palimpsest.cli", "--server", served["url"], "search", "--tenant",
                            "beta", "--user", "cli", "tea"], env=env, capture_output=True, text=True, timeout=120)
    assert wrong.returncode == 2 and "--tenant" in wrong.stderr
