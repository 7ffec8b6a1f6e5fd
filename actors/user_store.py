"""How a shard gets its users' projections: from snapshots and the log's tail, within a residency cap.

:class:`UserStore` builds the shard's :class:`~projections.folds.state.ShardState`
at start: without a cap every user is loaded (snapshot, then one scan of every
stream's tail); with ``max_resident_users`` none is loaded until first used.
It loads a cold user (its snapshot, then its tail), checkpoints a user whose
snapshot is ``snapshot_every`` events behind, and writes the snapshot of a
user leaving memory. LanceDB is reconciled per user as users are loaded
(rows the log does not know are deleted, missing ones added).
"""

from __future__ import annotations

import time
import structlog

from actors.residency import ResidentUsers, Stream
from actors.snapshots import SnapshotStore, fingerprint
from actors.spec import ShardSpec
from events.log import EventLog, ScanFilter
from projections.adapters.lance import LanceVectorTable
from projections.folds import state as shard_state
from projections.folds.state import ShardState, UserMemory

logger = structlog.get_logger("palimpsest.shard")

# A touch flush writes a user's snapshot only once the user is this many times ``snapshot_every`` events past it:
# writing one holds the projections, and so every query, for tens of milliseconds (one LoCoMo dev user: pickled
# in 64-80 ms, written in 88-117 ms more). Nearer ones are written when the shard is idle (ShardActor's flusher).
FAR_BEHIND = 4


