"""Starting and stopping a served store: the shard actors and the Serve application in front of them.

The process that runs :func:`start` owns the shard actors (it opened the
store); the replicas attach to them by name. Both start at once: a replica's
process start-up (seconds of imports) runs while the store opens, and its
``__init__`` waits for the store's rate limiter, which :func:`start` starts
once the shards are up, so a replica never starts a shard itself. :meth:`Running.stop` drains:
the Serve application is deleted (replicas finish their in-flight requests,
up to the deployment's graceful timeout), then the shards flush and close.

Two ingresses (:mod:`palimpsest.server.ingress`): *direct*, where the
replica itself answers HTTP on the port (Ray Serve's direct ingress; no hop
through the Serve proxy), and *proxy*, where Serve's HTTP proxy owns the
port and forwards each request to a replica. Clients use the same URL either way.

``palimpsest serve`` runs under a guard (:mod:`palimpsest.server.guard`): if
it is killed, the guard ends what it started, so a restart finds its port
free and no Ray process of the old one left; a port still held when it starts
is waited for (:func:`palimpsest.server.ingress.plan`).
"""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, wait

import structlog
from ray import serve

from actors.limiter import start_limiter, stop_limiter
from actors.ray_init import ensure_ray, local_env, local_ray_lost
from palimpsest.config import store_id
from palimpsest.server import ingress
from palimpsest.server.app import deployment
from palimpsest.server.guard import start_guard
from palimpsest.server.keys import KeyRing
from palimpsest.server.settings import ServeSettings

log = structlog.get_logger("palimpsest.server")
APP_NAME = "palimpsest"
ABANDON_WAIT_S = 30.0  # how long a failed start waits for its deployment thread to end
# how long ``palimpsest serve`` drains on a stop signal before it stops without the drain (Serve's replicas finish their
# requests within their graceful timeout, 20 s by default; systemd sends SIGKILL 90 s after SIGTERM by default)
STOP_WAIT_S = 60.0


class Running:
    def __init__(self, settings: ServeSettings, memory, limiter, plan: ingress.Plan) -> None:
        self.settings = settings
        self.memory = memory
        self.limiter = limiter  # the store's rate-limiter actor: lives while this handle does
        self.ingress = plan.mode
        self.url = settings.url  # what clients use, whichever the ingress
        self.replica_urls = plan.replica_urls
        self.docs_url = settings.url + "/docs"

    def stop(self) -> None:
        """Drain the HTTP side, then close the shards (their logs are durable at every acknowledgement)."""
        try:
            serve.delete(APP_NAME, _blocking=True)
            serve.shutdown()
        finally:
            try:
                self.memory.close()
            finally:
                stop_limiter(self.limiter)


def start(settings: ServeSettings, *, embedder: str | None = None, num_shards: int | None = None) -> Running:
    """Open (or create) the store, deploy the API in front of it and return once it answers."""
    from palimpsest.memory import Memory

    # a bad --ingress is refused before anything starts; a port still held is waited for (a server killed a
    # moment ago lets go of it within a second or two), then refused, naming it
    plan = ingress.plan(settings, port_wait_s=ingress.PORT_WAIT_SECONDS)
    ensure_ray(env=plan.env)
    # a local Ray started here has the ingress' environment in all its processes: then Serve's controller and the
    # replicas need no runtime_env of their own, and start in the workers Ray started ahead (imports done) instead
    # of a new process each (seconds of start-up)
    plan = dataclasses.replace(plan, env=ingress.runtime_env(plan.env, local_env()))
    # Serve's controller, then the application, start while the shards open: each replica is seconds of process
    # start-up (imports) before its __init__, which waits for the store's limiter, started below once the shards
    # are up (:func:`palimpsest.server.app.open_served`).
    abandoned = threading.Event()
    pool = ThreadPoolExecutor(2, thread_name_prefix="serve-start")
    controller = pool.submit(serve.start, http_options={"host": settings.host, "port": plan.proxy_port},
                             controller_options={"runtime_env": {"env_vars": plan.env}} if plan.env else {})
    deployed = pool.submit(_deploy, settings, plan, controller, abandoned)
    pool.shutdown(wait=False)  # the submitted starts run on; their results are read below
    try:
        memory = Memory.open(settings.store, num_shards=num_shards, embedder=embedder)
    except BaseException:
        _abandon(controller, abandoned, deployed)
        raise
    limiter = None
    try:
        # before any replica can attach; the handle is kept: a named actor without one is collected
        limiter = start_limiter(store_id(memory.path), settings.rate_per_s, settings.burst)
        deployed.result()  # raises what serve.start or serve.run raised
        ingress.wait_until_answering(plan)
    except BaseException:
        _abandon(controller, abandoned, deployed)
        memory.close()
        if limiter is not None:
            stop_limiter(limiter)
        raise
    return Running(settings, memory, limiter, plan)


