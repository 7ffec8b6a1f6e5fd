"""The graph labels' reactor: ingest stages graph memories without label vectors; this embeds them afterwards.

An ingest leaves the encoder to the turns: the graph memories it stages carry
no label vectors. :class:`LabelReactor` keeps which users they were staged
for, and one pass of the encoder over every label still without a vector
records them as ``graph_labels_embedded`` events (:meth:`GraphApiMixin.embed_labels
<palimpsest.memory_graph.GraphApiMixin.embed_labels>`). A graph read or a
consolidation asks the reactor to have caught up with the user it reads
(:meth:`caught_up`: the pass, if one is due). With ``idle_s`` (for a
long-lived process: ``PALIMPSEST_LABELS_IDLE_S`` seconds) the reactor also
runs the pass on a thread of its own once an ingest has paused that long, so
a later graph read finds the labels embedded. Off by default: a short script
or a test then sees no event it did not cause by a call. One pass at a time;
a failed background pass is logged and the users stay due.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable

import structlog

log = structlog.get_logger("palimpsest.labels")
IDLE_S_ENV = "PALIMPSEST_LABELS_IDLE_S"  # seconds of ingest pause before a background pass (unset: no thread)


def idle_s_from_env(environ=os.environ) -> float | None:
    """The background pass's pause from ``PALIMPSEST_LABELS_IDLE_S`` (None: unset, empty or not a positive
    number, which turns the background pass off)."""
    try:
        value = float(environ.get(IDLE_S_ENV, ""))
    except ValueError:
        return None
    return value if value > 0 else None


class LabelReactor:
    """Embeds staged graph labels with ``embed(tenant, user_id)`` (None, None: every user's) off the caller's path."""

    def __init__(self, embed: Callable[[str | None, str | None], int], *, idle_s: float | None = None) -> None:
        self._embed = embed
        self.idle_s = idle_s
        self._due: set[tuple[str, str]] = set()  # users whose staged labels may lack vectors
        self._clean: set[tuple[str, str]] = set()  # users whose every label this process embedded
        self._pass = threading.Lock()  # one embedding pass at a time
        self._state = threading.Condition()
        self._last_staged = 0.0
        self._thread: threading.Thread | None = None
        self._closed = False

    def staged(self, users: Iterable[tuple[str, str]]) -> None:
        """Graph memories were staged for ``users``: their labels are due (embedded after the next pause)."""
        users = set(users)
        if not users:
            return
        with self._state:
            self._due |= users
            self._clean -= users
            self._last_staged = time.monotonic()
            if self._thread is None and not self._closed and self.idle_s is not None:
                self._thread = threading.Thread(target=self._run, name="graph-labels", daemon=True)
                self._thread.start()
            self._state.notify()

    def caught_up(self, tenant: str | None = None, user_id: str | None = None) -> int:
        """Make sure every label of the user (or of everyone) has its vector; returns how many were recorded now."""
        if tenant is not None and user_id is not None:
            with self._state:
                if (tenant, user_id) in self._clean:
                    return 0
        with self._pass:
            recorded = self._embed(tenant, user_id)
            with self._state:
                if tenant is not None and user_id is not None:
                    self._due.discard((tenant, user_id))
                    self._clean.add((tenant, user_id))
                elif tenant is None:
                    self._clean |= self._due
                    self._due.clear()
            return recorded

    def forget(self) -> None:
        """Forget what was embedded (the encoder changed, or a user was erased): every user is due again."""
        with self._state:
            self._clean.clear()

    @property
    def pending(self) -> int:
        """Users whose staged labels are due."""
        with self._state:
            return len(self._due)

    def close(self) -> None:
        with self._state:
            self._closed = True
            self._state.notify()

    def _run(self) -> None:
        while True:
            with self._state:
                while not self._closed and (not self._due or time.monotonic() - self._last_staged < self.idle_s):
                    wait = self.idle_s - (time.monotonic() - self._last_staged) if self._due else None
                    self._state.wait(timeout=max(wait, 0.01) if wait is not None else None)
                if self._closed:
                    return
                users = set(self._due)
            try:
                with self._pass:
                    self._embed(None, None)
                with self._state:
                    self._due -= users
                    self._clean |= users
            except Exception as exc:  # noqa: BLE001 - a background pass must not end the thread; the next retries
                log.warning("label_embedding_failed", users=len(users), error=f"{type(exc).__name__}: {exc}")
                with self._state:
                    self._last_staged = time.monotonic()
