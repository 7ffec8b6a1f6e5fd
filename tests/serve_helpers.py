"""Helpers shared by the served-store tests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from palimpsest.server.ports import free_port


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


def stderr_tail(path: Path, lines: int = 40) -> str:
    """The last ``lines`` of a server process's stderr file, for an assertion's message (why it stopped)."""
    try:
        said = path.read_text(errors="replace").splitlines()
    except OSError as exc:
        return f"(no stderr: {exc})"
    return "its stderr ended:\n" + "\n".join(said[-lines:])
