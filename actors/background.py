"""Work nobody waits on, below the threads that answer requests in the OS scheduler's order.

The memory proxy records each call after its answer has gone, and a served
store consolidates its graph in Ray tasks while its replica is quiet: CPU
work (an encoder run, a consolidation round) that competes, on a small
machine, with the next caller's request. Run on :func:`background_executor`'s
thread, or in a task that calls :func:`lower_this_thread` first, it has a
raised nice value (Linux sets it per thread), so the scheduler gives a core
to the threads answering requests first and to the background work when one
is free: the same work, done in the gaps. The interpreter lock is not
affected (the encoder, the shards' calls and a task's process let go of it or
hold their own). Where the nice value cannot be set (another OS, no
permission), the work runs at its normal priority.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

BACKGROUND_NICE = 10  # added to the process's nice value for the background thread
ENV = "PALIMPSEST_BACKGROUND_NICE"  # another increment (0: the background thread runs at normal priority)


def lower_this_thread(increment: int | None = None) -> bool:
    """The calling thread's nice value at least the process's plus ``increment`` (default: the environment's,
    :func:`increment_from_env`; Linux sets it per thread; a thread already that low stays as it is); whether
    the thread now runs that low."""
    increment = increment_from_env() if increment is None else increment
    if increment <= 0 or not hasattr(os, "setpriority"):
        return False
    try:
        tid = threading.get_native_id()
        wanted = min(19, os.getpriority(os.PRIO_PROCESS, os.getpid()) + increment)
        if os.getpriority(os.PRIO_PROCESS, tid) < wanted:
            os.setpriority(os.PRIO_PROCESS, tid, wanted)
        return os.getpriority(os.PRIO_PROCESS, tid) >= wanted
    except OSError:
        return False


def increment_from_env(environ=os.environ) -> int:
    raw = environ.get(ENV, "")
    try:
        return max(0, int(raw)) if raw.strip() else BACKGROUND_NICE
    except ValueError:
        return BACKGROUND_NICE


def background_executor(name: str) -> ThreadPoolExecutor:
    """A one-thread executor whose thread runs below the request threads (see the module docstring)."""
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix=name, initializer=lower_this_thread,
                              initargs=(increment_from_env(),))
