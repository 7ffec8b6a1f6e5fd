"""Admission on a served store (local Ray, Ray Serve, direct ingress, hash embedder): one write slot, no queue.

A burst of concurrent ingests saturates the write slot: the excess is
refused 503 with ``Retry-After`` and the API's error body, every refused
batch left nothing in the log and every acknowledged one is there exactly
once; searches sent during the burst are all answered (reads have slots of
their own). A refusal is answered at the entry of the replica's HTTP server,
before Ray Serve's own per-request work (its ``X-Request-ID`` header is on
the admitted answers only), without a wait.
"""

from __future__ import annotations

import threading
from collections import Counter

import httpx
import pytest

from palimpsest.server.admission import AdmissionSettings
from tests.serve_helpers import served_store

pytestmark = pytest.mark.integration
WHEN = "2024-05-01T09:00:00+00:00"
WRITERS, BATCH = 12, 40


@pytest.fixture(scope="module")
def served(ray_cluster, tmp_path_factory):
    admission = AdmissionSettings(read_slots=4, write_slots=1, queue=0)
    with served_store(tmp_path_factory.mktemp("admission") / "store", rate_per_s=0, admission=admission) as served:
        yield served


def _batch(writer: int) -> list[dict]:
    return [{"text": f"writer {writer} says fact number {i} about green tea", "occurred_at": WHEN,
             "client_message_id": f"w{writer}-{i}"} for i in range(BATCH)]


def test_a_write_burst_is_refused_past_its_slot_reads_go_on_and_nothing_refused_is_written(served):
    running, auth = served
    with httpx.Client(base_url=running.url, timeout=60) as client:
        seed = client.post("/v1/users/alice/messages", headers=auth, json={"messages": [
            {"text": "alice drinks green tea", "occurred_at": WHEN, "client_message_id": "seed"}]})
        assert seed.status_code == 200, seed.text

    writes: dict[int, httpx.Response] = {}
    searches: list[int] = []
    start_together = threading.Barrier(WRITERS + 1)
    burst_over = threading.Event()

    def write(i: int) -> None:
        with httpx.Client(base_url=running.url, timeout=60) as c:
            start_together.wait()
            writes[i] = c.post("/v1/users/alice/messages", headers=auth, json={"messages": _batch(i)})

    def search() -> None:
        with httpx.Client(base_url=running.url, timeout=60) as c:
            start_together.wait()
            while not burst_over.is_set() or not searches:
                searches.append(c.post("/v1/users/alice/search", headers=auth,
                                       json={"query": "what does alice drink", "k": 3}).status_code)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(WRITERS)]
    reader = threading.Thread(target=search)
    for t in threads + [reader]:
        t.start()
    for t in threads:
        t.join()
    burst_over.set()
    reader.join()

    refused = {i: r for i, r in writes.items() if r.status_code == 503}
    acked = {i: r for i, r in writes.items() if r.status_code == 200}
    assert len(refused) + len(acked) == WRITERS, Counter(r.status_code for r in writes.values())
    assert refused and acked
    assert all("x-request-id" in r.headers for r in acked.values())
    for r in refused.values():
        body = r.json()
        assert r.headers["Retry-After"] == "1" and "x-request-id" not in r.headers  # refused before Serve's work
        assert body["error"] == "overloaded" and "writes" in body["message"] and "nothing was done" in body["message"]
        assert body["problems"][0]["field"] == "request" and "Retry-After" in body["problems"][0]["fix"]
    assert searches and set(searches) == {200}

    stored = Counter(e.event.client_message_id for e in running.memory.events("acme", "alice",
                                                                              kinds=["message_recorded"]))
    for i in acked:
        assert all(stored[m["client_message_id"]] == 1 for m in _batch(i))
    for i in refused:
        assert not any(stored[m["client_message_id"]] for m in _batch(i))  # nothing half-written


def test_health_reports_the_gates_and_is_never_held_back(served):
    running, _ = served
    gates = httpx.get(running.url + "/health", timeout=10).json()["admission"]
    assert gates["write"]["slots"] == 1 and gates["write"]["refused"] >= 1 and gates["read"]["slots"] == 4
    assert gates["write"]["refused_by"]["queue_full"] == gates["write"]["refused"]  # no queue: refused at once


def _timing(response: httpx.Response) -> dict[str, float]:
    return {name: float(ms) for name, _, ms in (p.partition(";dur=") for p in
                                                response.headers["server-timing"].split(", "))}


def test_each_answer_says_where_its_time_went(served):
    running, auth = served
    with httpx.Client(base_url=running.url, timeout=60) as client:
        wrote = client.post("/v1/users/bob/messages", headers=auth, json={"messages": [
            {"text": "bob plays chess on sundays", "occurred_at": WHEN, "client_message_id": "timing-1"}]})
        found = client.post("/v1/users/bob/search", headers=auth, json={"query": "chess", "k": 3})
        context = client.post("/v1/users/bob/context", headers=auth, json={"query": "what does bob play?"})
        unknown = client.post("/v1/users/nobody/search", headers=auth, json={"query": "chess"})
        health = client.get("/health")
    for answer in (wrote, found, context):
        assert answer.status_code == 200, answer.text
        timing = _timing(answer)
        assert list(timing)[0] == "admit" and {"encode", "shard", "total"} <= set(timing), timing
        assert all(ms >= 0 for ms in timing.values())
        assert timing["total"] >= timing["admit"] + timing["encode"] + timing["shard"]  # one after the other
    for read in (found, context):  # over the shard's read channel: the shard's own wait and read, within its call
        timing = _timing(read)
        assert timing["shard"] >= timing["shard_lock"] + timing["shard_read"] > 0, timing
        # the CPU the query's encode and the shard's read spent: never more than their time (0.1 ms units)
        assert 0 <= timing["encode_cpu"] <= timing["encode"] + 0.1, timing
        assert 0 < timing["shard_read_cpu"] <= timing["shard_read"] + 0.1, timing
    assert unknown.status_code == 404 and set(_timing(unknown)) == {"admit", "total"}  # refused before any shard
    assert "server-timing" not in health.headers  # never admitted, never timed
