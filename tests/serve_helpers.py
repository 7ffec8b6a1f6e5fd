"""Helpers shared by the served-store tests."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def served_store(store: Path, **settings) -> Iterator[tuple[object, dict]]:
    """``store`` served on a free port with ``settings`` (``ServeSettings`` fields), hash vectors and one shard;
    ``(the running server, the Authorization header of a key of tenant acme)``; stopped at exit."""
    from palimpsest.server.keys import KeyRing
    from palimpsest.server.run import start
    from palimpsest.server.settings import ServeSettings

    running = start(ServeSettings(store=str(store), port=free_port(), **settings), embedder="hash", num_shards=1)
    try:
        key = KeyRing(store).create("acme")[0]
        yield running, {"Authorization": f"Bearer {key}"}
    finally:
        running.stop()
