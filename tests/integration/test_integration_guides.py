"""The integration guides run as written: the Python blocks of each page, in order, in a fresh process on a store
of its own (the packaged encoder), the Agents SDK one against the scripted chat server, the proxy one against
`palimpsest serve` started as its page says (a Ray of its own), with the scripted chat server upstream.

The LangGraph and Agents SDK pages' processes join the module's local Ray through ``RAY_ADDRESS``, as a program
does on a machine that runs one (``actors.ray_init.ensure_ray``): starting a local Ray is seconds of each run, and
a store's own start of one is run by the getting-started page (tests/unit/test_docs.py), the wheel and the
served-store tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import ray

from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.serve_helpers import free_port, stderr_tail
from tests.unit.test_docs import DOCS, ROOT, python_blocks

pytestmark = [pytest.mark.integration, pytest.mark.model]


def run_page(page: str, cwd: Path, **env: str) -> str:
    blocks = python_blocks(DOCS / "guides" / page)
    assert blocks, f"{page} has no Python block"
    script = cwd / "example.py"
    script.write_text("\n\n".join(blocks), encoding="utf-8")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "PYTHONPATH": str(ROOT), **env}
    run = subprocess.run([sys.executable, str(script)], cwd=cwd, env=env, capture_output=True, text=True,
                         timeout=900)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-4000:]
    return run.stdout


def shared_ray() -> dict[str, str]:
    """The environment that has a page's process join this module's Ray."""
    return {"RAY_ADDRESS": ray.get_runtime_context().gcs_address}


def test_the_langgraph_store_guide_runs_and_recalls_across_threads(ray_cluster, tmp_path):
    pytest.importorskip("langgraph")
    out = run_page("langgraph-store.md", tmp_path, **shared_ray()).splitlines()
    recalls = [line for line in out if line.startswith("t2 recalls:")]
    assert "'Alice is vegetarian and avoids mushrooms'" in recalls[0].split("[", 1)[1].split(",")[0]
    assert recalls[1].startswith("t2 recalls: ['爱丽丝住在杭州'")
    assert "city: 爱丽丝搬到了上海 version 2" in out
    assert any(line.startswith("provenance: ['created_at', 'event_ids', 'memory_id', 'note_id'") for line in out)


def test_the_agents_session_guide_runs_and_the_second_session_is_given_the_first_ones_memory(ray_cluster, tmp_path):
    pytest.importorskip("agents")

    def answer(body: dict) -> Reply:
        told = " ".join(m["content"] for m in body["messages"] if m["role"] == "system")
        return Reply.text("Avoid anything with peanuts." if "peanuts" in told else "Noted.")

    with FakeOpenAI(responder=answer) as server:
        out = run_page("agents-session.md", tmp_path, AGENT_BASE_URL=server.base_url, OPENAI_API_KEY="test-key",
                       AGENT_MODEL="fake-model", OPENAI_AGENTS_DISABLE_TRACING="1", **shared_ray()).splitlines()
        friday = server.requests[-1].body["messages"]
    printed = [line for line in out if line.startswith(("monday", "friday"))]  # (the store's log lines aside)
    assert printed == ["monday: Noted.", "friday: Avoid anything with peanuts.",
                       "friday holds 2 items: ['user', 'assistant']"]
    recalled = [m["content"] for m in friday if m["role"] == "system"][1]
    assert recalled.startswith("What you remember about this user") and "allergic to peanuts" in recalled
    assert friday[-1] == {"role": "user", "content": "Which snacks should I avoid?"}


def test_the_proxy_guide_runs_against_a_server_started_as_the_page_says(tmp_path, capsys):
    pytest.importorskip("openai")
    from palimpsest.cli import main
    from palimpsest.server.routes_proxy import CONTEXT_HEADER

    def answer(body: dict) -> Reply:  # a chat completion's system messages, a response's instructions
        told = body.get("instructions") or " ".join(m["content"] for m in body.get("messages", [])
                                                    if m["role"] == "system")
        return Reply.text("Avoid anything with peanuts." if "peanuts" in told else "Noted.")

    with FakeOpenAI(responder=answer) as upstream:
        port, store = free_port(), tmp_path / "chat-store"
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "PYTHONPATH": str(ROOT),
               "PALIMPSEST_PROXY_UPSTREAM_URL": upstream.base_url, "PALIMPSEST_PROXY_UPSTREAM_API_KEY": "sk-upstream"}
        cli = [sys.executable, "-m", "palimpsest.cli", "--store", str(store)]
        errors = tmp_path / "serve.stderr"
        with errors.open("w") as err:
            server = subprocess.Popen([*cli, "serve", "--port", str(port)], stdout=subprocess.PIPE, stderr=err,
                                      text=True, env=env, cwd=tmp_path)
        try:
            said = ""
            while "memory proxy" not in said:  # after the URL: where the proxy forwards
                said = server.stdout.readline()
                assert said, f"palimpsest serve exited before it said where its proxy forwards: {stderr_tail(errors)}"
            assert f"http://127.0.0.1:{port}/v1" in said and upstream.base_url in said, said
            # the page's `palimpsest --store chat-store keys create --tenant acme`, through the CLI's main() in this
            # process (it needs no Ray; the served process reads the key log at each check)
            assert main(["--store", str(store), "keys", "create", "--tenant", "acme"]) == 0
            key = capsys.readouterr().out.splitlines()[-1]
            out = run_page("proxy.md", tmp_path, PALIMPSEST_URL=f"http://127.0.0.1:{port}",
                           PALIMPSEST_API_KEY=key, CHAT_MODEL="fake-model").splitlines()
        finally:
            server.send_signal(signal.SIGTERM)
            assert server.wait(timeout=300) == 0, stderr_tail(errors)
    assert out[:2] == ["monday: Noted.", "friday: Avoid anything with peanuts."]
    assert out[2] in ("streamed: Avoid anything with peanuts.", "streamed: Noted.")
    assert out[3] == "weekend: Avoid anything with peanuts."
    assert out[4] in ("picnic: Avoid anything with peanuts.", "picnic: Noted.") and len(out) == 5
    friday = upstream.requests[1]
    assert friday.headers["authorization"] == "Bearer sk-upstream" and friday.body["model"] == "fake-model"
    system, memory, question = friday.body["messages"]
    assert memory["content"].startswith(CONTEXT_HEADER) and "allergic to peanuts" in memory["content"]
    assert question == {"role": "user", "content": "Which snacks should I avoid?"}
    assert upstream.requests[2].body["stream"] is True
    weekend, picnic = upstream.requests[3:]
    assert weekend.path == "/v1/responses" and weekend.body["input"] == "Which snacks are safe for me this weekend?"
    own, memory = weekend.body["instructions"].split("\n\n", 1)
    assert own == "You are a helpful assistant. Be brief." and memory.startswith(CONTEXT_HEADER)
    assert "allergic to peanuts" in memory
    assert picnic.body["stream"] is True and picnic.body["previous_response_id"].startswith("resp_")
