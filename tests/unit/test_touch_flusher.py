"""The shard actor's background touch flush: a flush that fails is logged and counted in ``stats`` (it used to show
only in the worker's log, so a benchmark ran on for minutes against a shard that could no longer write).

The actor's class is run here without Ray (its ``__init__`` needs no Ray context), on a real DuckDB log.
"""

from __future__ import annotations

import dataclasses
import time

from actors import commands as c
from actors.shard import ShardActor
from tests.shard_helpers import EMBED, record_command
from tests.unit.test_command_retries import TURNS, USER, spec_for


def _stats(actor) -> dict:
    return actor.query([c.Stats()])[0]


def _search(actor, query: str) -> None:
    actor.query([c.Search(**USER, query=query, query_vector=EMBED.encode([query])[0], k=3)])


def _wait_for(predicate, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def test_a_failed_background_touch_flush_is_counted_and_later_flushes_still_land(tmp_path, monkeypatch):
    actor = ShardActor.__ray_metadata__.modified_class(dataclasses.replace(spec_for(tmp_path), touch_flush_s=0.05))
    try:
        actor.handle([record_command(TURNS)])
        assert _stats(actor)["touch_flush_failures"] == 0
        events = _stats(actor)["events"]

        def broken(*args, **kwargs):
            raise OSError("disk full (injected)")

        monkeypatch.setattr(actor._core.log, "append", broken)
        _search(actor, "nurse sister")
        # (Stats flushes pending touches first, in the caller's call: the background flush is read directly.)
        assert _wait_for(lambda: actor._core.flush_failures == 1)
        monkeypatch.undo()
        assert _stats(actor)["touch_flush_failures"] == 1 and _stats(actor)["events"] == events  # nothing written

        _search(actor, "green tea")
        assert _wait_for(lambda: actor._core.log.count() > events)  # the next background flush lands
        assert _stats(actor)["touch_flush_failures"] == 1
    finally:
        actor.close()
