"""The clients of one served store: the real ``mcp`` client over streamable HTTP (``/mcp``) and stdio
(``palimpsest mcp``), and the CLI in client mode (``palimpsest --server URL ...``).

One served store (local Ray, Ray Serve, hash embedder; shared with the modules of unit "served" in
tests/xdist_schedule.py, whose users are others) with two tenants:
the MCP client lists the tools, calls every one, gets a tool error naming the
field and its fix, is refused without a key, and tenant B's key reads none
of tenant A's data through any tool. The CLI prints through the server what
it prints in embedded mode, and its audit (sql, events, export) sees only the
key's tenant unless the key is an admin's.
"""

from __future__ import annotations

import json
import os
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx
import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from palimpsest.server.keys import KeyRing
from tests.integration.proxy_server import shared_bench

pytestmark = pytest.mark.integration
TOOLS = {"add_memory", "retrieve_memory", "get_user_profile", "create_memory", "link_memories", "search_memories",
         "build_context", "user_stats", "conversations"}  # get_user_profile and the last three: declared operations
REF = "2024-05-03T20:00:00+00:00"


@pytest.fixture(scope="module")
def served(ray_cluster, tmp_path_factory, request):
    # the store of unit "served" (tests/xdist_schedule.py), whose other modules keep to users of their own
    running = shared_bench(request, tmp_path_factory).running
    ring = KeyRing(Path(running.settings.store))
    keys = {t: ring.create(t)[0] for t in ("acme", "beta")} | {"admin": ring.create("ops", admin=True)[0]}
    return {"url": running.url, "keys": keys, "running": running}


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


def test_a_user_id_in_either_unicode_form_is_one_user_over_mcp(served):
    import unicodedata

    nfd, nfc = unicodedata.normalize("NFD", "josé"), unicodedata.normalize("NFC", "josé")

    async def run():
        async with _http_session(served["url"], served["keys"]["acme"]) as session:
            added = _data(await session.call_tool("add_memory", {
                "user_id": nfd, "user_input": "我在屋顶上养蜜蜂, I keep bees on the roof",
                "timestamp": "2024-05-01T09:00:00+00:00", "client_message_id": "bees-1"}))
            found = _data(await session.call_tool("retrieve_memory", {"user_id": nfc, "query": "蜜蜂 bees"}))
            return added, found

    added, found = anyio.run(run)
    assert added["created"] == 1 and "蜜蜂" in found["hits"][0]["text"]  # written as NFD, read as NFC


def test_mcp_without_a_valid_key_is_refused(served):
    for headers in ({}, {"Authorization": "Bearer pal_nope_nope"}):
        r = httpx.post(f"{served['url']}/mcp", headers={**headers, "Accept": "application/json, text/event-stream"},
                       json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, timeout=60)
        assert r.status_code == 401 and r.json()["problems"][0]["field"] == "authorization", r.text


AT = "2024-06-01T00:00:00+00:00"
USER = ["--tenant", "acme", "--user", "cli"]
COMPARED = [  # each command's embedded output must be printed through the server too
    ["search", *USER, "what does she drink", "-k", "3", "--at", AT],
    ["context", *USER, "where does the sister live", "--budget", "200", "--at", AT],
    ["episodes", *USER],
    ["episodes", *USER, "database", "-k", "2", "--json"],
    ["retention", *USER, "--at", AT],
    ["notes", "list", *USER, "--all"],
    ["profile", *USER, "--json"],
    ["tiers", *USER, "--at", AT],
    ["archive", "list", *USER],
    ["merges", *USER],
    ["feedback", "list", *USER],
]


@pytest.fixture(scope="module")
def cli_user(served):
    texts = ["I prefer green tea", "My sister lives in Oslo", "We decided to use PostgreSQL at work",
             "我喜欢周末去爬山"]
    r = httpx.post(f"{served['url']}/v1/users/cli/messages", headers={"Authorization": f"Bearer {served['keys']['acme']}"},
                   json={"messages": [{"text": t, "occurred_at": f"2024-05-0{i + 1}T09:00:00+00:00",
                                       "turn_id": f"D1:{i}", "client_message_id": f"cli-{i}"}
                                      for i, t in enumerate(texts)]}, timeout=60)
    assert r.status_code == 200, r.text
    return "cli"


