"""Admission control: how much work a replica takes on at once, in which order, and what it refuses at once.

Each class of request (reads, writes, the memory proxy) has a :class:`Gate`:
at most ``slots`` requests of the class run at a time; the others wait in a
bounded queue. The queue is fair across tenants: a freed slot goes to the
tenants in turn (round robin, first come first served within a tenant; a
tenant that had nothing waiting goes first, as it has used the least), and
no tenant holds more than its share of the queue, so one tenant's flood
fills its own part and is refused there while another tenant's request
still gets the next slot. While more than one tenant sends requests of a
class (within the last second), none holds all of its slots: one is kept
for the others, so a modest tenant's request beside a flood finds a slot
free instead of waiting for one. And a flooding tenant (one refused within
the last second) beside a modest one (active, none of its requests refused
lately) holds at most ``tenant_slots`` of the read or write slots (one by
default), even with slots free (not work-conserving): what slows the modest
tenant's search is less a wait for a slot than the flood's requests running
beside it, on the same cores and at the same shards. A tenant most of whose
requests are refused beside a modest one is also paced across the read and
write gates (:mod:`palimpsest.server.admission_pace`): its reads and writes
take turns on ``tenant_slots`` slots, with a rest after each. When every active
tenant is refused (all send more than their share) or none is, each may
hold all slots but one. Reads and writes have gates of their own, so a
flood of ingests never takes a search's slot.

The waiters of one group (a tenant's ingests for one user: the server
writes concurrent ingests to a shard as one batch,
:mod:`palimpsest.server.ingest_batches`) go in together on one slot when one
of them is given a slot, :data:`GROUP_MAX` at most: a write's cost is mostly
per batch. The slot is given back once every request that shared it has been
answered. Only waiters share a slot (each was admitted to the queue within
its budget): a request arriving while its group runs waits, or is refused,
as any other.

A request is refused (:class:`Overloaded`) before any work is spent on it:

- at once, when the queue (or the tenant's share of it) is full, or when the
  wait its place in the queue predicts is longer than its budget, or half of
  it while the class is refusing requests (a prediction is of the usual
  wait; twice the usual is rare): when the
  running requests free their slots (from the time they have held them and
  the hold time), one slot per place ahead, and at least what each place
  ahead has cost the waiters lately; both estimates rise at once and fall
  back with the mean, so that few requests wait out their budget only to be
  refused then;
- when it has waited its budget without getting a slot (the deadline; it
  raises the cost per place the next predictions use).

The server answers a refusal 503 with ``Retry-After``; nothing was done.
Single event loop, no locks: every method runs on the loop that serves the
requests. No Ray, no HTTP here.
"""

from __future__ import annotations

import asyncio
import math
import os
import time
from collections import OrderedDict, deque
from dataclasses import dataclass

from events.errors import InvalidInputError
from palimpsest.server.admission_pace import Pace

READ, WRITE, PROXY = "read", "write", "proxy"
CLASSES = (READ, WRITE, PROXY)
_EWMA = 0.1  # weight of one request's slot time in the class's mean
# while a class is refusing requests (one refused within the last ACTIVE_S), a request waits only if its
# predicted wait is within this share of its budget: the prediction is about the usual wait, and a wait twice
# the usual is rare, so few of those that wait are refused at the deadline. Otherwise (below capacity, a slot
# busy for a moment) the whole budget.
PREDICTED_SHARE = 0.5
# a tenant that another tenant has sent requests of the class beside within this long holds at most all slots
# but one: the other's next request finds a slot free instead of waiting behind the first's. A tenant refused within
# this long is flooding: beside an active tenant that is not, it holds at most ``tenant_slots``.
ACTIVE_S = 1.0
GROUP_MAX = 8  # requests sharing one slot at most (the one given the slot and its group's waiters)