class UserStore:
    def __init__(self, spec: ShardSpec, log: EventLog, vectors: LanceVectorTable) -> None:
        self.spec = spec
        self.log = log
        self.vectors = vectors
        configs = (spec.retention_policy, spec.segmentation, spec.tier_config, spec.working_config)
        self.snapshots = (SnapshotStore(spec.snapshot_dir / f"shard-{spec.index:03d}", fingerprint(*configs),
                                        log.cipher) if spec.snapshot_dir is not None else None)
        self.snapshot_heads: dict[Stream, int] = {}  # the seq each user's newest snapshot is at
        self.lance_unreconciled: dict[Stream, set[str]] | None = None
        self.load_seconds: list[float] = []  # per cold load since start

    def empty_state(self) -> ShardState:
        s = self.spec
        return ShardState(policy=s.retention_policy, segmentation=s.segmentation, tier_config=s.tier_config,
                          working_config=s.working_config)

    # -- start ---------------------------------------------------------------
    def start(self) -> tuple[ShardState, dict]:
        """The shard's state (users behind a :class:`ResidentUsers`) and what the start did."""
        state = self.empty_state()
        streams = self.log.streams()
        users = ResidentUsers(streams, self.load, self.evict, self.spec.max_resident_users)
        have: dict[Stream, set[str]] = {s: set() for s in streams}
        for tenant, user_id, memory_id in self.vectors.keys():
            have.setdefault((tenant, user_id), set()).add(memory_id)
        known = set(streams)
        stray = [s for s in have if s not in known]
        for s in stray:  # a user the log does not know: its rows are an old index's
            self.vectors.reconcile_stream(*s, (), have.pop(s))
        self.lance_unreconciled = have
        report = {"snapshots_used": 0, "tail_events": 0, "streams": len(streams), "lance_fixed": 0}
        if self.snapshots is not None:  # an older store's plaintext snapshots: sealed before any is read
            report |= self.snapshots.seal_plaintext()
        if self.spec.max_resident_users is None:
            loaded = self._snapshots(streams)
            report["snapshots_used"] = len(loaded)
            partial = ShardState(users=loaded, policy=state.policy, segmentation=state.segmentation,
                                 tier_config=state.tier_config, working_config=state.working_config)
            before = sum(m.head for m in loaded.values())
            shard_state.fold(partial, self.log.fold_tails({s: m.head for s, m in loaded.items()}))
            report["tail_events"] = sum(m.head for m in partial.users.values()) - before
            for stream, memory in partial.users.items():
                report["lance_fixed"] += self._reconcile(stream, memory)
                users[stream] = memory
        state.users = users
        return state, report

    # -- residency ------------------------------------------------------------
    def load(self, stream: Stream) -> UserMemory:
        """A cold user: the newest valid snapshot, then the events after it."""
        started = time.perf_counter()
        memory = self._snapshots([stream]).get(stream)
        head = memory.head if memory is not None else 0
        partial = self.empty_state()
        if memory is not None:
            partial.users[stream] = memory
        tail = ScanFilter(tenant=stream[0], user_id=stream[1], from_seq=head + 1)
        shard_state.fold(partial, self.log.fold_scan(tail))
        memory = partial.users.get(stream) or UserMemory()
        self._reconcile(stream, memory)
        self.load_seconds.append(time.perf_counter() - started)
        return memory

    def evict(self, stream: Stream, memory: UserMemory) -> None:
        """A user leaving memory: its snapshot, if it is behind."""
        self.save_behind([(stream, memory)])

    def save_behind(self, users) -> int:
        """Snapshot each ``(stream, memory)`` whose snapshot is behind it (one checksum query for all)."""
        if self.snapshots is None:
            return 0
        behind = [(s, m) for s, m in users if m.head > self.snapshot_heads.get(s, 0)]
        if not behind:
            return 0
        checksums = self.log.checksums({s: m.head for s, m in behind})
        for stream, memory in behind:
            self.snapshots.save(stream, memory, checksums.get(stream, 0))
            self.snapshot_heads[stream] = memory.head
        return len(behind)

    def forget(self, stream: Stream) -> bool:
        """A forgotten user: its snapshot removed (whether there was one), nothing left to reconcile."""
        self.snapshot_heads.pop(stream, None)
        if self.lance_unreconciled is not None:
            self.lance_unreconciled.pop(stream, None)
        return self.snapshots.remove(stream) if self.snapshots is not None else False

    def reload_later(self, users: ResidentUsers, streams) -> None:
        """Let go of ``streams``' memory without a snapshot (it may be half-folded): the next use loads it again
        from the newest valid snapshot and the log, and brings its LanceDB rows in line with the result."""
        streams = set(streams)
        have: dict[Stream, set[str]] = {s: set() for s in streams}
        for tenant, user_id, memory_id in self.vectors.keys():
            if (tenant, user_id) in streams:
                have[(tenant, user_id)].add(memory_id)
        for stream in streams:
            users.drop(stream)
            if self.lance_unreconciled is not None:
                self.lance_unreconciled[stream] = have[stream]
        logger.warning("users_reloaded_after_failed_fold", users=len(streams))

    def due(self, users: ResidentUsers, streams, every: int | None = None) -> list[Stream]:
        """Those of ``streams`` resident and ``every`` events (default ``snapshot_every``) past their snapshot."""
        if self.snapshots is None:
            return []
        resident, limit = users.resident, every or self.spec.snapshot_every
        return [s for s in streams if s in resident and resident[s].head - self.snapshot_heads.get(s, 0) >= limit]

    def checkpoint(self, users: ResidentUsers, streams, every: int | None = None) -> int:
        """Snapshot the users written to that are :meth:`due`; returns how many were written."""
        resident = users.resident
        return self.save_behind([(s, resident[s]) for s in self.due(users, streams, every)])

    def _snapshots(self, streams) -> dict[Stream, UserMemory]:
        """The valid snapshots of ``streams`` whose events the log still holds unchanged (one checksum query)."""
        if self.snapshots is None:
            return {}
        found = {}
        for stream in streams:
            loaded = self.snapshots.load(stream, self.log.head(*stream))
            if loaded is not None:
                found[stream] = loaded
        actual = self.log.checksums({s: memory.head for s, (memory, _) in found.items()})
        out = {}
        for stream, (memory, checksum) in found.items():
            if actual.get(stream) != checksum:
                self.snapshots.reject(stream, "the log's events under it changed (edited or replaced)")
                continue
            out[stream] = memory
            self.snapshot_heads[stream] = memory.head
        return out

    def _reconcile(self, stream: Stream, memory: UserMemory) -> int:
        """Bring the user's LanceDB rows in line with its vectors projection, once per start."""
        if self.lance_unreconciled is None:
            return 0
        have = self.lance_unreconciled.pop(stream, None)
        rows = memory.vectors.of_model(memory.vectors.first)  # the table holds the first model's (actors.dense)
        if have is None or have == rows.keys():  # reconciled at an earlier load, or in line
            return 0
        added, removed = self.vectors.reconcile_stream(*stream, rows.values(), have)
        return added + removed
