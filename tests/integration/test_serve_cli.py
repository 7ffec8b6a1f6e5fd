"""`palimpsest serve` as a user runs it, with the real embedding model: same hits as the embedded API, clean stop.

The embedded store answers a handful of questions first (at a fixed "now", on the module's shared local Ray),
then is closed; `palimpsest keys create` prints a key, `palimpsest serve`
starts in its own process (`python -m palimpsest.cli`, its own local Ray), prints its URL and docs, and
must answer the same memory ids in the same order; SIGINT and SIGTERM back to back, each sent to its whole
process group as a terminal's Ctrl-C and ``timeout`` send them, stop it with exit code 0 after draining, and
leave none of its processes behind (Ray's start in groups of their own: the signal reaches the server alone,
which stops them). The key and the audit after the stop go through the CLI's main() in this process
(neither needs Ray); the served process is the end-to-end proof of the entry point.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from palimpsest import Memory
from palimpsest.cli import main
from palimpsest.server.guard import descendants, left_after
from tests.serve_helpers import free_port, stderr_tail

pytestmark = [pytest.mark.integration, pytest.mark.model]
ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "palimpsest" / "data" / "sample_dialogue.jsonl"
NOW = "2024-06-01T00:00:00+00:00"
QUESTIONS = ["Which database did Maya choose?", "What web framework does Maya prefer?",
             "What is the side project called?", "When does Maya like to work?", "Who is in the climbing club?"]


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_served_store_answers_like_the_embedded_api_and_stops_cleanly(ray_cluster, tmp_path, capsys):
    from datetime import datetime

    store = tmp_path / "store"
    messages = [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]
    with Memory.open(store, num_shards=2) as mem:
        mem.add_messages(messages)
        now = datetime.fromisoformat(NOW)
        embedded = {q: [h.memory_id for h in mem.search("demo", "maya", q, k=5, now=now)] for q in QUESTIONS}
    assert all(len(ids) == 5 for ids in embedded.values())

    rc, out, err = _cli(capsys, "--store", str(store), "keys", "create", "--tenant", "demo")
    assert rc == 0, err
    key = out.strip().splitlines()[-1]
    assert key.startswith("plm_") and " " not in key

    port = free_port()
    errors = tmp_path / "serve.stderr"
    with errors.open("w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "palimpsest.cli", "--store", str(store), "serve", "--port",
                                 str(port)], stdout=subprocess.PIPE, stderr=err, text=True, env=_env(), cwd=ROOT,
                                start_new_session=True)  # a process group of its own, as a shell's job has
    try:
        first = ""
        while "serving" not in first:  # Ray may print a line of its own first
            first = proc.stdout.readline()
            assert first, f"palimpsest serve exited before it printed its URL: {stderr_tail(errors)}"
        assert f"http://127.0.0.1:{port}" in first and f"http://127.0.0.1:{port}/docs" in first, first
        client = httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {key}"},
                              timeout=120)
        assert client.get("/openapi.json").json()["info"]["version"] == "v1"
        timings = []
        for q in QUESTIONS:
            started = time.perf_counter()
            r = client.post("/v1/users/maya/search", json={"query": q, "k": 5, "now": NOW})
            timings.append(time.perf_counter() - started)
            assert r.status_code == 200, r.text
            assert [h["memory_id"] for h in r.json()["hits"]] == embedded[q], q
        assert client.get("/v1/users/maya/search").status_code == 405
        started = descendants(proc.pid)
        assert len(started) > 5  # its guard and its local Ray
    finally:  # Ctrl-C then SIGTERM at once to its process group, as an impatient user or `timeout` may: one stop
        os.killpg(proc.pid, signal.SIGINT)
        os.killpg(proc.pid, signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr_tail(errors)
    assert out.rstrip().endswith("stopped"), out[-400:]  # drained, not stopped without draining
    assert left_after(started, 10.0) == {}  # its guard, the last, exits as it ends
    rc, out, _ = _cli(capsys, "--store", str(store), "events", "--tenant", "demo", "--user", "maya", "--kind",
                      "message_recorded", "--json")
    assert rc == 0 and len(json.loads(out)) == len(messages)
    print(f"served search latency: median {sorted(timings)[len(timings) // 2] * 1000:.0f} ms "
          f"(max {max(timings) * 1000:.0f} ms, real model)")  # after the CLI calls, whose output capsys takes
