"""The shard process's cyclic garbage collector around its big, long-lived projections.

A shard holds millions of small objects (its users' folded projections). Python's collector walks all of them
at each full collection, which the allocations of a fold keep triggering: during a replay, which builds a second
state beside the live one, and during a query, which then waits for it (one full collection took 264 ms on the
dev store's shard, under load). So a replay folds with the collector paused (a fold makes next to no cyclic
garbage; what it makes is collected when it resumes), and the projections, once built, are moved out of the
collector's reach (``gc.freeze``) at start-up and after a replay.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    """No automatic collection inside the block (as it was before if it was off already)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def settle() -> None:
    """Collect once, then move every surviving object out of later collections' reach; objects frozen before
    (a state a replay replaced) are brought back first, so their cycles can be collected."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()