def _embedded(monkeypatch, served):
    """Make every command module open the served store's own Memory (this process), not a new one."""
    import contextlib

    from palimpsest import cli, cli_graph

    for module in (cli, cli_graph):  # cli: the declared operations' subcommands (cmd_operation)
        monkeypatch.setattr(module, "open_store", lambda args, **_: contextlib.nullcontext(served["running"].memory))


def _lines(text: str, argv: list[str]) -> list[str]:
    # Ray forwards the replicas' log lines to this process's stdout; np.float32 breakdown values print with
    # fewer digits in-process than after their JSON round trip, so the search score lines are left out.
    return [line for line in text.splitlines() if " pid=" not in line
            and not (argv[0] == "search" and line.strip().startswith("score "))]


def test_cli_through_the_server_prints_what_the_embedded_cli_prints(served, cli_user, monkeypatch, capsys):
    from palimpsest import cli

    outputs = {}
    for argv in COMPARED:  # in pairs: a search between the two would rehearse working memory (tiers differ)
        # the touches the pairs before recorded are written now (a digest writes them first), not by the shards'
        # background flush between the two reads of a pair (tiers and retention read them)
        served["running"].memory.digest()
        with monkeypatch.context() as m:
            _embedded(m, served)
            assert cli.main(argv) == 0, argv
        outputs[" ".join(argv)] = embedded = capsys.readouterr().out
        with monkeypatch.context() as m:
            m.setenv("PALIMPSEST_API_KEY", served["keys"]["acme"])
            assert cli.main(["--server", served["url"], *argv]) == 0, argv
        assert _lines(capsys.readouterr().out, argv) == _lines(embedded, argv), argv
    assert "green tea" in outputs[" ".join(COMPARED[0])] and "爬山" in outputs[" ".join(COMPARED[5])] + \
        outputs[" ".join(COMPARED[4])]
    monkeypatch.setenv("PALIMPSEST_API_KEY", served["keys"]["acme"])
    assert cli.main(["--server", served["url"], "search", "--tenant", "beta", "--user", "cli", "tea"]) == 2
    assert "--tenant" in capsys.readouterr().err


def test_a_search_from_a_cold_shell(served, cli_user, capsys):
    import subprocess
    import time

    env = {**os.environ, "PALIMPSEST_API_KEY": served["keys"]["acme"], "PALIMPSEST_URL": served["url"]}
    timings = []
    for _ in range(3):
        started = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "palimpsest.cli", "search", *USER, "tea", "-k", "3"], env=env,
                             capture_output=True, text=True, timeout=120)
        timings.append(time.perf_counter() - started)
        assert out.returncode == 0 and "green tea" in out.stdout, out.stderr
    with capsys.disabled():
        print(f"\nsearch through the server from a cold process: {', '.join(f'{t:.2f}' for t in timings)} s")
    assert min(timings) < 5  # the figure is reported above; the bound only catches a return of the heavy imports


def _cli(served, key: str, *argv: str) -> tuple[int, str, str]:
    import subprocess

    env = {**os.environ, "PALIMPSEST_API_KEY": served["keys"].get(key, key)}
    out = subprocess.run([sys.executable, "-m", "palimpsest.cli", "--server", served["url"], *argv], env=env,
                         capture_output=True, text=True, timeout=120)
    return out.returncode, out.stdout, out.stderr


