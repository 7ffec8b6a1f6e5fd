"""Which process answers the served store's HTTP port: the replica itself (direct) or Ray Serve's proxy.

Through the proxy, every request takes one more hop (client → proxy actor
→ replica actor, and the answer back the same way); on a 2-core machine that
hop alone costs about as much as a search. Ray Serve 2.60's *direct
ingress* (experimental, switched on by environment variables read when the
Serve controller and each replica start) lets the ingress replica run its
own HTTP server on a port the controller hands out from a range: here the
range is ``[port, port + replicas)``, so one replica answers on the
configured port and clients use the same URL as through the proxy. Serve
still starts its proxy on the head node; it is moved to a free port of its
own (it forwards to the same replicas).

``auto`` chooses direct for one replica on a local Ray and the proxy
otherwise: several replicas behind one URL, replicas that come and go
(``--max-replicas``: a direct replica's port is fixed), or replicas on other
nodes of a cluster (a direct replica listens on the node it was placed on),
need the proxy's balancing.

A direct replica binds its port with ``SO_REUSEADDR`` (:func:`reuse_address`;
Ray Serve binds it without): the connections a killed server leaves behind
(``TIME_WAIT``, ``FIN_WAIT2`` for as long as a client keeps its end) then do
not keep a restarted server off its port for a minute.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass

import httpx

from events.errors import InvalidInputError
from palimpsest.server.ports import free_port, is_free
from palimpsest.server.settings import INGRESS, ServeSettings

READY_SECONDS = 60.0
# A port still held when the server starts is waited for this long: a server killed a moment ago lets go of
# it within a second or two (its guard ends its processes, palimpsest.server.guard).
PORT_WAIT_SECONDS = 15.0


@dataclass(frozen=True)
class Plan:
    mode: str  # "direct" or "proxy"
    proxy_port: int  # where Serve's own HTTP proxy listens
    replica_urls: tuple[str, ...]  # direct: each replica's URL (the first is the settings' URL); proxy: none
    env: dict[str, str]  # environment of the Serve controller and the replicas


def mode(settings: ServeSettings) -> str:
    if settings.ingress not in INGRESS:
        raise InvalidInputError([("ingress", f"{settings.ingress!r}; choose one of {', '.join(INGRESS)}")],
                                what="serve settings")
    if settings.ingress == "direct" and settings.autoscaled:
        raise InvalidInputError([("ingress", "direct serves a fixed number of replicas (one port each); with "
                                             "--max-replicas use --ingress proxy (or auto)")], what="serve settings")
    if settings.ingress != "auto":
        return settings.ingress
    direct = settings.replicas == 1 and not settings.autoscaled and not os.environ.get("RAY_ADDRESS")
    return "direct" if direct else "proxy"


def direct_env(settings: ServeSettings) -> dict[str, str]:
    """What the Serve controller and the replicas must see for direct ingress on ``[port, port + replicas)``."""
    return {
        "RAY_SERVE_ENABLE_DIRECT_INGRESS": "1",
        "RAY_SERVE_DIRECT_INGRESS_MIN_HTTP_PORT": str(settings.port),
        "RAY_SERVE_DIRECT_INGRESS_MAX_HTTP_PORT": str(settings.port + settings.replicas),  # exclusive
        # no load balancer to deregister from: a stopping replica drains its in-flight requests, no more
        "RAY_SERVE_DIRECT_INGRESS_MIN_DRAINING_PERIOD_S": "0",
        # a replica restarted after a crash takes its port back at once (the range holds no spare)
        "RAY_SERVE_PORT_QUARANTINE_S": "0",
        # the app on the replica's own event loop, beside its HTTP server: no hand-over between two loops
        # (threads) for each request and each message of its answer; the routes that block run in the
        # app's thread pool either way
        "RAY_SERVE_RUN_USER_CODE_IN_SEPARATE_THREAD": "0",
        # admission at the entry of the replica's HTTP server, before Serve's own per-request work: a refusal
        # costs what it answers, not a request's bookkeeping (on the same loop as the app, as the gates need)
        "RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH": "palimpsest.server.admission_http:entry_middlewares",
    }


# Serve's own defaults of the direct ingress switches that change a replica or proxy beyond the direct ingress
DIRECT_OFF = {"RAY_SERVE_ENABLE_DIRECT_INGRESS": "0", "RAY_SERVE_RUN_USER_CODE_IN_SEPARATE_THREAD": "1",
              "RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH": ""}


def runtime_env(wanted: dict[str, str], inherited: dict[str, str]) -> dict[str, str]:
    """The variables the controller and replicas must be given (a runtime_env) to see ``wanted`` when every process
    of the Ray has ``inherited``: none if they are the same, else ``wanted`` and Serve's defaults in place of the
    inherited switches ``wanted`` leaves out (a store served through the proxy after one served directly)."""
    if wanted == inherited:
        return {}
    return {**{k: DIRECT_OFF[k] for k in inherited if k in DIRECT_OFF and k not in wanted}, **wanted}


def wait_for_ports(host: str, ports, seconds: float) -> list[int]:
    """Those of ``ports`` still taken after waiting up to ``seconds`` for them (said once on stderr)."""
    deadline = time.monotonic() + seconds
    taken = [p for p in ports if not is_free(host, p, reuse=True)]
    if taken and seconds > 0:
        print(f"port {', '.join(map(str, taken))} on {host} is still in use (a server stopped or killed a moment "
              f"ago lets go of it within seconds); waiting up to {seconds:g}s for it", file=sys.stderr, flush=True)
    while taken and time.monotonic() < deadline:
        time.sleep(0.2)
        taken = [p for p in taken if not is_free(host, p, reuse=True)]
    return taken


def plan(settings: ServeSettings, port_wait_s: float = 0.0) -> Plan:
    """The ingress of ``settings``, its ports checked free, waiting up to ``port_wait_s`` for them (a clear
    error naming the port otherwise)."""
    chosen = mode(settings)
    if settings.replicas < 1:
        raise InvalidInputError([("replicas", f"{settings.replicas}; give at least 1")], what="serve settings")
    if settings.max_replicas is not None and settings.max_replicas < settings.replicas:
        raise InvalidInputError([("max_replicas", f"{settings.max_replicas}; give at least --replicas "
                                                  f"({settings.replicas}), the fewest replicas kept")],
                                what="serve settings")
    ports = range(settings.port, settings.port + (settings.replicas if chosen == "direct" else 1))
    taken = wait_for_ports(settings.host, ports, port_wait_s)
    if taken:
        waited = f" (waited {port_wait_s:g}s)" if port_wait_s > 0 else ""
        raise InvalidInputError([("port", f"{', '.join(map(str, taken))} on {settings.host} already in use{waited}; "
                                          "stop what listens there or choose another --port")],
                                what="serve settings")
    if chosen == "proxy":
        return Plan("proxy", settings.port, (), {})
    base = settings.url.rsplit(":", 1)[0]
    return Plan("direct", free_port(settings.host), tuple(f"{base}:{p}" for p in ports), direct_env(settings))


class _ReusingSockets:
    """The ``socket`` module as Ray Serve's HTTP server code sees it: every socket it makes has SO_REUSEADDR
    (a listener still running keeps the port: that takes SO_REUSEPORT, which is not set)."""

    def __init__(self, module) -> None:
        self._module = module

    def __getattr__(self, name: str):
        return getattr(self._module, name)

    def socket(self, *args, **kwargs):
        sock = self._module.socket(*args, **kwargs)
        sock.setsockopt(self._module.SOL_SOCKET, self._module.SO_REUSEADDR, 1)
        return sock


def reuse_address() -> bool:
    """Make the HTTP servers Ray Serve starts in this process (a direct replica's) bind with SO_REUSEADDR; whether
    it could (False: this Ray Serve makes its sockets elsewhere, and a restart may wait for the port)."""
    from ray.serve._private import http_util

    current = getattr(http_util, "socket", None)
    if current is None or not hasattr(current, "socket"):
        return False
    if not isinstance(current, _ReusingSockets):
        http_util.socket = _ReusingSockets(current)
    return True


def wait_until_answering(plan: Plan, timeout: float = READY_SECONDS) -> None:
    """Return once every direct replica answers ``/health`` on its port (Serve reports the app ready a little
    before a replica's own server listens); an error naming the port if one never does."""
    deadline = time.monotonic() + timeout
    for url in plan.replica_urls:
        while True:
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise InvalidInputError([("ingress", f"no replica answers at {url} after {timeout:g}s; serve with "
                                                     "--ingress proxy, or check the replica log under /tmp/ray")],
                                        what="direct ingress")
            time.sleep(0.1)


def describe(running) -> str:
    """The line ``palimpsest serve`` prints about its ingress."""
    if running.ingress == "proxy":
        s = running.settings
        count = f"{s.replicas} to {s.max_replicas} replicas (autoscaled)" if s.autoscaled else f"{s.replicas} replica(s)"
        return f"ingress: Ray Serve's HTTP proxy on {running.url} forwards to {count}"
    extra = f" (replicas: {', '.join(running.replica_urls)})" if len(running.replica_urls) > 1 else ""
    return f"ingress: direct, the replica answers {running.url} itself (no proxy hop){extra}"