@dataclass(frozen=True)
class AdmissionSettings:
    """A replica's admission limits (``palimpsest serve`` options; the environment variables set their defaults)."""

    read_slots: int = 4  # reads running at once (search, context, notes, ...)
    write_slots: int = 1  # writes running at once (messages, replies, archive, ...)
    proxy_slots: int = 32  # memory-proxy calls at once (each mostly waits on the upstream model)
    # of the read (and write) slots, a flooding tenant holds at most this many beside a modest one (0: all but one,
    # as for the memory proxy's, whose calls mostly wait on the upstream)
    tenant_slots: int = 1
    # after each request, a tenant most of whose requests are refused beside a modest one rests this many times as
    # long as the request held its slot before its next read or write takes one (admission_pace; 0: no rest)
    tenant_rest: float = 1.0
    queue: int = 32  # requests of one class waiting for a slot; past it, refused at once
    tenant_share: float = 0.5  # of a class's queue, at most this share waits for one tenant
    wait_ms: float = 100.0  # longest wait for a slot (the budget); a client may ask for less
    retry_after_s: int = 1  # what a refusal's Retry-After says
    enabled: bool = True
    # the admitted answers' Server-Timing header (palimpsest.phases); off: none (the phases tell a tenant how busy
    # its shard is with others' requests)
    timing: bool = True

    ENV = {"read_slots": "PALIMPSEST_READ_SLOTS", "write_slots": "PALIMPSEST_WRITE_SLOTS",
           "proxy_slots": "PALIMPSEST_PROXY_SLOTS", "tenant_slots": "PALIMPSEST_TENANT_SLOTS",
           "tenant_rest": "PALIMPSEST_TENANT_REST",
           "queue": "PALIMPSEST_ADMISSION_QUEUE",
           "wait_ms": "PALIMPSEST_ADMISSION_WAIT_MS"}

    def __post_init__(self) -> None:
        problems = [(f, f"{getattr(self, f)}; give at least 1") for f in
                    ("read_slots", "write_slots", "proxy_slots", "retry_after_s") if getattr(self, f) < 1]
        problems += [(f, f"{getattr(self, f)}; give 0 or more")
                     for f in ("queue", "wait_ms", "tenant_slots", "tenant_rest") if getattr(self, f) < 0]
        if not 0 < self.tenant_share <= 1:
            problems.append(("tenant_share", f"{self.tenant_share}; give a share in (0, 1]"))
        if problems:
            raise InvalidInputError(problems, what="admission settings")

    @classmethod
    def from_env(cls, env=None) -> AdmissionSettings:
        """The defaults, each replaced by its environment variable when set (``PALIMPSEST_ADMISSION=off``: none)."""
        env = os.environ if env is None else env
        values = {}
        for field, name in cls.ENV.items():
            if env.get(name):
                try:
                    values[field] = (float if field in ("wait_ms", "tenant_rest") else int)(env[name])
                except ValueError:
                    raise InvalidInputError([(name, f"{env[name]!r} is not a number; give one")],
                                            what="admission settings") from None
        if env.get("PALIMPSEST_ADMISSION", "").lower() in ("0", "off", "false"):
            values["enabled"] = False
        if env.get("PALIMPSEST_SERVER_TIMING", "").lower() in ("0", "off", "false"):
            values["timing"] = False
        return cls(**values)

    def slots(self, klass: str) -> int:
        return {READ: self.read_slots, WRITE: self.write_slots, PROXY: self.proxy_slots}[klass]

    @property
    def capacity(self) -> int:
        """Requests one replica holds at most (running or waiting): what Ray Serve may hand it at once."""
        return sum(self.slots(c) + self.queue for c in CLASSES)


class Overloaded(Exception):
    """A request refused by admission: nothing was done; retry after ``retry_after_s``."""

    def __init__(self, klass: str, reason: str, retry_after_s: int) -> None:
        super().__init__(f"{klass} capacity: {reason}")
        self.klass, self.reason, self.retry_after_s = klass, reason, retry_after_s


