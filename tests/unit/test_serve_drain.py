"""How long ``palimpsest serve`` waits for its drain on a stop signal (:func:`palimpsest.server.run._drained`): until
it is done; not past :data:`~palimpsest.server.run.STOP_WAIT_S`; not at all once Ray's own processes have ended."""

from __future__ import annotations

import threading
import time

from palimpsest.server import run


def _stopper(seconds: float) -> threading.Thread:
    t = threading.Thread(target=time.sleep, args=(seconds,), daemon=True)
    t.start()
    return t


def test_a_drain_that_finishes_is_waited_for(monkeypatch):
    monkeypatch.setattr(run, "local_ray_lost", lambda: [])
    started = time.monotonic()
    assert run._drained(_stopper(0.3)) is None
    assert time.monotonic() - started >= 0.3


def test_a_drain_still_running_after_the_wait_is_cut_with_exit_code_1(monkeypatch):
    monkeypatch.setattr(run, "local_ray_lost", lambda: [])
    monkeypatch.setattr(run, "STOP_WAIT_S", 0.3)
    stopper = _stopper(30)
    why, code = run._drained(stopper)
    assert stopper.is_alive() and code == 1 and why.startswith("the drain still running after")


def test_a_drain_is_not_waited_for_once_ray_s_own_processes_have_ended(monkeypatch):
    lost = []
    monkeypatch.setattr(run, "local_ray_lost", lambda: list(lost))
    stopper = _stopper(30)
    threading.Timer(0.3, lambda: lost.extend(["dashboard", "raylet"])).start()
    started = time.monotonic()
    why, code = run._drained(stopper)
    assert code == 0 and "(dashboard, raylet) have ended" in why and time.monotonic() - started < 5
