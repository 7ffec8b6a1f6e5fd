"""The graph labels' reactor: ingest stages graph memories without label vectors; this embeds them afterwards.

An ingest leaves the encoder to the turns: the graph memories it stages carry
no label vectors. :class:`LabelReactor` keeps which users they were staged
for and, once the ingest has paused ``idle_s`` seconds
(``PALIMPSEST_LABELS_IDLE_S``, default 1 s), runs one pass of the encoder over
every label still without a vector on a thread of its own, recorded as
``graph_labels_embedded`` events (:meth:`GraphApiMixin.embed_labels
<palimpsest.memory_graph.GraphApiMixin.embed_labels>`): the embedding follows
the write that staged the labels, outside any shard lock while it encodes.
Closing the process runs the pass still due, so a short script leaves its
labels embedded. One pass at a time; a failed pass is logged and the users
stay due.

Reads do not wait for it and record nothing: a graph read encodes the labels
not embedded yet for itself (:meth:`~palimpsest.memory_graph.GraphApiMixin._graph_read`).
Writes that compare the labels' vectors (a consolidation, ``link_memories``)
ask it to have caught up with their user first (:meth:`LabelReactor.caught_up`).
``PALIMPSEST_LABELS_IDLE_S=off`` (or ``0``) turns the reactor's own passes off:
then only those writes, :meth:`~palimpsest.Memory.wait_idle` and a
re-embedding record the labels (a test then sees no event it did not cause by a call).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable

import structlog

from events.errors import InvalidInputError

log = structlog.get_logger("palimpsest.labels")
IDLE_S_ENV = "PALIMPSEST_LABELS_IDLE_S"  # seconds of ingest pause before the reactor's pass ("off": no pass)
DEFAULT_IDLE_S = 1.0


def idle_s_from_env(environ=os.environ) -> float | None:
    """The reactor's pause from ``PALIMPSEST_LABELS_IDLE_S``: unset or empty, :data:`DEFAULT_IDLE_S`; ``off``,
    ``false`` or ``0``, None (no pass of its own); else a positive number of seconds."""
    value = environ.get(IDLE_S_ENV, "").strip()
    if not value:
        return DEFAULT_IDLE_S
    if value.lower() in ("off", "false", "0"):
        return None
    try:
        seconds = float(value)
    except ValueError:
        seconds = float("nan")
    if not seconds > 0 or seconds == float("inf"):
        raise InvalidInputError([(IDLE_S_ENV, f"{value!r}; give a positive number of seconds, or off")],
                                what="graph labels' reactor")
    return seconds


class LabelReactor:
    """Embeds staged graph labels with ``embed(tenant, user_id)`` (None, None: every user's) off the caller's path."""

    def __init__(self, embed: Callable[[str | None, str | None], int], *, idle_s: float | None = None) -> None:
        self._embed = embed
        self.idle_s = idle_s
        # users whose staged labels may lack vectors → the stamp of their latest staging: a pass clears only the
        # users staged before it began (labels staged meanwhile may have been committed after its look)
        self._due: dict[tuple[str, str], int] = {}
        self._stamp = 0
        self._clean: set[tuple[str, str]] = set()  # users whose every label this process embedded
        self._pass = threading.Lock()  # one embedding pass at a time
        self._state = threading.Condition()
        self._last_staged = 0.0
        self._thread: threading.Thread | None = None
        self._closed = False

    def staged(self, users: Iterable[tuple[str, str]]) -> None:
        """Graph memories were written for ``users``: their labels are due (embedded after the next pause)."""
        users = set(users)
        if not users:
            return
        with self._state:
            self._stamp += 1
            self._due.update(dict.fromkeys(users, self._stamp))
            self._clean -= users
            self._last_staged = time.monotonic()
            if self._thread is None and not self._closed and self.idle_s is not None:
                self._thread = threading.Thread(target=self._run, name="graph-labels", daemon=True)
                self._thread.start()
            self._state.notify()

    def caught_up(self, tenant: str | None = None, user_id: str | None = None) -> int:
        """Make sure every label of the user (or of everyone) has its vector; returns how many were recorded now."""
        one = tenant is not None and user_id is not None
        if one:
            with self._state:
                if (tenant, user_id) in self._clean:
                    return 0
        with self._pass:
            with self._state:
                began = self._stamp
            recorded = self._embed(tenant, user_id)
            with self._state:
                if one:
                    self._done([(tenant, user_id)], began)
                elif tenant is None:
                    self._done(list(self._due), began)
            return recorded

    def _done(self, users: Iterable[tuple[str, str]], began: int) -> None:
        """A pass that began at stamp ``began`` embedded ``users``' labels: those not staged again since are clean.
        Called with ``_state`` held."""
        for user in users:
            if self._due.get(user, 0) <= began:
                self._due.pop(user, None)
                self._clean.add(user)

    def forget(self) -> None:
        """Forget what was embedded (the encoder changed, or a user was erased): every user is due again."""
        with self._state:
            self._clean.clear()

    @property
    def pending(self) -> int:
        """Users whose staged labels are due."""
        with self._state:
            return len(self._due)

    def close(self, timeout: float = 120.0) -> None:
        """Stop the thread; with a pause set (the reactor on), first run the pass still due, so the labels
        staged by this process are recorded before it ends (a failure is logged, the labels stay unembedded)."""
        with self._state:
            self._closed = True
            self._state.notify()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)
        if self.idle_s is not None and self.pending:
            try:
                self.caught_up()
            except Exception as exc:  # noqa: BLE001 - closing goes on; a later pass or write embeds them
                log.warning("label_embedding_failed", at="close", error=f"{type(exc).__name__}: {exc}")

    def _run(self) -> None:
        while True:
            with self._state:
                while not self._closed and (not self._due or time.monotonic() - self._last_staged < self.idle_s):
                    wait = self.idle_s - (time.monotonic() - self._last_staged) if self._due else None
                    self._state.wait(timeout=max(wait, 0.01) if wait is not None else None)
                if self._closed:
                    return
                users, began = list(self._due), self._stamp
            try:
                with self._pass:
                    self._embed(None, None)
                with self._state:
                    self._done(users, began)
            except Exception as exc:  # noqa: BLE001 - a background pass must not end the thread; the next retries
                log.warning("label_embedding_failed", users=len(users), error=f"{type(exc).__name__}: {exc}")
                with self._state:
                    self._last_staged = time.monotonic()
