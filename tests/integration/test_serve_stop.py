"""``palimpsest serve`` stopped as systemd stops a service by default (``KillMode=control-group``): SIGTERM to the
server and to every process it started at once, Ray's own included.

Ray's agents and raylet end on that signal, so nothing is left to drain through: before, the server waited for
good on a Ray that was gone (killed by systemd 90 s later) while Ray's workers outlived it. It must stop once
its raylet is gone, without a drain, with exit code 0, say why, leave no process behind (its guard, which
ignores the signal, ends what Ray left), and every write it acknowledged must be in the store when it is
opened again.
"""

from __future__ import annotations

import httpx
import pytest

from benchmarks.chaos_probe import LEFT_WAIT_S, Server, auth, create_store
from palimpsest import Memory
from palimpsest.server.guard import descendants, left_after
from palimpsest.server.ports import free_port

pytestmark = pytest.mark.integration


def test_a_stop_sent_to_every_process_of_the_server_ends_it_and_leaves_nothing(ray_cluster, tmp_path):
    store = tmp_path / "store"
    key = create_store(store)["acme"]
    server = Server(store, free_port())
    try:
        assert server.ready(), server.lines[-20:]
        with httpx.Client(base_url=server.url, timeout=60) as client:
            r = client.post("/v1/users/maya/messages", headers=auth(key), json={"messages": [
                {"text": "I moved to Lisbon", "occurred_at": "2024-05-01T09:00:00Z"},
                {"text": "我搬到了里斯本", "occurred_at": "2024-05-02T09:00:00Z"}]})
            assert r.status_code == 200, r.text
        started = descendants(server.proc.pid)
        assert len(started) > 5  # its guard and its local Ray
        rc = server.stop(every=True)
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
    said = [line for line in server.lines if line.startswith("stopped")]
    assert rc == 0, server.lines[-20:]
    assert said and said[-1].startswith("stopped without draining: Ray's own processes ("), server.lines[-5:]
    assert left_after(started, LEFT_WAIT_S) == {}
    with Memory.open(store) as mem:  # nothing acknowledged was lost
        assert {h.text for h in mem.search("acme", "maya", "Lisbon", k=5)} >= {"I moved to Lisbon"}
        assert len(mem.search("acme", "maya", "里斯本", k=5)) >= 1
