"""Pacing a flooding tenant beside a modest one, across the read and write gates of a replica.

A tenant that floods (most of its requests lately refused: at least
:data:`HELD_SHARE` of them, over about the last second) beside a modest
tenant (one that asked within the last second, had few of its requests
refused lately, under :data:`MODEST_SHARE`, and sends at most
1 / :data:`MODEST_RATIO` as many requests as the flooding one) is *held*:

- it holds at most ``limit`` of the read and write slots together: its
  reads and its writes take turns instead of running side by side;
- after each of its requests it rests ``rest`` times as long as the request
  held its slot before its next request, of either class, takes one.

So a held tenant keeps at most ``limit / (1 + rest)`` of one slot's time.
What slows a modest tenant's search beside a flood is less a wait for a slot
(the gates keep one free for it) than the flood's requests running beside it
on the same cores and in the same shards: a cap on slots alone still lets
the flood keep a core busy. Like the cap, pacing is not work-conserving, and
it lasts only while the tenant is held: once no modest tenant is active, or
every active tenant floods too, the tenant runs as before. It takes most of
a tenant's requests refused, not one: a tenant refused now and then (a burst
a little past a slot's wait) is not paced, so pacing cannot feed on the
refusals it causes below capacity. And tenants of like size past capacity
together (the turns of the queue refuse the larger ones more) are not paced
either: pacing shields a light tenant from a heavy one, it does not share
out an overload.

Single event loop, no locks, as the gates; no Ray, no HTTP here.
"""

from __future__ import annotations

import asyncio
import math

HELD_SHARE = 0.5  # of a tenant's requests lately, the share refused that makes it a held tenant (beside a modest one)
MODEST_SHARE = 0.1  # of a tenant's requests lately, the share refused under which it is a modest tenant
MODEST_RATIO = 4.0  # a modest tenant sends at most 1/this as many requests as the flooding tenant held beside it
# the time constant of "lately": a decision this long ago weighs 1/e of one now; a tenant whose last request was
# decided longer ago is not beside anyone
LATELY_S = 1.0
FRESH_S = 0.02  # how long the modest tenants found stay the answer (a replica may serve many tenants)


class Pace:
    """The held tenants' shared slot count and rest, for the gates that :meth:`join` it."""

    def __init__(self, limit: int | None, rest: float, clock) -> None:
        self.limit = limit  # slots of the classes together a held tenant holds at most (None: no such limit)
        self.rest = rest
        self.clock = clock
        self.gates: list = []
        self.running: dict[str, int] = {}  # tenant -> its requests holding a slot, in every gate that joined
        self.ready_at: dict[str, float] = {}  # held tenant -> when its rest after its last request ends
        self.lately: dict[str, tuple[float, float, float]] = {}  # tenant -> (refused, admitted, when), decaying
        self._modest: tuple[float, list] = (float("-inf"), [])  # (found when, [(modest tenant, its requests lately)])
        self._forgot_at = clock()

    def join(self, gate) -> None:
        self.gates.append(gate)

    def decided(self, tenant: str, *, refused: bool) -> None:
        """A request of ``tenant`` was refused (at once or at its deadline), or given a slot."""
        now = self.clock()
        was_refused, was_admitted, when = self.lately.get(tenant, (0.0, 0.0, now))
        decay = math.exp(-(now - when) / LATELY_S)
        self.lately[tenant] = (was_refused * decay + refused, was_admitted * decay + (not refused), now)
        if now - self._forgot_at > 10 * LATELY_S:  # tenants quiet for long: forgotten
            self._forgot_at = now
            self.lately = {t: v for t, v in self.lately.items() if now - v[2] < 10 * LATELY_S}
            self.ready_at = {t: at for t, at in self.ready_at.items() if at > now}

    def refused_share(self, tenant: str) -> float:
        refused, admitted, _ = self.lately.get(tenant, (0.0, 0.0, 0.0))
        return refused / (refused + admitted) if refused else 0.0

    def sent(self, tenant: str, now: float) -> float:
        """``tenant``'s requests lately (decided over about the last :data:`LATELY_S`, the older weighing less)."""
        refused, admitted, when = self.lately.get(tenant, (0.0, 0.0, now))
        return (refused + admitted) * math.exp(-(now - when) / LATELY_S)

    def held(self, tenant: str) -> bool:
        if self.refused_share(tenant) < HELD_SHARE:
            return False
        now = self.clock()
        found, modest = self._modest
        if now - found > FRESH_S:
            modest = [(t, self.sent(t, now)) for t, (_, _, when) in self.lately.items()
                      if now - when < LATELY_S and self.refused_share(t) < MODEST_SHARE]
            self._modest = (now, modest)
        floods = self.sent(tenant, now)
        return any(other != tenant and sent * MODEST_RATIO <= floods for other, sent in modest)

    def allows(self, tenant: str) -> bool:
        """Whether a request of ``tenant`` may take a free slot now."""
        if not self.held(tenant):
            return True
        under = self.limit is None or self.running.get(tenant, 0) < self.limit
        return under and self.clock() >= self.ready_at.get(tenant, float("-inf"))

    def took(self, tenant: str) -> None:
        """A request of ``tenant`` took a slot (it was admitted)."""
        self.running[tenant] = self.running.get(tenant, 0) + 1
        self.decided(tenant, refused=False)

    def gave_back(self, tenant: str, held_s: float) -> None:
        """``tenant``'s request gave back a slot it held for ``held_s``: a held tenant rests before its next."""
        left = self.running[tenant] - 1
        if left:
            self.running[tenant] = left
        else:
            del self.running[tenant]
        if self.rest and self.held(tenant):
            self.ready_at[tenant] = self.clock() + self.rest * held_s
            try:
                asyncio.get_running_loop().call_later(self.rest * held_s, self.dispatch)
            except RuntimeError:  # no loop (a test driving the gates by hand): the next call dispatches
                pass
        else:
            self.ready_at.pop(tenant, None)

    def wait_s(self, tenant: str, hold_s: float) -> float:
        """How long before a held ``tenant`` may take a slot at all, its place in the queues aside (0: not held).
        When it holds all it may, one of its slots frees after a hold and a rest."""
        if not self.held(tenant):
            return 0.0
        now = self.clock()
        until = max(0.0, self.ready_at.get(tenant, now) - now)
        if self.limit is not None and self.running.get(tenant, 0) >= self.limit:
            until = max(until, hold_s * (1 + self.rest))
        return until

    def waiting(self, tenant: str) -> int:
        """``tenant``'s requests waiting in every gate that joined."""
        return sum(len(g.waiting.get(tenant, ())) for g in self.gates)

    def dispatch(self) -> None:
        for gate in self.gates:
            gate._dispatch()
