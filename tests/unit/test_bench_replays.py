"""benchmarks.locomo's replay figure: each shard's fastest of the repeated replays, from its own reports."""

from __future__ import annotations

from actors.spec import ReplayReport
from benchmarks.locomo import best_replays


def _report(shard: int, seconds: float) -> ReplayReport:
    return ReplayReport(shard, 1000 * (shard + 1), seconds, {"a": "1"}, {"a": "1"}, 0, seconds * 0.9)


def test_each_shard_keeps_its_own_fastest_replay():
    runs = [[_report(0, 2.0), _report(1, 0.5)], [_report(0, 1.2), _report(1, 0.9)], [_report(0, 1.5), _report(1, 0.7)]]

    best = best_replays(runs)

    assert [(r.shard, r.seconds) for r in best] == [(0, 1.2), (1, 0.5)]


def test_one_replay_is_its_own_best():
    run = [_report(0, 1.0), _report(1, 2.0)]
    assert best_replays([run]) == run
