"""ShardActor: the Ray actor around :class:`actors.core.ShardCore`.

Owns one shard's DuckDB log file (its only writer), the projections of the
users routed to it, and its LanceDB table. Three entry points: ``handle``
(commands, each idempotent by its ``command_id``), ``query`` (reads; also
served by the read channel, :mod:`actors.read_channel`) and ``admin`` (a
replay or a backup).

Two locks: ``_writing``, the log's (one writer at a time), always taken
before ``_lock``, the projections' (one user at a time). Who holds what:

- a command, an admin command, and a query that reads the log
  (``flushes_first``): both, for the whole call, except that a command's
  durable writes let go of ``_lock`` (``ShardCore.appending``): during the
  log's append (the DuckDB write and its COMMIT) queries are answered from
  the state as it was, the streams written stay pinned resident, and the
  committed events are folded once ``_lock`` is taken again, before the
  command is acknowledged (a crash in between loses nothing: the log is
  folded again at start); the new LanceDB rows are then handed to the
  table without ``_lock`` too, which holds them and writes them with others
  (the table is a projection reconciled at start);
- any other query: ``_lock`` only, and it appends nothing; its touches wait
  in a buffer. It takes ``_lock`` through a turnstile (``_turnstile``) that a
  writer waiting for ``_lock`` holds (:class:`WriterTurn`), so the writer
  waits for the queries already running, not for those arriving after it;
- the touch flusher (thread ``touch-flusher``): group-commits the buffered
  touches once older than ``spec.touch_flush_s``: ``_lock`` to take them,
  ``_writing`` alone for the durable append (queries are answered
  meanwhile), both to fold them and write the follow-ups their commit calls
  for (offline ones; model ones are only queued); and writes the LanceDB
  rows the table holds once the oldest has waited ``lance.FLUSH_S`` (no
  lock of the shard: the table has its own);
- the reactor (thread ``model-followups``, only with a language model
  configured, :mod:`actors.reactor`): ``_lock`` for a moment to take a queued
  follow-up, no lock while the model answers, both to record the answer;
- idle work (snapshots, warm-ups: :mod:`actors.warm`): one user at a time,
  between calls.

So no query waits for a model's call: a command whose decider asks the model
(with one configured) is decided under both locks with the answers already
given, its other asks made with no lock held and the command decided again
(:mod:`actors.answers_first`).

Recovery: Ray restarts a dead actor (``max_restarts=-1``); ``__init__``
folds the log again and reconciles LanceDB, so nothing acknowledged is lost.
Calls in flight when it died are retried with the same arguments
(``max_task_retries=-1``): a command already applied before the crash finds
its record and returns the recorded outcome, appending nothing; queries have
no effects beyond touches (buffered touches not yet flushed are lost with
the process: they are access signals, not facts); an admin command runs
again (a replay rebuilds again, a backup copies again). Model follow-ups
queued or in flight are lost too; what is still due is decided again at the
stream's next commit.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import contextmanager, nullcontext

import ray
import structlog

from actors import answers_first, heap
from actors.commands import AdminCommand, Command, Query, Replay
from actors.core import ShardCore
from actors.reactor import Reactor
from actors.read_channel import ChannelServer
from actors.spec import ShardSpec
from actors.warm import Warmer
from projections.rules import dictionaries

logger = structlog.get_logger("palimpsest.shard")
REACT_POLL_S = 0.05  # how soon a queued model follow-up is asked


class WriterTurn:
    """``lock`` as a writer takes it: ahead of the queries arriving while it waits, which pass ``turnstile`` (held
    by the waiting writer) before they take ``lock``. A context manager, reusable."""

    def __init__(self, lock: threading.Lock, turnstile: threading.Lock) -> None:
        self._lock, self._turnstile = lock, turnstile

    def take(self) -> None:
        with self._turnstile:
            self._lock.acquire()

    def __enter__(self) -> WriterTurn:
        self.take()
        return self

    def __exit__(self, *exc) -> None:
        self._lock.release()


@ray.remote(max_restarts=-1, max_task_retries=-1, num_cpus=0)
class ShardActor:
    def __init__(self, spec: ShardSpec) -> None:
        # Logs go to stderr: a driver that forwards worker output keeps its stdout for results.
        structlog.configure(logger_factory=structlog.PrintLoggerFactory(file=sys.stderr))
        self._core = ShardCore(spec)
        # The folded projections are long-lived: moved out of the collector's reach, a full collection no
        # longer walks them in the middle of a query (actors.heap).
        heap.settle()
        self._lock = threading.Lock()  # the projections: queries, folds
        self._writing = threading.Lock()  # the log: one writer at a time; always taken before ``_lock``
        self._turnstile = threading.Lock()  # held by a writer waiting for ``_lock``: queries queue behind it
        self._writer_turn = WriterTurn(self._lock, self._turnstile)  # how writers take ``_lock``
        self._core.appending = self._projections_let_go
        self._closed = threading.Event()
        self._warmer = Warmer(spec.dim)  # read indexes built while idle (actors.warm)
        threading.Thread(target=self._flusher, name="touch-flusher", daemon=True).start()
        self._reactor = Reactor(self._core, writing=self._writing, projections=self._writer_turn, stop=self._closed)
        if self._core.llm is not None:  # without a model no follow-up waits for one
            threading.Thread(target=self._react, name="model-followups", daemon=True).start()
        self._spent = threading.local()  # per thread: where its last query's time went (ShardActor.spent)
        self._channel = ChannelServer(self.query, f"shard-{spec.index}", spent=self.spent)

    def pid(self) -> int:
        return os.getpid()

    def where(self) -> dict:
        """This incarnation's process and Ray node (the chaos run kills them; a restart changes both)."""
        return {"pid": os.getpid(), "node_id": ray.get_runtime_context().get_node_id()}

    def channel(self) -> dict:
        """Where this incarnation's read channel listens, and on which Ray node (a caller elsewhere uses Ray)."""
        return {"path": self._channel.path, "node_id": ray.get_runtime_context().get_node_id(), "pid": os.getpid()}

    def load_dictionaries(self, languages: tuple[str, ...]) -> float:
        """Load the text rules' dictionaries of ``languages`` now (:mod:`projections.rules.dictionaries`); the
        seconds it took."""
        return dictionaries.load(languages)

    def warmed(self) -> int:
        """Users this incarnation warmed while idle (:mod:`actors.warm`)."""
        return self._warmer.warmed

    def quiet(self, seconds: float) -> None:
        """No warm-ups or snapshots for ``seconds`` (an ingest of the store runs elsewhere; ``0`` ends it)."""
        self._warmer.quiet(seconds)

    def idle_work(self) -> int:
        """Users waiting for a snapshot or a warm-up: 0 once the work idle time does is done (always 0 with the
        idle work off: ``PALIMPSEST_WARM=0``)."""
        if not self._warmer.enabled:
            return 0
        with self._lock:
            core = self._core
            return len(core.users.due(core.state.users, list(core.state.users.resident))) + len(self._warmer.due(core))

    def handle(self, commands: list[Command]) -> list:
        """Commands in order (:mod:`actors.answers_first`: a decider's model calls are made with no lock held)."""
        self._warmer.saw()
        return answers_first.handle(self._core, commands, writing=self._writing, projections=self._writer_turn,
                                    after_commit=self._crash_if_asked)

    @contextmanager
    def _projections_let_go(self):
        """A commit's durable append, held by a writer (``_writing`` and ``_lock``): ``_lock`` let go meanwhile."""
        self._lock.release()
        try:
            yield
        finally:
            self._writer_turn.take()

    def _crash_if_asked(self) -> None:
        marker = self._core.spec.crash_marker
        if marker is not None and marker.exists():
            marker.unlink()
            os._exit(1)  # the injected crash: committed, never acknowledged

    def query(self, queries: list[Query]) -> list:
        """Answers to ``queries``; where their time went (:meth:`spent`) kept for this thread."""
        self._warmer.saw(queries)
        asked = time.perf_counter()
        if any(q.flushes_first for q in queries):  # these write pending touches, then read the log
            with self._writing, self._writer_turn:
                return self._answered(queries, asked)
        with self._turnstile:  # behind a writer waiting for the projections
            pass
        with self._lock:
            return self._answered(queries, asked)

    def _answered(self, queries: list[Query], asked: float) -> list:
        began, used = time.perf_counter(), time.thread_time()
        try:
            return [self._core.query(q) for q in queries]
        finally:
            done = time.perf_counter()
            self._spent.last = {"shard_lock": (began - asked) * 1000, "shard_read": (done - began) * 1000,
                                "shard_read_cpu": (time.thread_time() - used) * 1000}

    def spent(self) -> dict[str, float]:
        """Where this thread's last :meth:`query` spent its time: the wait for the projections' lock (behind the
        writes and the other reads), the read itself and the CPU the thread spent in it, in ms (the read channel
        sends it with the answers)."""
        return getattr(self._spent, "last", {})

    def admin(self, commands: list[AdminCommand]) -> list:
        """Admin commands (a replay, a backup), each run alone: no command, query, flush or recorded model answer
        meanwhile."""
        self._warmer.saw()
        with self._writing, self._writer_turn:
            answers = [self._core.admin(command) for command in commands]
            if any(isinstance(command, Replay) for command in commands):
                heap.settle()  # the rebuilt projections out of the collector's reach, as at start-up
            return answers

    def followups(self) -> dict:
        """The model follow-ups (:mod:`actors.reactor`): waiting, in flight, and answers recorded or dropped."""
        with self._lock:
            return {"waiting": len(self._core.waiting_asks()), "in_flight": int(self._reactor.asking is not None),
                    **self._core.followups}

    def close(self) -> None:
        self._closed.set()
        self._channel.close()
        with self._writing, self._lock:
            self._core.close()

    def _flusher(self) -> None:
        period = max(0.01, self._core.spec.touch_flush_s / 2)
        while not self._closed.wait(period):
            self._flush_due()
            self._vectors_due()
            if self._warmer.idle():
                core, users = self._core, self._core.users
                # The snapshots touch flushes leave to idle time (ShardCore.fold_touches: one held the projections,
                # and every query, for tens of milliseconds), then the read indexes (actors.warm).
                self._while_idle(lambda: users.due(core.state.users, list(core.state.users.resident)),
                                 lambda stream: users.checkpoint(core.state.users, [stream]), "checkpoint_failed",
                                 writes=True)
                self._while_idle(lambda: self._warmer.due(core), lambda stream: self._warmer.warm(core, stream),
                                 "warm_failed")

    def _react(self) -> None:
        """The reactor's thread: the queued model follow-ups, asked with no lock held (:mod:`actors.reactor`)."""
        while not self._closed.wait(REACT_POLL_S):
            try:
                self._reactor.run()
            except Exception as exc:  # noqa: BLE001 - a follow-up is decided again at the stream's next commit
                logger.warning("model_followup_failed", shard=self._core.spec.index,
                               error=f"{type(exc).__name__}: {exc}")

    def _flush_due(self) -> None:
        with self._writing:
            with self._lock:
                if self._closed.is_set() or not self._core.touches_due():
                    return
                taken = self._core.take_touches()
            envelopes = None
            try:  # the durable append, without the projections' lock: queries are answered meanwhile
                envelopes = self._core.append_touches(taken)
            except Exception as exc:  # noqa: BLE001 - a failed flush is logged and counted; the touches are dropped
                self._core.flush_failures += 1
                logger.warning("touch_flush_failed", shard=self._core.spec.index, error=str(exc))
            with self._writer_turn:
                try:
                    self._core.fold_touches(taken, envelopes)
                except Exception as exc:  # noqa: BLE001 - as when the flush ran in one step
                    self._core.flush_failures += 1
                    logger.warning("touch_flush_failed", shard=self._core.spec.index, error=str(exc))

    def _vectors_due(self) -> None:
        """Write the LanceDB rows held once the oldest has waited long enough (no lock of the shard: the table has
        its own, and its rows are of events already appended and folded)."""
        vectors = self._core.vectors
        if self._closed.is_set() or not vectors.flush_due():
            return
        try:
            vectors.flush()
        except Exception as exc:  # noqa: BLE001 - the rows come back when their users are next loaded (reconciled)
            logger.warning("vector_flush_failed", shard=self._core.spec.index, error=f"{type(exc).__name__}: {exc}")

    def _while_idle(self, due, step, failed: str, *, writes: bool = False) -> None:
        """``step`` for each user ``due()`` lists, one at a time with the projections (and the log, if it
        ``writes``), until a call arrives. A failure is logged only: a snapshot or a warm-up is never needed (the
        log holds every event; the next query builds the indexes it reads)."""
        with self._lock:
            streams = due()
        for stream in streams:
            if self._closed.is_set() or not self._warmer.idle():
                return
            with self._writing if writes else nullcontext(), self._lock:
                try:
                    step(stream)
                except Exception as exc:  # noqa: BLE001 - see the docstring
                    logger.warning(failed, shard=self._core.spec.index, error=f"{type(exc).__name__}: {exc}")