class _Waiter:
    __slots__ = ("future", "tenant", "places", "since", "group")

    def __init__(self, future: asyncio.Future, tenant: str, places: int, since: float, group=None) -> None:
        self.future, self.tenant, self.places, self.since, self.group = future, tenant, places, since, group


class Slot:
    """A slot taken: when, by which tenant, and how many requests share it (what :meth:`Gate.leave` gives back,
    once per request)."""

    __slots__ = ("entered", "tenant", "members")

    def __init__(self, entered: float, tenant: str) -> None:
        self.entered, self.tenant = entered, tenant
        self.members = 1  # requests holding it now


def _weight(since_last_s: float) -> float:
    """A new sample's weight in a running estimate: one in ten, more when the last sample is older (after a quiet
    second the estimate is mostly the new sample: a long batch an hour ago says little about this request)."""
    return max(_EWMA, 1.0 - math.exp(-since_last_s / ACTIVE_S))


def _high(current: float, sample: float, weight: float = _EWMA) -> float:
    """A running estimate that rises at once to a higher sample and falls back with the mean."""
    return max(sample, current + weight * (sample - current))


QUEUE_FULL, TENANT_FULL, PREDICTED, DEADLINE = "queue_full", "tenant_share", "predicted_wait", "deadline"
REASONS = (QUEUE_FULL, TENANT_FULL, PREDICTED, DEADLINE)


