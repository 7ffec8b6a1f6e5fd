"""The shard's reactor: the follow-ups that need a language model, asked with no lock held.

A commit's reaction (:meth:`actors.core.ShardCore.commit`, after a command
or a touch flush) decides, under the projections' lock, which distillations
and episode titles are due and queues each as an
:class:`actors.followups.ModelAsk` holding its prompt. :class:`Reactor`
works through that queue, one ask at a time, in three steps:

1. take the ask (the projections' lock, for a moment);
2. ask the model with no lock held: queries, commands and touch flushes go
   on meanwhile, however slow the model is;
3. record the answer (the log's lock, then the projections'):
   :meth:`~actors.core.ShardCore.record_answer` appends the call's
   ``llm_call_recorded`` event and, if the follow-up is still due by then
   (a concurrent command may have done it), the decision read from the answer
   by a pure function, so a replay that answers from the recorded call
   (:class:`actors.llm.RecordedLlm`) decides the same.

Without a language model nothing is queued: the offline follow-ups are
written in the commit's own reaction, as before. Asks waiting or in flight
when the process dies are lost; what is still due is decided again at the
stream's next commit (a title: by the next process).
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager, nullcontext


class Reactor:
    """Asks the model for the follow-ups ``core`` (a :class:`~actors.core.ShardCore`) queued, and records the answers.

    ``writing`` and ``projections`` are the locks of the log and of the projections (:class:`actors.shard.ShardActor`
    passes its two; a caller that owns the core alone passes none); ``stop`` ends a run between asks, and no answer
    is recorded once it is set.
    """

    def __init__(self, core, *, writing: AbstractContextManager | None = None,
                 projections: AbstractContextManager | None = None, stop: threading.Event | None = None) -> None:
        self.core = core
        self._writing = writing if writing is not None else nullcontext()
        self._projections = projections if projections is not None else nullcontext()
        self._stop = stop if stop is not None else threading.Event()
        self.asking = None  # the ask whose model call is in flight (None: none)

    def run(self) -> int:
        """Work through the queue until it is empty (or ``stop``); returns how many answers were recorded."""
        recorded = 0
        while not self._stop.is_set():
            with self._projections:
                ask = self.core.take_ask()
            if ask is None:
                return recorded
            self.asking = ask
            try:
                result = ask.ask(self.core.llm)  # no lock held: the one slow step
            finally:
                self.asking = None
            with self._writing, self._projections:
                if self._stop.is_set():
                    return recorded
                self.core.record_answer(ask, result)
            recorded += 1
        return recorded
