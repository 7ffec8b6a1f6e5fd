"""actors.heap: the collector paused around a replay's fold, and the projections frozen after it."""

from __future__ import annotations

import gc
import weakref

from actors import heap


class Node:
    def __init__(self) -> None:
        self.other = self


def test_paused_turns_the_collector_off_and_back_on_even_on_error():
    assert gc.isenabled()
    try:
        with heap.paused():
            assert not gc.isenabled()
            raise ValueError("a fold failed")
    except ValueError:
        pass
    assert gc.isenabled()
    gc.disable()
    try:
        with heap.paused():
            pass
        assert not gc.isenabled()  # off before, off after
    finally:
        gc.enable()


def test_settle_freezes_what_lives_and_frees_the_cycles_of_a_state_frozen_before():
    old = Node()  # a cycle in a state frozen at start-up, then replaced by a replay
    gone = weakref.ref(old)
    heap.settle()
    try:
        assert gc.get_freeze_count() > 0
        del old
        gc.collect()
        assert gone() is not None  # frozen: a collection does not see it
        heap.settle()
        assert gone() is None  # settle brings frozen objects back first, so the dropped cycle is collected
    finally:
        gc.unfreeze()