def _deploy(settings: ServeSettings, plan: ingress.Plan, controller: Future, abandoned: threading.Event) -> None:
    """Deploy the application once Serve's controller runs, unless the start was given up meanwhile; returns once
    its replicas are ready."""
    controller.result()
    if not abandoned.is_set():
        serve.run(deployment(settings, plan.env), name=APP_NAME, route_prefix="/")


def _abandon(controller: Future, abandoned: threading.Event, deployed: Future) -> None:
    """Stop what the start began: no deployment after this, and Serve shut down once its controller is up (a
    replica waiting for the store goes with it, and a deployment waiting for that replica fails)."""
    abandoned.set()
    wait([controller])
    try:
        serve.shutdown()
    except Exception:  # noqa: BLE001  (the start's own error is the one to report)
        log.warning("serve_shutdown_failed", exc_info=True)
    if wait([deployed], timeout=ABANDON_WAIT_S).not_done:
        log.warning("serve_deploy_still_running", after_s=ABANDON_WAIT_S)


def _drained(stopper: threading.Thread) -> tuple[str, int] | None:
    """Wait for ``stopper`` (the drain); None once it is done, else why it is given up and the exit code: Ray's
    own processes ended (the stop signal reached every process of the service, as systemd's default
    ``KillMode=control-group`` sends it: 0, the stop asked for), or :data:`STOP_WAIT_S` passed (1). More stop
    signals meanwhile change nothing: Ctrl-C then SIGTERM is one clean stop."""
    deadline = time.monotonic() + STOP_WAIT_S
    while stopper.is_alive():
        lost = local_ray_lost()
        if lost:
            return f"Ray's own processes ({', '.join(lost)}) have ended, nothing is left to drain through", 0
        if time.monotonic() > deadline:
            return f"the drain still running after {STOP_WAIT_S:.0f} s", 1
        stopper.join(0.2)
    return None


def _exit(code: int) -> None:
    """End this process now, without the interpreter's exit handlers: Ray's would wait for processes that are gone
    or still draining. The guard's pipe closes with the process, and it ends what is left."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def serve_forever(settings: ServeSettings, *, embedder: str | None = None, num_shards: int | None = None) -> int:
    """``palimpsest serve``: start, print where, wait for Ctrl-C or SIGTERM, drain and close."""
    started = time.perf_counter()
    # the stop signals received, appended by the handler: it takes no lock (one that set a threading.Event while
    # this thread waited on it would hang for good when a second signal came during the first one's handler,
    # e.g. Ctrl-C pressed twice)
    stopping: list[int] = []
    start_guard()  # before Ray starts: whatever this process starts is ended if it is killed
    running = start(settings, embedder=embedder, num_shards=num_shards)
    for sig in (signal.SIGINT, signal.SIGTERM):  # after start: ray.init installs a SIGTERM handler of its own
        signal.signal(sig, lambda signum, _frame: stopping.append(signum))
    keys = [k for k in KeyRing(settings.store).listing() if not k["revoked_at"]]
    print(f"palimpsest serving {settings.store} at {running.url}  (API docs: {running.docs_url}, "
          f"OpenAPI: {running.url}/openapi.json) — ready in {time.perf_counter() - started:.1f}s", flush=True)
    print(f"memory inspector: {running.url}/ui (sign in with a tenant key)", flush=True)
    print(ingress.describe(running), flush=True)
    if settings.upstream is not None:
        print(f"memory proxy for OpenAI clients: base_url {running.url}/v1 (the key as api_key) -> "
              f"{settings.upstream.base_url}", flush=True)
    if not keys:
        print(f"no API keys yet: create one with `palimpsest --store {settings.store} keys create --tenant T`",
              flush=True)
    print("Ctrl-C or SIGTERM stops it (in-flight requests finish first)", flush=True)
    while not stopping:
        time.sleep(0.2)
    print("stopping: draining requests and closing the shards", flush=True)
    stopper = threading.Thread(target=running.stop, name="serve-stop", daemon=True)
    stopper.start()
    cut = _drained(stopper)
    if cut is not None:
        why, code = cut
        print(f"stopped without draining: {why}; requests still in flight were cut, every acknowledged write is "
              "already durable (the server's guard ends what is left of Ray)", flush=True)
        _exit(code)
    print("stopped", flush=True)
    return 0
