"""Shared set-up for every test layer: offline model loading and a fast,
deterministic hypothesis profile."""

from __future__ import annotations

import os

# Set before anything imports sentence-transformers or starts Ray, so the
# driver and every Ray worker it spawns inherit them.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

from projections.embedding import HashEmbedder  # noqa: E402

# jieba loads its dictionary on first use (about a second): no per-example deadline.
settings.register_profile(
    "palimpsest", deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("palimpsest")


@pytest.fixture(scope="session")
def hash_embedder() -> HashEmbedder:
    return HashEmbedder()
