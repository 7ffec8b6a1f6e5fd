"""ShardCore.handle pauses the cyclic collector while it decides, appends and folds, and gives it back as it was,
also when a command fails; the events written are the same as with the collector running."""

from __future__ import annotations

import gc
import uuid

import pytest

from actors import commands as c
from actors import core as core_module
from actors.core import ShardCore
from actors.spec import ShardSpec
from events.errors import InvalidInputError
from events.log import ScanFilter
from benchmarks.ingest_speed import seed_ids
from projections.adapters.embedding import HashEmbedder
from tests.builders import command
from tests.shard_helpers import record_command

TEXTS = ["I love cilantro on everything", "My sister works as a nurse in Boston", "我昨天去了瑜伽课", "我们决定改用 MySQL"]


def _core(path) -> ShardCore:
    return ShardCore(ShardSpec(index=0, log_path=path / "s.duckdb", lance_dir=path / "v",
                               model_id=HashEmbedder.model_id, dim=384))


def _events(core: ShardCore) -> list[tuple]:
    return [(e.kind, e.event.model_dump_json(exclude={"at", "heat"})) for e in core.log.scan(ScanFilter())]


@pytest.mark.parametrize("enabled", [True, False])
def test_handle_decides_with_the_collector_paused_and_gives_it_back(tmp_path, monkeypatch, enabled):
    seen: list[bool] = []
    decide = core_module.DECIDERS[c.RecordMessages]
    monkeypatch.setitem(core_module.DECIDERS, c.RecordMessages,
                        lambda state, cmd, deps: seen.append(gc.isenabled()) or decide(state, cmd, deps))
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    core = _core(tmp_path)
    try:
        core.handle([record_command([command(t, i, user_id="mel") for i, t in enumerate(TEXTS)])])
        assert seen == [False]
        assert gc.isenabled() is enabled
        with pytest.raises(InvalidInputError):
            good = record_command([command("hello", 9, user_id="mel")])
            core.handle([c.RecordMessages(messages=good.messages, vectors=good.vectors, model_id="another-model")])
        assert gc.isenabled() is enabled  # a refused command gives it back too
    finally:
        core.close()
        (gc.enable if was else gc.disable)()


def test_the_events_do_not_depend_on_the_collector(tmp_path, monkeypatch):
    monkeypatch.setattr(uuid, "uuid4", uuid.uuid4)  # seed_ids replaces it: given back after the test
    was = gc.isenabled()
    logs = []
    try:
        for run, collect in enumerate((True, False)):
            (gc.enable if collect else gc.disable)()
            seed_ids(7)  # the same event ids in both runs
            core = _core(tmp_path / str(run))
            try:
                for i, text in enumerate(TEXTS):
                    core.handle([record_command([command(text, i, user_id="mel")])])
                logs.append(_events(core))
            finally:
                core.close()
    finally:
        (gc.enable if was else gc.disable)()
    assert logs[0] == logs[1]
    assert len(logs[0]) > 3 * len(TEXTS)  # recorded, classified, embedded, and notes or graph memories
