"""An autoscaled served store (local Ray, Ray Serve's proxy, hash embedder): ``--replicas 2 --max-replicas 3``.

Serve runs the deployment with the autoscaling bounds and target the settings give, two replicas answer behind
one URL, and the per-key rate limit holds across them: one key's burst is cut at the shared bucket's size, not at
a bucket per replica.
"""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from palimpsest.server.admission import AdmissionSettings
from palimpsest.server.run import APP_NAME
from tests.serve_helpers import served_store

pytestmark = pytest.mark.integration
WHEN = "2024-05-01T09:00:00+00:00"
BURST, SENT = 12, 48


@pytest.fixture(scope="module")
def served(ray_cluster, tmp_path_factory):
    with served_store(tmp_path_factory.mktemp("autoscaled") / "store", replicas=2, max_replicas=3, rate_per_s=0.1,
                      burst=BURST, admission=AdmissionSettings(read_slots=3, write_slots=1)) as served:
        yield served


def test_two_to_three_replicas_behind_one_url_with_the_rate_limit_per_key_across_them(served):
    from ray.serve.context import _get_global_client

    running, auth = served
    assert running.ingress == "proxy"
    [deployment] = _get_global_client().get_serve_details()["applications"][APP_NAME]["deployments"].values()
    scaling = deployment["deployment_config"]["autoscaling_config"]
    assert (scaling["min_replicas"], scaling["max_replicas"], scaling["target_ongoing_requests"]) == (2, 3, 4)
    assert len([r for r in deployment["replicas"] if r["state"] == "RUNNING"]) >= 2

    with httpx.Client(base_url=running.url, timeout=60) as client:
        added = client.post("/v1/users/alice/messages", headers=auth, json={"messages": [
            {"text": "alice drinks green tea", "occurred_at": WHEN}]})
        assert added.status_code == 200, added.text
    timed = {part.partition(";dur=")[0] for part in added.headers["server-timing"].split(", ")}
    assert {"admit", "encode", "shard", "total"} <= timed  # timed in the replica, through Serve's proxy

    def search(_: int) -> int:
        with httpx.Client(base_url=running.url, timeout=60) as c:
            return c.post("/v1/users/alice/search", headers=auth, json={"query": "what does alice drink"}).status_code

    with ThreadPoolExecutor(8) as pool:
        codes = Counter(pool.map(search, range(SENT)))
    # One bucket for the key, whichever replica answers: the burst (less the ingest's token) plus what the rate
    # refills meanwhile, never a burst per replica; the rest is refused: 429, or 503 when a loaded machine makes
    # admission refuse first (a request's predicted wait past its budget).
    assert set(codes) <= {200, 429, 503}, codes
    assert BURST // 2 <= codes[200] <= BURST + 4, codes
    assert codes[429] + codes[503] >= SENT - BURST - 4 and codes[429] > 0, codes
