"""Where one request's time went: its phases timed as it runs (the server's ``Server-Timing`` header).

Whoever wants the phases of a piece of work opens a record for it
(:func:`use`, undone by :func:`reset`); the code on
the work's path times its phases into the record of its context
(:func:`timed`), and does nothing when none is open (the embedded library).
A record follows the work into the worker threads it runs in (a context
variable is copied into the thread that runs a request's route), and a phase
entered more than once (two chunks of an ingest) adds up.

The phases timed on the store's side: ``encode`` (the query's vector, or the
messages' vectors of an ingest) and ``shard`` (the shard's answer: its read or
write and the round trip to it), and within the shard's time, for a read over
the shard's read channel, ``shard_lock`` (its wait for the shard's lock,
behind writes and other reads) and ``shard_read`` (the read itself). A query's
encode and a shard's read also give the CPU their thread spent
(``encode_cpu``, ``shard_read_cpu``): one well below its phase's time waited
for a core. The server adds ``admit`` (the wait for an admission slot),
``batch_wait`` (an ingest's wait for its shard's batch,
:mod:`palimpsest.server.ingest_batches`) and ``total`` (from the request's
arrival until its answer starts).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token


class Phases:
    """A request's phases so far: name → milliseconds, in the order first timed."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = {}

    def add(self, name: str, ms: float) -> None:
        self.ms[name] = self.ms.get(name, 0.0) + ms

    def header(self, **more: float) -> str:
        """The phases (and ``more``, e.g. the total) as a ``Server-Timing`` value: ``name;dur=ms, ...``."""
        return ", ".join(f"{name};dur={ms:.1f}" for name, ms in {**self.ms, **more}.items())


_current: ContextVar[Phases | None] = ContextVar("palimpsest_phases", default=None)


def use(phases: Phases | None) -> Token:
    """Time the phases of this context (and of the threads it hands work to) into ``phases``."""
    return _current.set(phases)


def reset(token: Token) -> None:
    """Back to the record (or none) before :func:`use` gave ``token``."""
    _current.reset(token)


def add(name: str, ms: float) -> None:
    """Add ``ms`` to phase ``name`` of the record open here, if one is (a phase timed elsewhere: a shard's)."""
    phases = _current.get()
    if phases is not None:
        phases.add(name, ms)


@contextmanager
def timed(name: str, *, cpu: bool = False) -> Iterator[None]:
    """Time the block as phase ``name`` of the record open here, if one is; with ``cpu``, also the CPU time this
    thread spent in it, as phase ``name_cpu`` (near the phase's own time: the block worked all along; well below
    it: it waited, for a lock, another process or a core of a busy machine)."""
    phases = _current.get()
    if phases is None:
        yield
        return
    start, used = time.perf_counter(), time.thread_time() if cpu else 0.0
    try:
        yield
    finally:
        phases.add(name, (time.perf_counter() - start) * 1000)
        if cpu:
            phases.add(name + "_cpu", (time.thread_time() - used) * 1000)
