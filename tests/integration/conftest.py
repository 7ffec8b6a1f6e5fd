"""A real local Ray for the integration tests, started once and shared by the modules.

Starting Ray (and warming its workers) costs seconds per module; the modules use stores of their own (their
actors are named after the store's path), so they can share one cluster. A module that needs a Ray of its own
(test_multinode's multi-node cluster) shuts the shared one down first; ``tests/conftest.py`` runs such modules
last, so the shared Ray starts once per session.
"""

from __future__ import annotations

import os

import pytest
import ray

from actors.ray_init import NAMESPACE, SYSTEM_CONFIG
from palimpsest import Memory
from tests.integration.shared_setup import end_unless_needed_by


def start_shared_ray() -> None:
    """The local Ray the integration modules share (the namespace :func:`actors.ray_init.ensure_ray` gives)."""
    if not ray.is_initialized():
        # Worker logs stay in Ray's session files (PALIMPSEST_RAY_LOGS=1 streams them here, as ensure_ray does):
        # streaming every worker's output to the driver costs CPU the tests' own workers wait for.
        ray.init(address="local", num_cpus=2, include_dashboard=False, namespace=NAMESPACE,
                 log_to_driver=os.environ.get("PALIMPSEST_RAY_LOGS") == "1", _system_config=dict(SYSTEM_CONFIG))


@pytest.fixture(scope="session")
def _shared_ray_session():
    yield
    if ray.is_initialized():
        ray.shutdown()


@pytest.fixture(scope="session")
def sample_template(_shared_ray_session, tmp_path_factory) -> tuple:
    """The packaged sample ingested once per session by ``palimpsest ingest`` (a closed two-shard hash store, which
    the CLI modules copy: tests/integration/cli_store.py); ``(its path, what the ingest printed)``."""
    from tests.integration.cli_store import ingest_sample

    start_shared_ray()
    path = tmp_path_factory.mktemp("sample") / "store"
    return path, ingest_sample(path)


@pytest.fixture(scope="module")
def ray_cluster(_shared_ray_session):
    start_shared_ray()
    yield


@pytest.fixture
def store_path(tmp_path):
    return tmp_path / "store"


@pytest.fixture
def memory(ray_cluster, store_path):
    """A two-shard store with the fast hash embedder (tests that close and reopen a store open their own)."""
    mem = Memory.open(store_path, num_shards=2, embedder="hash")
    yield mem
    mem.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """After a test's own teardown: a set-up shared by its unit's modules ends once the next test is another unit's
    (tests/integration/shared_setup.py)."""
    yield
    end_unless_needed_by(nextitem)
