"""ShardCore: everything one shard owns, Ray-free, behind three entry points: ``handle``, ``query`` and ``admin``.

Owns the shard's DuckDB event log (its only writer), the folded projections of its users, and its LanceDB table.

- ``handle(commands)``: for each command, the recorded outcome if its
  ``command_id`` was applied before (a retry appends nothing); otherwise its
  decider (``DECIDERS``) turns it into events, and the runner (``commit``)
  appends them with the command's record in one transaction (expected heads:
  the folded ones), folds them, adds the new vectors to LanceDB, then applies
  the follow-up rule (:mod:`actors.followups`) for the streams written.
  A committed ``user_forgotten`` is followed by the erasure of the user's
  vectors, snapshot, caches and keys (:mod:`actors.erasure`). With a language
  model configured, the deciders of ``RecordMessages``, ``RecordReply``,
  ``ReviewNotes`` and ``JudgeFeedback`` ask it; the shard answers those asks
  before the decision, with no lock held (``handle_answered``,
  :mod:`actors.answers_first`), and each call is recorded as an event beside
  the decisions it informed.
- ``query(q)``: its reader (``READERS``) answers from the projections and
  appends nothing. The touch events it returns wait in a buffer and are
  group-committed: in the next command's transaction (ahead of its events,
  :meth:`ShardCore._apply`), by ``flush_touches`` (or the actor's flush in
  three steps) before an admin command, before a query that reads the
  log or digests (``flushes_first``: it writes the touches earlier queries
  left, then reads), on close, and by the actor's timer once older than
  ``spec.touch_flush_s``.
- ``admin(command)``: a replay or a backup (``ADMIN``), after the pending
  touches are written. Neither appends an event: a replay rebuilds the
  projections (and gives touch rows stored before the log's ``touch`` column
  that column), a backup copies files.

Follow-ups: a commit's reaction writes the offline ones at once (evictions,
and without a model the rule-based distillation). The ones that need the
model (distillation, episode titles) are only queued there, as asks holding
their prompts (``take_ask``); :class:`actors.reactor.Reactor` asks the model
with no lock held and ``record_answer`` appends the call and, if still due,
the decision.

Recovery: folding the log rebuilds the projections; ``reconcile`` brings the
LanceDB table in line; the evictions a crash left unwritten are written (the
other follow-ups are decided again at the stream's next commit), and an erasure
a crash interrupted (its key still live) is finished. Idempotent: every command
(by id), every query, ``flush_touches``; an admin command is safe to run again (a replay rebuilds the same
projections, a backup replaces its copy).
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Callable
from contextlib import ExitStack, nullcontext
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import structlog

from actors import commands as c
from actors import answers_first, declared, decide_reembed
from actors import feedback, heap, reads, reads_graph, reads_inspect, reads_learning, reads_notes
from actors.consolidation_jobs import graph_jobs
from actors.decide_archive import decide_archive, decide_restore, decide_sweep
from actors.decide_erasure import decide_forget
from actors.decide_items import decide_delete, decide_put
from actors.decide_graph import decide_consolidation, decide_label_vectors, decide_link, decide_stage, decide_unmerge
from actors.decide_molt import decide_molt, decide_revert_policy, molt_inputs
from actors.decide_notes import decide_replies, decide_reply, decide_review
from actors.deciders import decide_record_messages, decide_record_turns
from actors.decision import Answer, Deps, drawing_ids, new_event_id
from actors.dense import DenseIndex
from actors.erasure import cipher_of, counting_erased, erase_user, unfinished
from actors.followups import ModelAsk, answered, decide_user_followups, latest_time, model_asks
from actors.llm import LlmClient
from actors.residency import ResidentUsers
from actors.spec import ReplayReport, ShardSpec
from actors.user_store import FAR_BEHIND, UserStore
from events.duckdb_log import LOG_ERRORS, DuckDBEventLog, open_error
from events.envelope import Envelope, PendingEvent
from events.errors import InvalidInputError, StoreError
from events.log import CommandRecord, EventLog, ScanFilter
from projections.adapters.lance import LanceVectorTable
from projections.adapters.tokens import TokenCounter, default_counter
from projections.decisions import kept_pools
from projections.folds import state as shard_state

logger = structlog.get_logger("palimpsest.shard")

DECIDERS: dict[type, Callable] = {
    c.RecordMessages: decide_record_messages,
    c.RecordTurns: decide_record_turns,
    c.StageGraphMemories: decide_stage,
    c.RecordLabelVectors: decide_label_vectors,
    c.LinkMemories: decide_link,
    c.ApplyConsolidation: decide_consolidation,
    c.Unmerge: decide_unmerge,
    c.SweepArchive: decide_sweep,
    c.ArchiveMemories: decide_archive,
    c.RestoreMemories: decide_restore,
    c.RecordReply: decide_reply,
    c.RecordReplies: decide_replies,
    c.PutItem: decide_put,
    c.DeleteItem: decide_delete,
    c.ReviewNotes: decide_review,
    c.JudgeFeedback: feedback.decide_feedback,
    c.ForgetUser: decide_forget,
    c.RevertAdjustment: feedback.decide_revert,
    c.Molt: decide_molt,
    c.RevertPolicy: decide_revert_policy,
    c.RecordEmbeddings: decide_reembed.decide_record_embeddings,
    c.SwitchEmbedder: decide_reembed.decide_switch,
}
READERS: dict[type, Callable] = {
    c.Search: reads.search,
    c.BuildContext: reads.context,
    c.Episodes: reads.episodes,
    c.Retention: reads.retention,
    c.Counterfactual: reads.counterfactual_report,
    c.Notes: reads_notes.notes,
    c.Feedback: feedback.feedback,
    c.Adjustments: feedback.adjustments,
    c.Explain: reads_learning.explain_memory,
    c.PolicyHistory: reads_learning.policy_history,
    c.MoltInputs: molt_inputs,
    c.NoteHistory: reads_notes.note_history,
    c.Profile: reads_notes.profile,
    c.Tiers: reads_notes.tiers,
    c.Archived: reads_notes.archived,
    c.MemoryRetention: reads_inspect.memory_retention,
    c.SearchMemories: reads_graph.search_memories,
    c.GraphMerges: reads_graph.graph_merges,
    c.GraphExport: reads_graph.export,
    c.UnembeddedLabels: reads_graph.unembedded_labels,
    c.MissingEmbeddings: decide_reembed.missing_embeddings,
    c.GraphJobs: graph_jobs,
    c.ScanEvents: lambda core, q: Answer(core.scan(q.filter, q.limit)),
    c.AuditRows: lambda core, q: Answer(core.log.rows(ScanFilter(tenant=q.tenant))),
    c.Streams: lambda core, q: Answer(sorted(core.log.streams())),
    c.Digest: lambda core, q: Answer(core.digest()),
    c.Stats: lambda core, q: Answer(core.stats()),
    declared.DeclaredQuery: declared.read,  # the declared operations' reads (palimpsest.operations)
}
ADMIN: dict[type, Callable] = {
    c.Replay: lambda core, a: core.replay(),
    c.Backup: lambda core, a: core.backup(Path(a.target), a.keys_target and Path(a.keys_target)),
}


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"an outcome holds a {type(value).__name__}, which is not JSON")


@dataclass(frozen=True, slots=True)
class TakenTouches:
    pending: list[PendingEvent]
    expected: dict[tuple[str, str], int]  # stream → the head the append goes after
    pins: ExitStack  # keeps the streams resident until the fold


class ShardCore:
    def __init__(self, spec: ShardSpec, *, log: EventLog | None = None, counter: TokenCounter | None = None) -> None:
        self.spec = spec
        self.log = log or DuckDBEventLog(spec.log_path, cipher=cipher_of(spec))
        self.counter = counter or default_counter()
        self.llm = LlmClient(spec.llm) if spec.llm is not None else None
        keys = self.log.cipher.keys if self.log.cipher is not None else None
        self.deps = Deps(spec.model_id, spec.dim, self.llm, keys.current if keys is not None else None)
        # Model follow-ups (actors.followups): decided at a commit's reaction, asked by actors.reactor.
        self._asks: deque[ModelAsk] = deque()
        self._asked: set = set()  # their keys: waiting or asked, or (titles) asked once by this process
        self.followups = {"recorded": 0, "dropped": 0}  # answers: call recorded / dropped (the user was forgotten)
        self._line_tokens: dict[str, int] = {}  # derived cache: a context line's token count never changes
        self._touches: list[PendingEvent] = []
        self._touches_since = 0.0
        # What a commit's durable writes run inside (the log's append, then the new LanceDB rows): ShardActor lets
        # go of the projections' lock there, so queries are answered meanwhile (the log's lock keeps writers out).
        self.appending: Callable[[], Any] = nullcontext
        self.flush_failures = 0  # background touch flushes that failed (ShardActor's flusher logs and counts them)
        started = time.perf_counter()
        self.vectors = LanceVectorTable(spec.lance_dir, spec.table, spec.dim)
        self.dense = DenseIndex(self.vectors)
        self.users = UserStore(spec, self.log, self.vectors)
        try:  # damage inside the file shows when its events are first read
            self._check_model_id()
            self.state, report = self.users.start()
        except LOG_ERRORS as exc:
            self.log.close()
            raise open_error(spec.log_path, exc) from None
        for stream, generation in unfinished(self.log):  # a forget the last process died inside
            erase_user(self, stream, generation)
        # Evictions a crash may have left unwritten (pending in the tier fold): write them now. Nothing else is
        # decided on start-up: opening a store does not write to it.
        self._react({s: t for s, m in self.state.users.resident.items()
                     if m.tiers.pending_archival and (t := latest_time(m)) is not None}, evictions_only=True)
        self.start_seconds = time.perf_counter() - started
        logger.info("shard_recovered", shard=spec.index, events=self.log.count(), seconds=round(self.start_seconds, 3),
                    **report)

    def backup(self, log_dir: Path, keys_dir: Path | None) -> dict:
        """This shard's log copied (checkpointed) into ``log_dir``, then its key store into ``keys_dir``."""
        out = {"shard": self.spec.index, **self.log.copy_to(log_dir / self.spec.log_path.name)}
        if self.log.cipher is not None:
            if keys_dir is None:
                raise InvalidInputError([("keys_target", "missing; the store is encrypted, a backup needs the "
                                                         "key stores")], what="backup")
            out["keys"] = self.log.cipher.keys.copy_to(keys_dir / self.spec.key_store.name)
        return out

    def _check_model_id(self) -> None:
        """Refuse to open a log whose vectors come from another model than the store's (``store.json`` edited)."""
        logged = self.log.model_id()
        if logged is not None and logged != self.spec.model_id and not self.log.has_kind("embedder_switched"):
            raise StoreError(
                f"the event log {self.spec.log_path} holds vectors of model {logged!r}, but store.json asks for "
                f"{self.spec.model_id!r}; set embedder and model_id in store.json back to the model the log was "
                "written with (the embedder cannot change after creation)")

    # -- the two entry points -------------------------------------------
    def handle(self, commands: list[c.Command]) -> list[Any]:
        """Apply commands in order; each returns its outcome (the recorded one if it was applied before). With a
        language model, its asks are answered before each decision (:mod:`actors.answers_first`; no locks here:
        the caller owns the core alone, the actor passes its locks to that module itself)."""
        if self.llm is not None:
            return answers_first.handle(self, commands)
        return self.handle_live(commands)

    def handle_live(self, commands: list[c.Command]) -> list[Any]:
        """Apply commands in order, a decider asking the live model itself. The cyclic collector waits meanwhile,
        as in folds: a full collection mid-batch walks the state to free next to nothing."""
        with shard_state.collector_paused():
            return [self._apply(command) for command in commands]

    def query(self, q: c.Query) -> Any:
        read = READERS.get(type(q))
        if read is None:
            fix = " but an admin command: send it to admin()" if type(q) in ADMIN else ""
            raise InvalidInputError([("query", f"{type(q).__name__} is no shard query{fix}")], what="query")
        if q.flushes_first:
            self.flush_touches()
        answer = read(self, q)
        if answer.touches and self.spec.record_search_touches:
            if not self._touches:
                self._touches_since = time.monotonic()
            self._touches += answer.touches
        return answer.value

    def admin(self, command: c.AdminCommand) -> Any:
        """Run maintenance that writes no event (``ADMIN``: a replay, a backup) after writing the pending touches."""
        run = ADMIN.get(type(command))
        if run is None:
            raise InvalidInputError([("command", f"{type(command).__name__} is no admin command")], what="admin")
        self.flush_touches()
        return run(self, command)

    def handle_answered(self, commands: list[c.Command], llm, ids: dict[str, list[str]]) -> tuple[list[Any], dict]:
        """Apply ``commands`` in order, deciding each with ``llm`` (an :class:`actors.answers_first.AnswersFirst`),
        until one asks what it has not answered: ``(outcomes of those applied, that command's unanswered asks)``,
        the asks empty when all were applied. ``ids`` keeps each command's drawn event ids across rounds."""
        outcomes: list[Any] = []
        with shard_state.collector_paused():
            for command in commands:
                llm.missed = {}
                with drawing_ids(ids.setdefault(command.command_id, [])):
                    outcome = self._apply(command, llm=llm, dropped_if=lambda: bool(llm.missed))
                if llm.missed:
                    return outcomes, dict(llm.missed)
                outcomes.append(outcome)
        return outcomes, {}

    def _apply(self, command: c.Command, llm=None, dropped_if=None) -> Any:
        """Decide and commit ``command`` (deciding with ``llm`` instead of the store's model, if given); nothing is
        committed when ``dropped_if()`` is true after the decision."""
        decide = DECIDERS.get(type(command))
        if decide is None:
            raise InvalidInputError([("command", f"{type(command).__name__} is no shard command")], what="command")
        recorded = self.log.command(command.command_id)
        if recorded is not None:
            if recorded.kind != command.kind:
                raise InvalidInputError(
                    [("command_id", f"{command.command_id!r} was used by a {recorded.kind} command; "
                                    "draw a new id for each command")], what=command.kind)
            logger.info("command_retried", shard=self.spec.index, kind=command.kind, command_id=command.command_id)
            return json.loads(recorded.outcome)
        answered = llm is not None and self.deps.llm is not None  # deciders ask only a model the deps give them
        decision = decide(self.state, command, replace(self.deps, llm=llm) if answered else self.deps)
        if dropped_if is not None and dropped_if():
            return None
        outcome = json.dumps(decision.outcome, default=_jsonable)
        record = CommandRecord(command.command_id, command.kind, outcome, getattr(command, "tenant", None) or "",
                               getattr(command, "user_id", None) or "", tuple(p.event_id for p in decision.pending))
        # the touches of the queries answered since the last flush go first in the command's transaction: one
        # durable write instead of two. The decision did not see them folded (as a query answered meanwhile does
        # not); a failed commit loses them, as a failed flush does (access signals, not facts)
        touches, self._touches = self._touches, []
        self.commit(touches + decision.pending, command=record, react=decision.react)
        if isinstance(command, c.SwitchEmbedder) and not decision.outcome["missing"]:
            self.deps = replace(self.deps, model_id=command.model_id, dim=command.dim)  # the store's, for new users
        return json.loads(outcome)

    # -- the runner ----------------------------------------------------------
    def commit(self, pending: list[PendingEvent], *, command: CommandRecord | None = None,
               react: bool = True) -> list[Envelope]:
        """Append (heads expected where the folds are), fold, index new vectors, then the follow-ups."""
        users = self.state.users
        streams = list(dict.fromkeys((p.tenant, p.user_id) for p in pending))
        with users.pinned(streams):  # resident from before the append until after the fold
            expected = {s: users[s].head if s in users else 0 for s in streams}
            with self.appending():  # queries read the state as it was until the fold: nothing acknowledged yet
                envelopes = self.log.append(pending, expected=expected, command=command)
            self._fold_appended(envelopes, streams)
            rows = [  # the LanceDB table holds each user's vectors of its first model (actors.dense)
                (e.tenant, e.user_id, users[e.stream].vectors.of_model(e.event.model_id)[e.event.message_event_id])
                for e in envelopes
                if e.kind == "message_embedded" and e.event.model_id == users[e.stream].vectors.first
            ]
            if rows:
                with self.appending():  # held to be written with others (LanceVectorTable.add): no query waits
                    self.vectors.add(rows)
            for e in envelopes:
                if e.kind == "user_forgotten":
                    erase_user(self, e.stream, e.event.key_generation)
            self.users.checkpoint(users, streams)
        if react and envelopes:
            self._react_to(envelopes)
        return envelopes

    def _react_to(self, envelopes: list[Envelope]) -> None:
        """The follow-ups for the streams ``envelopes`` wrote, each as of its latest event."""
        latest: dict[tuple[str, str], datetime] = {}
        for e in envelopes:
            latest[e.stream] = max(latest.get(e.stream, e.occurred_at), e.occurred_at)
        self._react(latest)

    def _react(self, streams: dict[tuple[str, str], datetime], *, evictions_only: bool = False) -> None:
        """The follow-up rule: write the decisions the folds now call for (tier evictions, distillations, titles).

        Follow-ups are appended after the events that called for them, and
        their own follow-ups are not chased (one round per append)."""
        pending = []
        for (tenant, user_id), now in sorted(streams.items()):
            memory = self.state.users[(tenant, user_id)]
            pending += decide_user_followups(tenant, user_id, memory, now, self.state, distil=self.llm is None,
                                             evictions_only=evictions_only)
            if self.llm is not None and not evictions_only:
                for ask in model_asks(tenant, user_id, memory, now, self.state, self._asked):
                    self._asked.add(ask.key)
                    self._asks.append(ask)
        if pending:
            self.commit(pending, react=False)

    # -- model follow-ups: taken and recorded here, asked by actors.reactor with no lock held ----------------------
    def take_ask(self) -> ModelAsk | None:
        """The oldest model follow-up waiting to be asked (None: none)."""
        return self._asks.popleft() if self._asks else None

    def waiting_asks(self) -> tuple[ModelAsk, ...]:
        """The model follow-ups queued and not yet taken, oldest first."""
        return tuple(self._asks)

    def record_answer(self, ask: ModelAsk, result) -> list[Envelope]:
        """Append the call record of the model's answer to ``ask`` and, if it is still due, its decision
        (:func:`actors.followups.answered`); their own follow-ups are not chased."""
        if not ask.once:
            self._asked.discard(ask.key)
        stream = ask.stream
        pending = answered(ask, result, self.state.users[stream], new_event_id()) if stream in self.state.users else []
        self.followups["recorded" if pending else "dropped"] += 1
        if not pending:
            logger.info("model_followup_dropped", shard=self.spec.index, tenant=stream[0], user_id=stream[1],
                        purpose=ask.purpose, reason="the user's messages are gone (forgotten)")
        return self.commit(pending, react=False) if pending else []

    def forget_asks(self, stream: tuple[str, str]) -> None:
        """Drop the waiting model follow-ups of a forgotten user (their prompts hold its messages)."""
        self._asks = deque(a for a in self._asks if a.stream != stream)

    def _fold_appended(self, envelopes: list[Envelope], streams: list[tuple[str, str]]) -> None:
        """Fold events the log holds; should that fail, the users load again from the log on next use, not behind it."""
        try:
            shard_state.fold(self.state, envelopes)
        except BaseException:
            self.users.reload_later(self.state.users, streams)
            raise

    def flush_touches(self) -> int:
        """Group-commit the touches of the queries answered since the last flush; returns how many events."""
        if not self._touches:
            return 0
        pending, self._touches = self._touches, []
        self.commit(pending)
        return len(pending)

    # The same flush in three steps, so that queries go on during the durable append (ShardActor's flusher):
    # ``take_touches`` and ``fold_touches`` need the state to themselves, ``append_touches`` only the log.
    # The streams stay pinned resident in between: no cold load can read (and fold) the events being appended.
    def take_touches(self) -> TakenTouches | None:
        if not self._touches:
            return None
        pending, self._touches = self._touches, []
        streams = list(dict.fromkeys((p.tenant, p.user_id) for p in pending))
        pins = ExitStack()
        pins.enter_context(self.state.users.pinned(streams))
        users = self.state.users
        expected = {s: users[s].head if s in users else 0 for s in streams}
        return TakenTouches(pending, expected, pins)

    def append_touches(self, taken: TakenTouches) -> list[Envelope]:
        return self.log.append(taken.pending, expected=taken.expected)

    def fold_touches(self, taken: TakenTouches, envelopes: list[Envelope] | None) -> None:
        """Fold what ``append_touches`` wrote (``None``: none), then the follow-ups; snapshots only if far behind."""
        with taken.pins:
            if not envelopes:
                return
            self._fold_appended(envelopes, list(taken.expected))
            self.users.checkpoint(self.state.users, list(taken.expected), FAR_BEHIND * self.spec.snapshot_every)
        self._react_to(envelopes)

    def touches_due(self) -> bool:
        return bool(self._touches) and time.monotonic() - self._touches_since >= self.spec.touch_flush_s

    # -- helpers the readers and deciders use ---------------------------------
    def forget_caches(self) -> None:
        """Drop the derived caches that may hold a forgotten user's text (the token counts of context lines, the
        deciders' kept note pools)."""
        self._line_tokens.clear()
        kept_pools.forget_all()

    def count_tokens(self, lines: list[str]) -> list[int]:
        cache = self._line_tokens
        missing = [line for line in lines if line not in cache]
        if missing:
            if len(cache) > 500_000:
                cache.clear()
            cache.update(zip(missing, self.counter.count_many(missing)))
        return [cache[line] for line in lines]

    # -- maintenance ---------------------------------------------------------
    def scan(self, flt, limit: int | None = None) -> list[Envelope]:
        out = []
        for env in self.log.scan(flt):
            out.append(env)
            if limit is not None and len(out) >= limit:
                break
        return out

    def digest(self) -> dict:
        out = shard_state.digest(self.state)
        out["lancedb"] = self.vectors.digest()
        return out

    def replay(self) -> ReplayReport:
        """Rebuild every projection (LanceDB included) from event 0, snapshots ignored, and compare digests.

        The rebuilt state replaces the live one. With a residency cap, users leave the rebuilt state as it grows
        (their snapshots written), so a replay holds at most the cap in memory too. Touch rows written before
        the clear ``touch`` column get it first (timed apart, in the log).
        """
        live, _ = self.digest(), self.log.backfill_touches()
        started, cpu = time.perf_counter(), time.thread_time()  # this thread's CPU: not the shard's other threads
        store = UserStore(self.spec, self.log, self.vectors)  # fresh: no snapshot heads, nothing to reconcile
        rebuilt = store.empty_state()
        rebuilt.users = ResidentUsers((), store.load, store.evict, self.spec.max_resident_users)
        erased = [0]
        with heap.paused():  # the collector would walk the live state and the one being built, again and again
            shard_state.fold(rebuilt, counting_erased(self.log.fold_scan(), erased))
        self.vectors.rebuild((*stream, row) for stream in rebuilt.users  # user by user, in a few writes
                             for row in rebuilt.users[stream].vectors.of_model(
                                 rebuilt.users[stream].vectors.first).values())
        seconds, cpu = time.perf_counter() - started, time.thread_time() - cpu
        self.state, self.users = rebuilt, store
        report = ReplayReport(self.spec.index, self.log.count(), seconds, live, self.digest(), erased[0], cpu)
        logger.info("shard_replayed", shard=self.spec.index, events=report.events, equal=report.equal,
                    erased=report.erased)
        return report

    def stats(self) -> dict:
        users = self.state.users
        messages = touches = 0
        models: dict[str, dict[str, int]] = {}  # model → users searched by it, vectors held of it
        for stream in users:  # one user at a time: with a residency cap, loaded and let go in turn
            memory = users[stream]
            messages += len(memory.messages.order)
            touches += memory.touches.total
            vectors = memory.vectors
            for model, held in ((vectors.active, vectors.rows), *vectors.others.items()):
                if model:
                    entry = models.setdefault(model, {"users": 0, "vectors": 0})
                    entry["vectors"] += len(held)
                    entry["users"] += model == vectors.active
        return {
            "shard": self.spec.index,
            "users": len(users),
            "resident_users": len(users.resident),
            "events": self.log.count(),
            "messages": messages,
            "touches": touches,
            "vectors_indexed": self.vectors.count(),
            "models": models,
            "streams": [list(s) for s in users],
            "start_seconds": round(self.start_seconds, 3),
            "cold_loads": users.loads, "touch_flush_failures": self.flush_failures,
        }

    def close(self) -> None:
        """Flush the touches and the vector rows held, snapshot every resident user that is behind, close the log."""
        self.flush_touches()
        self.vectors.flush()
        self.users.save_behind(self.state.users.resident.items())
        self.log.close()

    def empty_state(self) -> shard_state.ShardState:
        return self.users.empty_state()

