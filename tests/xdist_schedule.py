"""How ``make test`` spreads the suite over its pytest-xdist workers (``-n``).

A test module is one unit of work, as with ``--dist loadfile``: its module fixtures (a served store, a Ray
cluster of its own) are set up once. Modules that share a set-up (one ``mkdocs`` build, one sample store ingested
by the CLI, one served store: tests/integration/shared_setup.py) form one unit, so the set-up runs in one worker
instead of in each. Units are handed out in the order the suite collects them (``tests/conftest.py`` puts the long
integration modules first and the many short unit modules last, which fill the workers' ends evenly).
"""

from __future__ import annotations

from xdist.scheduler import LoadScopeScheduling

# module path -> the unit it shares a session-wide set-up with
SHARED_SETUP = {
    "tests/unit/test_docs.py": "docs-site",  # tests/docs_build.py: one strict build of the site
    "tests/integration/test_docs_site.py": "docs-site",
    "tests/integration/test_cli.py": "sample-store",  # tests/integration/conftest.py: sample_template
    "tests/integration/test_archive_cli.py": "sample-store",
    "tests/integration/test_proxy.py": "served",  # tests/integration/proxy_server.py: shared_bench
    "tests/integration/test_proxy_sessions.py": "served",
    "tests/integration/test_proxy_inputs.py": "served",
    "tests/integration/test_operations_served.py": "served",
    "tests/integration/test_serve_cpu.py": "served",
    "tests/integration/test_serve_mcp.py": "served",
    "tests/integration/test_agents_session.py": "served",
    "tests/integration/test_langgraph_store.py": "served",
}


class ModulesBySetup(LoadScopeScheduling):
    """``--dist loadfile`` with :data:`SHARED_SETUP`'s modules as one unit, in collection order."""

    def __init__(self, config, log=None) -> None:
        super().__init__(config, log)
        config.option.loadscopereorder = False  # not by test count: the collection order puts long modules first

    def _split_scope(self, nodeid: str) -> str:
        module = nodeid.split("::", 1)[0]
        return SHARED_SETUP.get(module, module)
