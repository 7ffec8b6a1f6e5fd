"""Connecting to Ray: a local Ray by default, or a running cluster.

The embedded default is a local Ray with ``num_cpus`` = the machine's cores
and no dashboard. Set ``RAY_ADDRESS`` (or pass ``address``) to use a running
cluster, e.g. one started from ``ray_cluster.yaml``.

The local Ray keeps Ray's own security defaults: token authentication is on
(Ray creates ``~/.ray/auth_token`` once per user) unless ``RAY_AUTH_MODE``
says otherwise. Only Ray's notice that it turned that default on is left
out of the output; every other Ray warning, and the one that authentication
is *off*, still shows.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys

import ray
from ray._private import ray_constants, services

NAMESPACE = "palimpsest"
# Ray starts its workers at nice 15, below the driver: on a small machine a shard actor then waits behind the
# driver's own threads (the encoder's pool, Ray's I/O) for the core its query needs. The shards are this store's
# servers, so they run at the driver's priority. A cluster sets the same on its head (ray_cluster.yaml).
SYSTEM_CONFIG = {"worker_niceness": 0}
# Ray (2.5x on) logs this at every new local cluster whose RAY_AUTH_MODE is unset, then enables token authentication.
# A store's user did not start a Ray cluster and has nothing to do about it: the notice is dropped, the setting kept.
AUTH_DEFAULT_NOTICE = "Token authentication is enabled for this Ray cluster"
AUTH_LOGGER = "ray._private.authentication.authentication_token_setup"
_local_env: dict[str, str] = {}  # what the processes of the local Ray started by ensure_ray inherited from its env


class _AuthDefaultNotice(logging.Filter):
    """Drops the one record saying Ray turned token authentication on by default; passes every other record."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(AUTH_DEFAULT_NOTICE)


def ensure_ray(address: str | None = None, num_cpus: int | None = None, env: dict[str, str] | None = None) -> None:
    """Connect to Ray once per process (local by default). ``env``: variables every process of a local Ray started
    here is to see (its workers inherit them from this process as Ray starts, :func:`local_env`); they are set in
    this process only while it does. Not when connected before or to a cluster."""
    if ray.is_initialized():
        return
    address = address or os.environ.get("RAY_ADDRESS")
    kwargs = dict(
        include_dashboard=False,
        logging_level=logging.WARNING,
        log_to_driver=os.environ.get("PALIMPSEST_RAY_LOGS") == "1",
        namespace=NAMESPACE,
        # No job-wide runtime_env: workers made for one cannot be the ones Ray starts ahead at ray.init, so every
        # actor (each shard, the directory, the limiter) would wait for a process of its own to start. The
        # encoders set what their libraries read (HF_HUB_OFFLINE, TOKENIZERS_PARALLELISM) in the process itself.
    )
    if address:
        ray.init(address=address, **kwargs)
        return
    # "local": always a Ray of our own, never a cluster some other process started with `ray start`
    notices, quiet = logging.getLogger(AUTH_LOGGER), _AuthDefaultNotice()
    notices.addFilter(quiet)
    before = {name: os.environ.get(name) for name in env or {}}
    os.environ.update(env or {})
    try:
        with own_process_groups():
            ray.init(address="local", num_cpus=num_cpus or os.cpu_count() or 1, _system_config=dict(SYSTEM_CONFIG),
                     **kwargs)
    finally:
        notices.removeFilter(quiet)
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    _local_env.clear()
    _local_env.update(env or {})


@contextlib.contextmanager
def own_process_groups():
    """While it lasts, each process Ray starts (GCS, raylet, its monitors; the raylet's agents join the raylet's)
    starts in a process group of its own instead of this process's.

    A signal sent to the process group of a program that opened a store reaches that program alone: ``timeout``
    and ``kill -- -PGID`` send SIGTERM to the whole group, as do supervisors stopping a program as a group. Ray's
    processes block SIGINT (Ctrl-C in a terminal) but not SIGTERM: one that reached them ended the dashboard agent,
    then the raylet with it, and ``palimpsest serve``, stopping on the same signal, waited for good on a Ray that was
    gone while its workers outlived it. Now the program stops its Ray itself, and if it dies, Ray's fate-sharing
    (and ``palimpsest serve``'s guard) ends them. Ray starts its processes through ``services.ConsolePopen``, a
    private name: :func:`ray_starts_processes_through` checks it is still there, and a test that none of a local
    Ray's processes is in the driver's group fails if Ray stops using it.
    """
    if sys.platform == "win32" or not ray_starts_processes_through():
        yield
        return
    popen = services.ConsolePopen

    class ApartPopen(popen):
        def __init__(self, *args, **kwargs):
            if not kwargs.get("start_new_session"):
                kwargs.setdefault("process_group", 0)
            super().__init__(*args, **kwargs)

    services.ConsolePopen = ApartPopen
    try:
        yield
    finally:
        services.ConsolePopen = popen


def ray_starts_processes_through() -> bool:
    """Whether Ray still starts its processes through ``ray._private.services.ConsolePopen`` (a ``Popen``)."""
    popen = getattr(services, "ConsolePopen", None)
    return isinstance(popen, type) and issubclass(popen, subprocess.Popen)


# the processes of a local Ray without which no actor call is answered (its monitors and dashboard are not such)
VITAL = (ray_constants.PROCESS_TYPE_GCS_SERVER, ray_constants.PROCESS_TYPE_RAYLET)


def local_ray_lost() -> list[str]:
    """Which of this process's local Ray's :data:`VITAL` processes have ended, e.g. on a signal sent to every
    process of a service (``[]``: all running, or no local Ray started here). A Ray that lost one cannot drain a
    Serve application or close actors: such calls wait for good."""
    node = getattr(ray._private.worker, "_global_node", None)
    if not ray.is_initialized() or node is None or not hasattr(node, "dead_processes"):
        return []
    return sorted({kind for kind, _ in node.dead_processes() if kind in VITAL})


def local_env() -> dict[str, str]:
    """The variables the processes of this process's local Ray have from :func:`ensure_ray` (none: not started by
    it, or started without)."""
    return dict(_local_env) if ray.is_initialized() else {}


def shutdown_ray() -> None:
    """Disconnect this process from Ray (a local Ray it started stops)."""
    if ray.is_initialized():
        ray.shutdown()
    _local_env.clear()
