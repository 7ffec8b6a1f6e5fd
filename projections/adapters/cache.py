"""Where the files a process makes once and reuses live: the packaged encoders' exported ONNX graphs, jieba's
prefix dictionary (``PALIMPSEST_CACHE_DIR``, default ``$XDG_CACHE_HOME/palimpsest`` or ``~/.cache/palimpsest``).

An encoder's graph takes tens of seconds of CPU to make, and on a machine that has none yet several processes
may want it at once (a server's replicas, programs opening stores side by side, test workers): with
:func:`made_once` one of them makes it and the others wait for it, then read the file it wrote, instead of each
making it again on the same cores.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

import structlog

try:
    import fcntl
except ImportError:  # not on POSIX: each process makes the file it lacks, as before
    fcntl = None

log = structlog.get_logger("palimpsest.cache")


def cache_dir() -> Path:
    explicit = os.environ.get("PALIMPSEST_CACHE_DIR")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "palimpsest"


@contextlib.contextmanager
def made_once(path: Path) -> Iterator[None]:
    """Held while this process makes ``path`` when there is none yet: another process about to make it waits
    until this one is done (and should then look for the file again). Nothing is held when ``path`` exists.

    An exclusive lock on ``<path>.lock`` (left in place, empty: removing it would let a waiting process and a new
    one lock two different files); the system lets it go if the process dies.
    """
    lock = None if fcntl is None or path.exists() else _lock_file(path)
    if lock is None:
        yield
        return
    with lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # being made by another process: say so, as the wait may be long
            started = time.monotonic()
            log.info("cache_file_awaited", path=str(path), reason="another process is making it")
            fcntl.flock(lock, fcntl.LOCK_EX)
            log.info("cache_file_ready", path=str(path), waited_s=round(time.monotonic() - started, 1))
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _lock_file(path: Path):
    """The open lock file of ``path``, or None where the cache directory cannot be written (the build then fails
    there and says so, as without the lock)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return open(path.with_name(path.name + ".lock"), "ab")
    except OSError:
        return None