class Gate:
    """The slots and the fair queue of one class of request.

    ``clock`` is a monotonic clock in seconds (a test passes its own); the gate
    keeps the time each running request took its slot, so its wait prediction
    sees a slot held longer than usual while it is being held.
    """

    def __init__(self, klass: str, slots: int, queue: int, tenant_share: float, retry_after_s: int,
                 clock=time.monotonic, tenant_slots: int = 0, pace: Pace | None = None) -> None:
        self.klass, self.slots, self.queue = klass, slots, queue
        # the held tenants' pacing, shared with the other gates that joined it (None: this gate caps alone)
        self.pace = pace
        if pace is not None:
            pace.join(self)
        # what a flooding tenant holds at most beside a modest one: tenant_slots (0: no such cap), all but one at most
        self.flood_cap = max(1, min(slots - 1, tenant_slots or slots))
        self.tenant_queue = max(1, int(queue * tenant_share)) if queue else 0
        self.retry_after_s = retry_after_s
        self.clock = clock
        self.running = 0
        self.queued = 0
        self.started: list[Slot] = []  # the running requests' slots
        self.running_by: dict[str, int] = {}  # tenant → its running requests
        self.recent: OrderedDict[str, float] = OrderedDict()  # tenant → when it last asked, within ACTIVE_S
        self.flooding: OrderedDict[str, float] = OrderedDict()  # tenant → when it was last refused, within ACTIVE_S
        # tenant → its waiters, in turn order: a tenant that had none goes first, one that had its turn goes last
        self.waiting: OrderedDict[str, deque[_Waiter]] = OrderedDict()
        self.hold_s = 0.0  # mean time a request held a slot (0 until one has)
        # the wait predictions' hold time: up at once with a longer hold, down as the mean does, so a wait is
        # refused up front rather than after its budget when holds grow
        self.hold_high_s = 0.0
        # the wait each place ahead in the queue has cost, as the waiters met it (a waiter that ran out of its
        # budget counts as having waited its budget): holds that end together, or turns given to other tenants
        # ahead of a waiter, show here when the hold time alone does not foresee them
        self.place_high_s = 0.0
        self.refused = dict.fromkeys(REASONS, 0)
        self.shared = 0  # requests that went in on a slot with another of their group
        self.refused_paced = 0  # refusals of a held tenant's requests (palimpsest.server.admission_pace)
        self.last_left = clock()  # when a request last gave its slot back
        self.last_refused = float("-inf")

    def _refuse(self, tenant: str, reason: str, why: str) -> Overloaded:
        self.refused[reason] += 1
        self.last_refused = self.clock()
        self._seen(tenant, self.last_refused)  # active when refused, so every flooding tenant is an active one
        self.flooding[tenant] = self.last_refused
        self.flooding.move_to_end(tenant)
        if self.pace is not None:
            self.refused_paced += self.pace.held(tenant)
            self.pace.decided(tenant, refused=True)
        return Overloaded(self.klass, why, self.retry_after_s)

    def cap(self, tenant: str) -> int:
        """Slots ``tenant`` may hold at once: all while it is the only tenant active; beside others all but one, or
        ``tenant_slots`` when it is flooding and one of them is not."""
        others = len(self.recent) - (tenant in self.recent)
        if not others or self.slots == 1:
            return self.slots
        if self.beside_modest(tenant):
            return self.flood_cap
        return self.slots - 1

    def beside_modest(self, tenant: str) -> bool:
        """Whether ``tenant`` floods this class (refused within :data:`ACTIVE_S`) while another tenant active here
        within it does not."""
        since = self.clock() - ACTIVE_S
        if self.flooding.get(tenant, since) <= since:
            return False
        # the flooding tenants are among the active ones (refused when it asked), so another active tenant is
        # not flooding when the active ones outnumber the flooding ones
        return sum(t > since for t in self.recent.values()) > sum(t > since for t in self.flooding.values())

    def _seen(self, tenant: str, now: float) -> None:
        self.recent[tenant] = now
        self.recent.move_to_end(tenant)
        for lately in (self.recent, self.flooding):
            while lately and next(iter(lately.values())) < now - ACTIVE_S:
                lately.popitem(last=False)

    def places_ahead(self, tenant: str) -> int:
        """Waiters a new request of ``tenant`` would have ahead of it in the turn order: none when its tenant has
        none waiting (it goes first), else its tenant's own waiters and, for each of them and for itself, one
        turn of every other waiting tenant."""
        own = len(self.waiting.get(tenant, ()))
        return min(self.queued, own * len(self.waiting) + len(self.waiting) - 1) if own else 0

    def predicted_wait_s(self, tenant: str) -> float:
        """The wait a new request of ``tenant`` would have for a slot.

        Each running request is expected to hold its slot for the predicted
        hold time in all, and one that has held it longer than that for as
        long again as it has held it so far; after that, each slot frees once
        per hold time. The request gets the slot that frees ``places ahead + 1``-th.
        At least as long as the places ahead have cost the waiters lately.
        """
        hold = self.hold_high_s
        if self.pace is not None and self.pace.held(tenant):
            # its requests of every class, one after another (``limit`` at once), each a hold and a rest
            per = hold * (1 + self.pace.rest) / (self.pace.limit or self.slots)
            return max(self.pace.wait_s(tenant, hold) + self.pace.waiting(tenant) * per,
                       (self.places_ahead(tenant) + 1) * self.place_high_s)
        now = self.clock()
        capped = self.running_by.get(tenant, 0) >= self.cap(tenant)  # its next slot is one of its own
        slots = self.cap(tenant) if capped else self.slots
        frees = sorted(hold - held if held <= hold else held
                       for held in (now - s.entered for s in self.started if not capped or s.tenant == tenant))
        frees += [0.0] * (slots - len(frees))  # a slot given back, not yet taken by the next waiter
        places = self.places_ahead(tenant)
        turn, slot = divmod(places, slots)
        return max(frees[slot] + turn * hold, (places + 1) * self.place_high_s)

    def _free_for(self, tenant: str) -> bool:
        return (self.running < self.slots and tenant not in self.waiting
                and self.running_by.get(tenant, 0) < self.cap(tenant) and self._paced(tenant))

    def _paced(self, tenant: str) -> bool:
        return self.pace is None or self.pace.allows(tenant)

    def _dispatch_all(self) -> None:
        if self.pace is None:
            self._dispatch()
        else:
            self.pace.dispatch()

    def refusal(self, tenant: str, budget_s: float) -> Overloaded | None:
        """The refusal a request of ``tenant`` would meet at once (counted as one), or None: a slot is free for it
        or it may wait for one. Takes nothing: a request not refused then goes through :meth:`enter`."""
        self._seen(tenant, self.clock())
        self._dispatch_all()
        if self._free_for(tenant):
            return None
        if self.queued >= self.queue:
            return self._refuse(tenant, QUEUE_FULL, f"{self.queued} requests already wait for a slot")
        mine = self.waiting.get(tenant)
        if mine is not None and len(mine) >= self.tenant_queue:
            return self._refuse(tenant, TENANT_FULL, f"your tenant already has {len(mine)} requests waiting")
        predicted = self.predicted_wait_s(tenant)
        share = PREDICTED_SHARE if self.clock() - self.last_refused < ACTIVE_S else 1.0
        if predicted > share * budget_s:
            return self._refuse(tenant, PREDICTED,
                                f"the wait for a slot is predicted at {predicted * 1000:.0f} ms, more than "
                                f"{'its' if share == 1.0 else 'half of its'} {budget_s * 1000:.0f} ms budget")
        return None

    async def enter(self, tenant: str, budget_s: float, group=None) -> Slot:
        """Wait for a slot (at most ``budget_s``); the slot, to give back. :class:`Overloaded` if refused.
        ``group`` (hashable; None: none): while waiting, it goes in with another waiter of its group."""
        refused = self.refusal(tenant, budget_s)
        if refused is not None:
            raise refused
        if self._free_for(tenant):
            return self._take(tenant)
        mine = self.waiting.get(tenant)
        loop = asyncio.get_running_loop()
        waiter = _Waiter(loop.create_future(), tenant, self.places_ahead(tenant), self.clock(), group)
        if mine is None:
            mine = self.waiting[tenant] = deque()
            self.waiting.move_to_end(tenant, last=False)  # nothing waiting: this tenant's turn comes first
        mine.append(waiter)
        self.queued += 1
        timer = loop.call_later(budget_s, self._expire, waiter)
        try:
            granted = await waiter.future
        except asyncio.CancelledError:  # the client went away: give back what it held or was about to
            if waiter.future.cancelled():
                self._remove(waiter)
            elif waiter.future.result() is not None:
                self.leave(waiter.future.result())
            raise
        finally:
            timer.cancel()
        if granted is None:
            raise self._refuse(tenant, DEADLINE, f"no slot within {budget_s * 1000:.0f} ms")
        return granted

    def _take(self, tenant: str = "") -> Slot:
        slot = Slot(self.clock(), tenant)
        self.running += 1
        self.running_by[tenant] = self.running_by.get(tenant, 0) + 1
        self.started.append(slot)
        if self.pace is not None:
            self.pace.took(tenant)
        return slot

    def leave(self, slot: Slot) -> None:
        """Give back a request's share of a slot; the slot, once no request holds it, to the next tenant in turn."""
        slot.members -= 1
        if slot.members:
            return
        now = self.clock()
        weight, self.last_left = _weight(now - self.last_left), now
        held = now - slot.entered
        self.hold_s = held if self.hold_s == 0.0 else self.hold_s + weight * (held - self.hold_s)
        self.hold_high_s = _high(self.hold_high_s, held, weight)
        self.running -= 1
        self.started.remove(slot)
        self.running_by[slot.tenant] -= 1
        if not self.running_by[slot.tenant]:
            del self.running_by[slot.tenant]
        if self.pace is not None:
            self.pace.gave_back(slot.tenant, held)
        self._dispatch_all()

    def _dispatch(self) -> None:
        """Free slots to the waiting tenants in turn, each up to its :meth:`cap`."""
        while self.queued and self.running < self.slots:
            tenant = next((t for t in self.waiting if self.running_by.get(t, 0) < self.cap(t) and self._paced(t)),
                          None)
            if tenant is None:  # those waiting hold all they may: the free slot is kept for another tenant
                return
            queue = self.waiting[tenant]
            waiter = queue.popleft()
            if queue:
                self.waiting.move_to_end(tenant)  # to the back of the turn order
            else:
                del self.waiting[tenant]
            self.queued -= 1
            slot = self._take(tenant)
            self._waited(waiter, slot.entered - waiter.since)
            waiter.future.set_result(slot)
            if waiter.group is not None:
                self._company(slot, tenant, waiter.group)

    def _company(self, slot: Slot, tenant: str, group) -> None:
        """The waiters of ``group`` (``tenant``'s) go in on ``slot`` too, up to :data:`GROUP_MAX` in all."""
        queue = self.waiting.get(tenant)
        for waiter in [w for w in queue or () if w.group == group][:GROUP_MAX - 1]:
            queue.remove(waiter)
            self.queued -= 1
            self._waited(waiter, self.clock() - waiter.since)
            slot.members += 1
            self.shared += 1
            if self.pace is not None:
                self.pace.decided(tenant, refused=False)
            waiter.future.set_result(slot)
        if queue is not None and not queue:
            del self.waiting[tenant]

    def _waited(self, waiter: _Waiter, waited: float) -> None:
        self.place_high_s = _high(self.place_high_s, waited / (waiter.places + 1))

    def _remove(self, waiter: _Waiter) -> None:
        queue = self.waiting.get(waiter.tenant)
        if queue is None or waiter not in queue:
            return
        queue.remove(waiter)
        if not queue:
            del self.waiting[waiter.tenant]
        self.queued -= 1

    def _expire(self, waiter: _Waiter) -> None:
        if not waiter.future.done():
            self._remove(waiter)
            self._waited(waiter, self.clock() - waiter.since)
            waiter.future.set_result(None)

    def state(self) -> dict:
        return {"slots": self.slots, "running": self.running, "queued": self.queued,
                "hold_ms": round(self.hold_s * 1000, 2), "shared": self.shared, "refused": sum(self.refused.values()),
                "refused_by": dict(self.refused), "refused_paced": self.refused_paced}


