"""A real local Ray for the integration tests: one per test module, as Ray's own tests do."""

from __future__ import annotations

import pytest
import ray

from palimpsest import Memory


@pytest.fixture(scope="module")
def ray_cluster():
    ray.init(address="local", num_cpus=2, include_dashboard=False)
    yield
    ray.shutdown()


@pytest.fixture
def store_path(tmp_path):
    return tmp_path / "store"


@pytest.fixture
def memory(ray_cluster, store_path):
    """A two-shard store with the fast hash embedder (tests that close and reopen a store open their own)."""
    mem = Memory.open(store_path, num_shards=2, embedder="hash")
    yield mem
    mem.close()
