"""Declared operations in every place they are exposed, on one served store: ``user_stats`` and ``conversations``
(each declared once in palimpsest.operations, answered by one shard reader) answer the same through the Python
API, HTTP, an MCP tool and the CLI with ``--server``."""

from __future__ import annotations

import json

import anyio
import httpx
import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from palimpsest.cli import main
from tests.integration.proxy_server import shared_bench

pytestmark = pytest.mark.integration
WHEN = "2024-05-0{}T09:00:00+00:00"
USER = "ops-alice"  # the served store's other modules keep to users of their own (tests/integration/proxy_server.py)


@pytest.fixture(scope="module")
def served(ray_cluster, tmp_path_factory, request):
    bench = shared_bench(request, tmp_path_factory)  # the store of unit "served" (tests/xdist_schedule.py)
    key = bench.key
    texts = [("c1", "I prefer green tea in the morning"), ("c1", "We decided to use PostgreSQL for Atlas"),
             ("c2", "My sister Lena lives in Oslo")]
    messages = [{"text": t, "conversation_id": c, "occurred_at": WHEN.format(i + 1), "client_message_id": f"m{i}"}
                for i, (c, t) in enumerate(texts)]
    r = httpx.post(f"{bench.running.url}/v1/users/{USER}/messages", json={"messages": messages},
                   headers={"Authorization": f"Bearer {key}"}, timeout=120)
    assert r.status_code == 200, r.text
    return bench.running, key


def _mcp(url: str, key: str, arguments: dict, tool: str = "user_stats") -> dict:
    async def run():
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=120) as client:
            async with streamable_http_client(f"{url}/mcp", http_client=client) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    assert tool in {t.name for t in (await session.list_tools()).tools}
                    result = await session.call_tool(tool, arguments)
                    assert not result.is_error, result.content[0].text
                    return json.loads(result.content[0].text)

    return anyio.run(run)


def test_user_stats_answers_alike_in_python_http_mcp_and_the_cli(served, capsys, monkeypatch):
    running, key = served
    monkeypatch.setenv("PALIMPSEST_API_KEY", key)
    for conversation in (None, "c1"):
        python = running.memory.user_stats("acme", USER, conversation_id=conversation)
        params = {"conversation_id": conversation} if conversation else {}
        http = httpx.get(f"{running.url}/v1/users/{USER}/stats", params=params,
                         headers={"Authorization": f"Bearer {key}"}, timeout=120).json()
        mcp = _mcp(running.url, key, {"user_id": USER, **params})
        rc = main(["--server", running.url, "user-stats", "--tenant", "acme", "--user", USER, "--json",
                   *(["--conversation", conversation] if conversation else [])])
        cli = json.loads(capsys.readouterr().out)
        assert rc == 0 and python == http == mcp == cli, (python, http, mcp, cli)
        assert python["messages"] == (2 if conversation else 3)
        assert python["conversations"] == 1 + (conversation is None)
    r = httpx.get(f"{running.url}/v1/users/bob/stats", headers={"Authorization": f"Bearer {key}"}, timeout=120)
    assert r.status_code == 404 and r.json()["problems"][0]["field"] == "user_id"


def test_conversations_answers_alike_in_python_http_mcp_and_the_cli(served, capsys, monkeypatch):
    running, key = served
    monkeypatch.setenv("PALIMPSEST_API_KEY", key)
    for params in ({}, {"limit": 1}):
        python = running.memory.conversations("acme", USER, **params)
        http = httpx.get(f"{running.url}/v1/users/{USER}/conversations", params=params,
                         headers={"Authorization": f"Bearer {key}"}, timeout=120).json()["conversations"]
        mcp = _mcp(running.url, key, {"user_id": USER, **params}, tool="conversations")["conversations"]
        rc = main(["--server", running.url, "conversations", "--tenant", "acme", "--user", USER, "--json",
                   *(["--limit", "1"] if params else [])])
        cli = json.loads(capsys.readouterr().out)
        assert rc == 0 and python == http == mcp == cli, (python, http, mcp, cli)
    assert [c["conversation_id"] for c in python] == ["c2"]  # the one spoken in last
    everything = running.memory.conversations("acme", USER)
    assert [(c["conversation_id"], c["messages"]) for c in everything] == [("c2", 1), ("c1", 2)]
    assert everything[1]["opening"] == "I prefer green tea in the morning"
