"""Tenant turns: the order in which a shard's queries go to its projections.

A shard answers one query at a time (they hold its projections' lock). When
several wait, a plain lock lets whichever thread the scheduler wakes go
next, so one tenant's flood of queries takes most turns and a modest
tenant's query waits behind several of them. Here one query at a time goes
on to the lock, and the queries waiting go in tenant turns: round robin
across tenants, first come first served within one, a tenant that had
nothing waiting first (it has used the least). Writers and the touch flush
take the lock as before. Thread-safe; no Ray.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from collections.abc import Iterator
from contextlib import contextmanager


class TenantTurns:
    """``with turns.turn(tenant):`` waits for the query's turn; the turn passes on when the block ends."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._busy = False  # a query has the turn
        self._waiting: OrderedDict[str, deque[threading.Event]] = OrderedDict()  # tenant → its waiters, in turn order

    @contextmanager
    def turn(self, tenant: str) -> Iterator[None]:
        with self._mutex:
            waiter = None
            if self._busy:
                waiter = threading.Event()
                mine = self._waiting.get(tenant)
                if mine is None:
                    mine = self._waiting[tenant] = deque()
                    self._waiting.move_to_end(tenant, last=False)  # nothing waiting: this tenant goes first
                mine.append(waiter)
            self._busy = True
        if waiter is not None:
            waiter.wait()  # set when the turn is handed to it
        try:
            yield
        finally:
            self._pass_on()

    def _pass_on(self) -> None:
        with self._mutex:
            if not self._waiting:
                self._busy = False
                return
            tenant, mine = next(iter(self._waiting.items()))
            waiter = mine.popleft()
            if mine:
                self._waiting.move_to_end(tenant)  # to the back of the turn order
            else:
                del self._waiting[tenant]
            waiter.set()  # the turn goes to it directly (still busy)

    def waiting(self) -> int:
        with self._mutex:
            return sum(map(len, self._waiting.values()))
