"""A replica starts beside the server's own open of the store and attaches to its shards once they are up.

:func:`palimpsest.server.run.start` deploys the application while the store
opens; each replica's ``__init__`` waits for the store's rate limiter, which
the server starts once the shards are up, and a stopped server takes its
limiter with it, so a server started again on the same store is waited for.
"""

from __future__ import annotations

import threading
import time

import httpx
import pytest
import ray

from actors.limiter import limiter_name, start_limiter, stop_limiter, wait_for_limiter
from actors.ray_init import NAMESPACE
from events.errors import StoreError
from palimpsest.config import store_id
from tests.serve_helpers import served_store


def _exists(name: str) -> bool:
    try:
        ray.get_actor(name, namespace=NAMESPACE)
    except ValueError:
        return False
    return True


def test_a_replica_waits_for_the_limiter_and_is_told_why_when_it_never_comes(ray_cluster):
    sid = "test-wait-" + str(time.time_ns())
    with pytest.raises(StoreError, match="did not finish opening the store within 0.3s"):
        wait_for_limiter(sid, timeout=0.3)
    started: list[float] = []
    waiter = threading.Thread(target=lambda: (wait_for_limiter(sid, timeout=60), started.append(time.monotonic())))
    waiter.start()
    time.sleep(0.5)
    assert not started  # still waiting: no limiter yet
    actor = start_limiter(sid, 10.0, 10)
    waiter.join(timeout=60)
    assert started
    stop_limiter(actor)
    deadline = time.monotonic() + 30
    while _exists(limiter_name(sid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _exists(limiter_name(sid))


def test_a_store_served_twice_in_turn_answers_each_time_and_its_limiter_goes_with_each_stop(ray_cluster, tmp_path):
    store = tmp_path / "store"
    name = limiter_name(store_id(store))
    for _ in range(2):
        with served_store(store) as (running, auth):
            assert _exists(name)
            client = httpx.Client(base_url=running.url, headers=auth, timeout=60)
            assert client.post("/v1/users/maya/messages",
                               json={"messages": [{"text": "I moved to Lisbon", "occurred_at": "2024-05-01T09:00:00Z"}]},
                               ).status_code in (200, 201)
            assert client.post("/v1/users/maya/search", json={"query": "Lisbon"}).json()["hits"]
        assert not _exists(name)
