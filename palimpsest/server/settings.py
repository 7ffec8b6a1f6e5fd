"""How a store is served: where, by how many replicas, through which ingress, the per-key limits and admission."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from palimpsest.server.admission import AdmissionSettings

if TYPE_CHECKING:
    from palimpsest.server.proxy_upstream import Upstream

DEFAULT_PORT = 8765
INGRESS = ("auto", "direct", "proxy")


@dataclass(frozen=True)
class ServeSettings:
    store: str
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    replicas: int = 1
    # above ``replicas``: Ray Serve adds replicas up to this many while each is busier than its admission's slots
    # (and removes them again once idle); None: always ``replicas``
    max_replicas: int | None = None
    rate_per_s: float = 100.0  # per key across every replica, on average; 0 turns the limit off
    burst: int = 200
    max_body_bytes: int = 4 * 1024 * 1024
    # "direct": the replica answers HTTP on ``port`` itself (no proxy hop; replica i on port + i);
    # "proxy": Ray Serve's HTTP proxy on ``port`` forwards to the replicas; "auto": direct for one replica
    # on a local Ray, proxy otherwise (one URL balanced over several replicas or nodes)
    ingress: str = "auto"
    # where the OpenAI-compatible memory proxy (/v1/chat/completions) forwards to; None: no proxy
    # (``palimpsest serve`` reads it from the environment: Upstream.from_env)
    upstream: Upstream | None = None
    # each replica's admission: slots for reads, writes and proxy calls, the queue, the wait budget
    admission: AdmissionSettings = field(default_factory=AdmissionSettings)
    # concurrent ingests of a busy shard sent as one batch (palimpsest.server.ingest_batches); False: one by one
    merge_writes: bool = True

    @property
    def autoscaled(self) -> bool:
        return self.max_replicas is not None and self.max_replicas > self.replicas

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::") else self.host
        return f"http://{host}:{self.port}"
