"""Blocking calls made from the server's event loop (the JSON routes' synchronous endpoints, the proxy's memory
read and recording, a rate lease) run on worker threads this process keeps for its whole life.

Starlette's ``run_in_threadpool`` (anyio) keeps its worker threads for as long as the event loop's root task runs.
Under Ray Serve the replica's loop runs forever with no such task, so anyio takes each request's own task for the
root: every call started a thread, on the request's path, and stopped it when the request ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

WORKERS = 40  # at most this many calls at once, as anyio's default limit of worker threads
_pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="palimpsest-worker")


async def in_thread(fn: Callable[..., T], /, *args, **kwargs) -> T:
    """``fn(*args, **kwargs)`` on a kept worker thread, in a copy of this context (a request's record of its
    phases follows it there). Cancelled, it lets the call finish before the cancellation goes on, as
    ``run_in_threadpool`` does: a call's effects are never left half-way under its caller's feet."""
    call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
    future = asyncio.get_running_loop().run_in_executor(_pool, call)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        while not future.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait([future])
        raise