class Admission:
    """A replica's gates, one per class of request."""

    def __init__(self, settings: AdmissionSettings) -> None:
        self.settings = settings
        # reads and writes pace a held tenant together; the memory proxy's calls mostly wait on the upstream
        pace = Pace(settings.tenant_slots or None, settings.tenant_rest, time.monotonic)
        self.gates = {c: Gate(c, settings.slots(c), settings.queue, settings.tenant_share, settings.retry_after_s,
                              tenant_slots=0 if c == PROXY else settings.tenant_slots,
                              pace=None if c == PROXY else pace) for c in CLASSES}

    def budget_s(self, asked_ms: float | None) -> float:
        """The wait budget of a request: the server's, or less when the client asks for less."""
        budget = self.settings.wait_ms
        if asked_ms is not None and 0 <= asked_ms < budget:
            budget = asked_ms
        return budget / 1000

    async def enter(self, klass: str, tenant: str, asked_ms: float | None = None, group=None) -> Slot:
        return await self.gates[klass].enter(tenant, self.budget_s(asked_ms), group)

    def refusal(self, klass: str, tenant: str, asked_ms: float | None = None) -> Overloaded | None:
        """The refusal a request would meet at once (:meth:`Gate.refusal`), or None."""
        return self.gates[klass].refusal(tenant, self.budget_s(asked_ms))

    def leave(self, klass: str, slot: Slot) -> None:
        self.gates[klass].leave(slot)

    def idle_for(self) -> float:
        """Seconds since the last request of any class ended; 0 while one runs or waits."""
        if any(g.running or g.queued for g in self.gates.values()):
            return 0.0
        return time.monotonic() - max(g.last_left for g in self.gates.values())

    def state(self) -> dict:
        return {c: g.state() for c, g in self.gates.items()}
