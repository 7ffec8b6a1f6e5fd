"""Shared set-up for every test layer: offline model loading and a deterministic hypothesis profile.

Builders for events and messages live in ``tests/builders.py``; the Ray
fixtures live in ``tests/integration/conftest.py``.
"""

from __future__ import annotations

import os

# Set before anything imports sentence-transformers or starts Ray, so the
# driver and every Ray worker it spawns inherit them: nothing is downloaded.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# The graph labels' reactor records labels on a thread of its own once an ingest pauses (1 s by default): off in
# the suite, so a test sees no event it did not cause by a call; tests/integration/test_graph_labels.py turns it on.
os.environ.setdefault("PALIMPSEST_LABELS_IDLE_S", "off")

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

# Same examples on every run (CI stays reproducible); jieba loads its
# dictionary on first use (about a second), so no per-example deadline.
settings.register_profile(
    "palimpsest", deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "palimpsest"))


# Modules that stop the local Ray the integration modules share (tests/integration/conftest.py) and start a Ray
# of their own: run last, so the shared Ray is started once per session instead of again after each of them.
OWN_RAY_MODULES = ("tests/integration/test_multinode.py",)


def _order(item) -> int:
    """Integration modules (long: Ray, servers, subprocesses) first, then the many short unit and contract
    modules, which fill the xdist workers' ends evenly; a module with a Ray of its own last."""
    if item.nodeid.startswith(OWN_RAY_MODULES):
        return 2
    return 0 if item.nodeid.startswith("tests/integration/") else 1


def pytest_collection_modifyitems(session, config, items):
    items.sort(key=_order)  # stable: the collection order within each group


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Under ``--dist loadfile`` (``make test``) a worker takes a module, or the modules sharing a session set-up,
    at a time: tests/xdist_schedule.py. Another ``--dist`` keeps xdist's own scheduler."""
    if config.getvalue("dist") != "loadfile":
        return None
    from tests.xdist_schedule import ModulesBySetup

    return ModulesBySetup(config, log)
