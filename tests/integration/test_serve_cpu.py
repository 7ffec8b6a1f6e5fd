"""``benchmarks.serve --cpu`` against a real served store (the store of unit "served": local Ray, Ray Serve, direct
ingress): the idle floor and a level of searches are accounted to the processes that spent them."""

from __future__ import annotations

import httpx
import pytest

from benchmarks import serve_cpu
from tests.integration.proxy_server import shared_bench

pytestmark = pytest.mark.integration
USER = "cpu-alice"  # the served store's other modules keep to users of their own (tests/integration/proxy_server.py)
WHEN = "2024-05-01T09:00:00+00:00"


@pytest.fixture(scope="module")
def served(ray_cluster, tmp_path_factory, request):
    bench = shared_bench(request, tmp_path_factory)  # the store of unit "served" (tests/xdist_schedule.py)
    headers = {"Authorization": f"Bearer {bench.key}"}
    messages = [{"text": t, "occurred_at": WHEN, "client_message_id": f"cpu-{i}"}
                for i, t in enumerate(["I prefer green tea in the morning", "我住在杭州。"])]
    r = httpx.post(f"{bench.running.url}/v1/users/{USER}/messages", json={"messages": messages}, headers=headers,
                   timeout=120)
    assert r.status_code == 200, r.text
    return bench.running.url, headers


def test_idle_cpu_is_counted_for_the_served_stores_processes(served):
    floor = serve_cpu.idle(1.0)
    roles = floor["ms_per_s"]
    assert {"replica", "shard", "serve controller", "gcs", "raylet", "load generator"} <= set(roles)
    assert floor["total_ms_per_s"] == pytest.approx(sum(roles.values()), abs=0.5)


def test_a_level_of_searches_is_spent_mostly_in_the_replica_and_the_shard(served):
    url, headers = served
    queries = ["what do I drink in the morning", "我住在哪里"]
    requests = [("search", "POST", f"/v1/users/{USER}/search", {"query": q, "k": 3}, headers, None)
                for q in queries * 10]
    lv = serve_cpu.level(url, requests, rate=20.0, seconds=1.0, idle_ms_per_s={}, after_s=0.2, connections=4)
    assert lv["answered"] == 20 and lv["refused_req_s"] == 0 and lv["other_errors"] == 0
    by_role = lv["by_role_ms"]
    assert by_role["replica"] > 0 and by_role["shard"] > 0
    # with no idle floor given, nothing is taken out
    assert lv["cpu_ms_per_request_above_idle"] == pytest.approx(lv["cpu_ms_per_request"], abs=0.05)
