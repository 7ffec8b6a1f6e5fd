"""The memory proxy's test bench: a served store (Ray Serve, the hash encoder) whose upstream is the project's
scripted OpenAI-compatible server, a key of tenant ``acme``, and a wait for what the proxy records after answering.
The modules of unit ``served`` (tests/xdist_schedule.py: the proxy's, the MCP and CLI clients', the declared
operations') share one (:func:`shared_bench`); each keeps to users of its own."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from palimpsest.server.keys import KeyRing
from palimpsest.server.proxy_upstream import Upstream
from palimpsest.server.run import Running, start
from palimpsest.server.settings import ServeSettings
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.integration.shared_setup import shared
from tests.serve_helpers import free_port

TENANT = "acme"


@dataclass
class Bench:
    running: Running
    upstream: FakeOpenAI
    key: str

    @property
    def base_url(self) -> str:
        """What an OpenAI client's ``base_url`` is set to."""
        return self.running.url + "/v1"

    @property
    def memory(self):
        return self.running.memory

    def conversation(self, user: str, conversation: str, count: int, timeout_s: float = 60.0) -> list[dict]:
        """The conversation's messages once it holds ``count`` of them (the proxy records after answering)."""
        deadline = time.monotonic() + timeout_s
        while True:
            rows = self.memory.conversation(TENANT, user, conversation)
            if len(rows) >= count or time.monotonic() > deadline:
                assert len(rows) == count, [(r["role"], r["text"]) for r in rows]
                return rows
            time.sleep(0.05)

    def until(self, check, timeout_s: float = 60.0):
        """``check()``'s value once it is truthy (what the proxy records after a call's messages, such as the
        reinforcement of the memories its reply used, lands a moment after them)."""
        deadline = time.monotonic() + timeout_s
        while not (value := check()) and time.monotonic() < deadline:
            time.sleep(0.05)
        return value

    def sent(self, index: int = -1) -> list[dict]:
        """The messages the upstream received in its ``index``-th request."""
        return self.upstream.requests[index].body["messages"]


@contextlib.contextmanager
def bench(store: Path, *, reply: str = "Noted.") -> Iterator[Bench]:
    """A served store proxying to a scripted upstream that answers ``reply`` once its script is used up."""
    with FakeOpenAI(responder=lambda body: Reply.text(reply)) as upstream:
        settings = ServeSettings(store=str(store), port=free_port(), rate_per_s=0,
                                 upstream=Upstream(upstream.base_url, api_key="upstream-secret"))
        running = start(settings, embedder="hash", num_shards=2)
        try:
            yield Bench(running, upstream, KeyRing(store).create(TENANT)[0])
        finally:
            running.stop()


def shared_bench(request, tmp_path_factory) -> Bench:
    """The bench of the modules of unit ``served`` (tests/xdist_schedule.py): started by the first of them, stopped
    after the last (tests/integration/shared_setup.py); one store start instead of one per module."""
    return shared(request, "served",
                  lambda stack: stack.enter_context(bench(tmp_path_factory.mktemp("proxy") / "store")))