def test_the_served_audit_sees_only_the_keys_tenant_unless_admin(served, cli_user, tmp_path):
    import pyarrow.parquet as pq

    httpx.post(f"{served['url']}/v1/users/cli/messages", headers={"Authorization": f"Bearer {served['keys']['beta']}"},
               json={"messages": [{"text": "BETASECRET pin 4711", "occurred_at": AT}]}, timeout=60)
    tenants = "SELECT DISTINCT tenant FROM events ORDER BY tenant"
    code, out, _ = _cli(served, "acme", "sql", tenants, "--json")
    assert code == 0 and json.loads(out) == [{"tenant": "acme"}]
    code, out, _ = _cli(served, "acme", "sql", "SELECT count(*) AS n FROM events WHERE payload LIKE '%BETASECRET%'")
    assert code == 0 and out.splitlines() == ["n", "0"]
    code, _, err = _cli(served, "acme", "sql", "SELECT 1", "--tenant", "beta")
    assert code == 2 and "403" in err and "tenant" in err
    code, _, err = _cli(served, "acme", "sql", "DELETE FROM events")
    assert code == 2 and "read-only" in err
    code, out, _ = _cli(served, "admin", "sql", tenants, "--json")
    assert {"acme", "beta"} <= {r["tenant"] for r in json.loads(out)}
    code, out, _ = _cli(served, "acme", "events", "--user", "cli", "--kind", "message_recorded", "--json")
    assert code == 0 and [json.loads(r["payload"])["text"][:6] for r in json.loads(out)][:1] == ["I pref"]
    code, out, _ = _cli(served, "acme", "export", "--out", str(tmp_path / "acme"))
    table = pq.read_table(tmp_path / "acme" / "events.parquet")
    assert code == 0 and set(table.column("tenant").to_pylist()) == {"acme"} and "BETASECRET" not in str(
        table.column("payload").to_pylist())


def test_keys_through_the_server_need_an_admin_key(served):
    code, out, _ = _cli(served, "admin", "keys", "create", "--tenant", "gamma", "--label", "through the server")
    token = out.strip().splitlines()[-1]
    assert code == 0 and token.startswith("plm_")
    who = httpx.get(f"{served['url']}/v1/whoami", headers={"Authorization": f"Bearer {token}"}, timeout=60).json()
    assert who["tenant"] == "gamma" and not who["admin"]
    code, _, err = _cli(served, "acme", "keys", "create", "--tenant", "acme", "--admin")
    assert code == 2 and "403" in err and "admin" in err
    code, _, err = _cli(served, "acme", "keys", "list")
    assert code == 2 and "403" in err
    key_id = token.split("_")[1]
    code, out, _ = _cli(served, "admin", "keys", "revoke", key_id)
    assert code == 0 and "revoked" in out
    assert httpx.get(f"{served['url']}/v1/whoami", headers={"Authorization": f"Bearer {token}"},
                     timeout=60).status_code == 401


def test_the_load_benchmark_harness_on_a_small_dialogue(served, tmp_path):
    """``benchmarks.serve`` steps 2–5 against this module's server: two tenants, a 24-turn dialogue each."""
    from argparse import Namespace

    from benchmarks import dataset as ds
    from benchmarks.serve import measure

    turns = [json.loads(line) for line in (Path(__file__).resolve().parents[2] / "palimpsest" / "data" /
                                           "sample_dialogue.jsonl").read_text().splitlines() if line.strip()]
    session = [{"speaker": t.get("speaker") or t["role"], "dia_id": f"D1:{i + 1}", "text": t["text"]}
               for i, t in enumerate(turns)]
    qa = [{"question": "Which database did Maya choose?", "answer": "PostgreSQL", "evidence": ["D1:5"], "category": 4},
          {"question": "What is the side project called?", "answer": "Atlas", "evidence": ["D1:1"], "category": 4},
          {"question": "周末去爬山吗？", "answer": "yes", "evidence": ["D1:8"], "category": 4}]
    samples = [{"sample_id": f"bench-{n}", "qa": qa, "conversation": {
        "speaker_a": "Maya", "speaker_b": "Assistant", "session_1_date_time": "9:17 am on 4 March, 2024",
        "session_1": session}} for n in ("a", "b")]
    path = tmp_path / "locomo_small.json"
    path.write_text(json.dumps(samples), encoding="utf-8")
    args = Namespace(questions=None, levels=[(1, 5.0), (4, 10.0)], seconds=1.0)
    keys = {t: served["keys"][t] for t in ("acme", "beta")}
    report = measure(served["url"], served["running"].memory, keys, ds.load(path), args)
    assert report["load"] == {**report["load"], "messages": 48, "errors": 0}
    assert report["same_hits"]["same_hits"] == report["same_hits"]["questions"] == 6
    assert report["errors_total"] == 0, json.dumps(report["levels"])[:2000]
    once = report["exactly_once"]
    assert once["lost"] == 0 and once["duplicated"] == 0 and once["acknowledged"] >= 48
    assert all(lv["endpoints"]["search"]["n"] > 0 for lv in report["levels"])
    assert report["overhead_ratio_at_1_client"] > 0
