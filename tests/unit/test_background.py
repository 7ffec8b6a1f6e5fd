"""The background thread (actors.background): its nice value is raised, the caller's is not."""

from __future__ import annotations

import os
import sys
import threading

import pytest

from actors import background


def _nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice values are Linux's")
def test_the_background_thread_runs_below_the_caller_and_the_caller_stays_as_it_was(monkeypatch):
    monkeypatch.delenv(background.ENV, raising=False)
    before = _nice()
    executor = background.background_executor("test-background")
    try:
        inside = executor.submit(_nice).result(timeout=10)
    finally:
        executor.shutdown()
    assert inside == min(19, before + background.BACKGROUND_NICE)
    assert _nice() == before


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice values are Linux's")
def test_the_environment_sets_the_increment_and_zero_keeps_normal_priority(monkeypatch):
    before = _nice()
    monkeypatch.setenv(background.ENV, "0")
    executor = background.background_executor("test-background")
    try:
        assert executor.submit(_nice).result(timeout=10) == before
    finally:
        executor.shutdown()
    assert background.increment_from_env({background.ENV: "3"}) == 3
    assert background.increment_from_env({background.ENV: "high"}) == background.BACKGROUND_NICE
    assert background.increment_from_env({}) == background.BACKGROUND_NICE


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice values are Linux's")
def test_lowering_a_thread_twice_leaves_it_where_the_first_time_put_it():
    def twice() -> tuple[bool, int, bool, int]:
        first = background.lower_this_thread(5)
        once = _nice()
        second = background.lower_this_thread(5)
        return first, once, second, _nice()

    base = os.getpriority(os.PRIO_PROCESS, os.getpid())
    executor = background.ThreadPoolExecutor(max_workers=1)
    try:
        first, once, second, again = executor.submit(twice).result(timeout=10)
    finally:
        executor.shutdown()
    assert first and second and once == again == min(19, base + 5)
