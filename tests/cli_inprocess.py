"""A real store answered in this process, for CLI tests without Ray: :class:`InProcessMemory` is
:class:`palimpsest.Memory` (every method as users call it) over one :class:`ShardCore` (the real shard logic,
DuckDB log, LanceDB vectors and folds) instead of a Ray actor; only the transport is replaced.

``use_in_process(monkeypatch)`` makes ``Memory.open`` (which the CLI calls) open one, so ``palimpsest.cli.main``
runs as a user runs it. The store's files are those of a one-shard store: the audit commands (``events``,
``sql``) read its log as they read any store's.
"""

from __future__ import annotations

import time
from importlib import resources
from pathlib import Path

from actors.core import ShardCore
from actors.spec import ShardSpec
from palimpsest import config as store_config
from palimpsest.label_reactor import LabelReactor
from palimpsest.formats import read_jsonl
from palimpsest.memory import Memory, _encoder_defaults
from palimpsest.query_vectors import QueryVectors
from palimpsest.settings import StoreSettings

SAMPLE = Path(str(resources.files("palimpsest") / "data" / "sample_dialogue.jsonl"))
# Modules that wait for a shard's reply with palimpsest.remote.get (ray.get): here the reply is already there.
WAITERS = ("palimpsest.memory", "palimpsest.memory_graph", "palimpsest.memory_inspect", "palimpsest.memory_erasure",
           "palimpsest.ingest")


class LocalShards:
    """:class:`palimpsest.remote.Shards` over one in-process core: calls answer at once (no references)."""

    def __init__(self, core: ShardCore) -> None:
        self.core = core

    def route(self, streams):
        return [0] * len(streams)

    def index_of(self, tenant, user_id, *, assign=False):
        return 0

    def all(self):
        return [self.core]

    def live(self):
        return [self.core]

    def ask(self, tenant, user_id, query):
        return self.core.query(query)

    def ask_each(self, query, tenant=None, user_id=None):
        return [self.core.query(query)]

    def send(self, tenant, user_id, command):
        return self.core.handle([command])[0]

    def send_each(self, command, tenant=None, user_id=None):
        return [self.core.handle([command])[0]]

    def submit(self, index, commands):
        return self.core.handle(list(commands))

    def submit_queries(self, index, queries):
        return [self.core.query(q) for q in queries]

    def admin_each(self, command):
        return [self.core.admin(command)]

    def on_live(self, method, *args):
        if method == "query":
            return [[self.core.query(q) for q in args[0]]]
        return []  # quiet, idle_work, load_dictionaries: maintenance a one-call-at-a-time core does not need

    def close(self) -> None:
        pass


class LocalDirectory:
    """The routing directory of a one-shard store: everyone is on shard 0."""

    def lookup(self, streams):
        return [0] * len(streams)

    def close(self) -> None:
        pass


class InProcessMemory(Memory):
    """:class:`Memory` over an in-process core (see the module docstring); ``close`` closes the core."""

    def __init__(self, path: Path) -> None:  # noqa: super().__init__ starts Ray: the same fields, set here
        cfg = store_config.StoreConfig.load(path)
        self.path, self.config = path, cfg
        self.settings = _encoder_defaults(StoreSettings.from_json(cfg.settings, str(path / "store.json")),
                                          cfg.model_id)
        self.core = ShardCore(ShardSpec(index=0, log_path=store_config.log_path(path, 0),
                                        lance_dir=store_config.lance_dir(path), model_id=cfg.model_id, dim=cfg.dim,
                                        retention_policy=self.settings.retention_policy,
                                        segmentation=self.settings.segmentation, tier_config=self.settings.tiers,
                                        working_config=self.settings.working))
        self.cluster = LocalDirectory()
        self.shards = LocalShards(self.core)
        self.llm_config = None
        self._embedder = None
        self._switch_checked = time.monotonic()
        self._config_mtime = (path / "store.json").stat().st_mtime_ns
        self._labels = {}
        self._label_reactor = LabelReactor(self._embed_labels_now)
        self._query_vectors = QueryVectors()
        self._language_warned = False
        self.consolidate_every, self._since_consolidation, self._scheduler = 0, 0, None

    def close(self) -> None:
        self._label_reactor.close()
        self.core.close()


def use_in_process(monkeypatch) -> None:
    """``Memory.open`` opens an :class:`InProcessMemory` of an existing store, and replies need no waiting."""
    import importlib

    monkeypatch.setattr(Memory, "open", classmethod(lambda cls, path, **_: InProcessMemory(Path(path))))
    for name in WAITERS:
        monkeypatch.setattr(importlib.import_module(name), "_get", lambda refs: refs)


def make_sample_store(path: Path) -> Path:
    """A one-shard, plaintext, hash-encoder store of the packaged sample dialogue (tenant demo, user maya)."""
    import pytest

    store_config.StoreConfig.create(path, 1, "hash", encrypted=False)
    with pytest.MonkeyPatch.context() as patch:
        use_in_process(patch)
        mem = InProcessMemory(path)
        try:
            report = mem.add_messages(read_jsonl(SAMPLE))
            assert report.created == 24
        finally:
            mem.close()
    return path
