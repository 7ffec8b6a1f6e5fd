"""The event log contract and its in-memory backend.

The log is the only source of truth. It assigns a per-user ``seq`` (1, 2, …),
stores a batch all-or-nothing, and acknowledges an append only once it is
durable (for the DuckDB backend: after the commit reached the WAL on disk).
Every backend passes the suite in ``tests/contract``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from events.envelope import Envelope, PendingEvent, seal
from events.errors import ConcurrencyError

Stream = tuple[str, str]


@dataclass(frozen=True, slots=True)
class ScanFilter:
    """Which events a scan returns; every bound is inclusive and optional."""

    tenant: str | None = None
    user_id: str | None = None
    from_seq: int | None = None
    to_seq: int | None = None
    since: datetime | None = None
    until: datetime | None = None
    kinds: tuple[str, ...] | None = None

    def matches(self, env: Envelope) -> bool:
        return (
            (self.tenant is None or env.tenant == self.tenant)
            and (self.user_id is None or env.user_id == self.user_id)
            and (self.from_seq is None or env.seq >= self.from_seq)
            and (self.to_seq is None or env.seq <= self.to_seq)
            and (self.since is None or env.occurred_at >= self.since)
            and (self.until is None or env.occurred_at <= self.until)
            and (self.kinds is None or env.kind in self.kinds)
        )


@dataclass(frozen=True, slots=True)
class CommandRecord:
    """A command the log has applied: its id, kind, target stream, the events it appended and its outcome.

    Written in the same transaction as the command's events, so a command is
    either applied and recorded or neither. ``outcome`` is the JSON the caller
    was (or will be) given: a retried command returns it instead of running
    again. ``tenant``/``user_id`` are empty for a command spanning many users.
    """

    command_id: str
    kind: str
    outcome: str
    tenant: str = ""
    user_id: str = ""
    event_ids: tuple[str, ...] = field(default=())


class EventLog:
    """Base class: sequence assignment and expected-head checks shared by every backend.

    Subclasses implement ``_write`` (atomic, durable) and ``_read``.
    """

    def __init__(self) -> None:
        self._heads: dict[Stream, int] = {}
        self.cipher = None  # an events.crypto.PayloadCipher when the backend seals payloads (an encrypted store)

    # -- the contract -------------------------------------------------
    def append(
        self, pending: Sequence[PendingEvent], *, expected: Mapping[Stream, int] | None = None,
        command: CommandRecord | None = None,
    ) -> list[Envelope]:
        """Append a batch atomically and return the stored envelopes in order.

        ``expected`` maps a stream to the head ``seq`` the caller decided on;
        if another append moved that head first, nothing is written and
        :class:`ConcurrencyError` is raised. ``command`` is recorded in the
        same transaction (its id must be new; a command may append no event).
        """
        if not pending and command is None:
            return []
        for stream, seq in (expected or {}).items():
            if self.head(*stream) != seq:
                raise ConcurrencyError(
                    f"stream {stream} is at seq {self.head(*stream)}, expected {seq}; re-read and retry"
                )
        recorded_at = datetime.now(UTC)
        next_seq = dict(self._heads)
        sealed = []
        for p in pending:
            stream = (p.tenant, p.user_id)
            seq = next_seq.get(stream, 0) + 1
            next_seq[stream] = seq
            sealed.append(seal(p, seq, recorded_at))
        self._write(sealed, command)
        self._heads = next_seq
        return sealed

    def command(self, command_id: str) -> CommandRecord | None:
        """The record of an applied command, or None if no command with this id was applied."""
        return self._command(command_id)

    def scan(self, flt: ScanFilter | None = None) -> Iterator[Envelope]:
        """Events in (tenant, user, seq) order, old versions upcast."""
        return self._read(flt or ScanFilter())

    def rows(self, flt: ScanFilter | None = None):
        """The stored rows a scan selects, as one Arrow table of :data:`~events.envelope.ENVELOPE_SCHEMA`
        (for the audit of a served store; a backend that keeps rows returns them as stored)."""
        from events.envelope import to_arrow

        return to_arrow(list(self.scan(flt)))

    def scan_tails(self, heads: Mapping[Stream, int]) -> Iterator[Envelope]:
        """Every event after ``heads[stream]`` (after 0 for a stream not in ``heads``), in scan order."""
        return (e for e in self._read(ScanFilter()) if e.seq > heads.get(e.stream, 0))

    def fold_scan(self, flt: ScanFilter | None = None) -> Iterator:
        """What a fold takes of :meth:`scan`: here its envelopes (the DuckDB log also gives runs of touches as
        columns, :class:`~events.touch_block.TouchBlock`)."""
        return self.scan(flt)

    def fold_tails(self, heads: Mapping[Stream, int]) -> Iterator:
        """What a fold takes of :meth:`scan_tails` (see :meth:`fold_scan`)."""
        return self.scan_tails(heads)

    def backfill_touches(self) -> int:
        """Set the clear touch column of rows written before it (the DuckDB log; here there is none): 0."""
        return 0

    def checksums(self, heads: Mapping[Stream, int]) -> dict[Stream, int]:
        """Per stream, a 64-bit checksum of its stored events up to ``heads[stream]`` (id, seq, kind, version,
        payload): a snapshot records it, so a log edited under a snapshot is noticed. Order-independent."""
        out: dict[Stream, int] = {}
        for e in self._read(ScanFilter()):
            if e.stream in heads and e.seq <= heads[e.stream]:
                digest = hashlib.blake2b(
                    f"{e.event_id}\x1f{e.seq}\x1f{e.kind}\x1f{e.schema_version}\x1f{e.event.model_dump_json()}".encode(),
                    digest_size=8).digest()
                out[e.stream] = out.get(e.stream, 0) ^ int.from_bytes(digest, "big")
        return out

    def head(self, tenant: str, user_id: str) -> int:
        """The last ``seq`` of a stream, 0 when it is empty."""
        return self._heads.get((tenant, user_id), 0)

    def streams(self) -> list[Stream]:
        return sorted(self._heads)

    def model_id(self) -> str | None:
        """The embedding model id of the log's first ``message_embedded`` event; ``None`` before any."""
        first = next(self._read(ScanFilter(kinds=("message_embedded",))), None)
        return first.event.model_id if first is not None else None

    def has_kind(self, kind: str) -> bool:
        """Whether the log holds any event of ``kind``."""
        return next(self._read(ScanFilter(kinds=(kind,))), None) is not None

    def count(self) -> int:
        return sum(self._heads.values())

    def forgotten(self) -> list[tuple[str, str, int, int]]:
        """Every ``user_forgotten`` event: (tenant, user, seq, key generation), in log order."""
        return [(e.tenant, e.user_id, e.seq, e.event.key_generation)
                for e in self._read(ScanFilter(kinds=("user_forgotten",)))]

    def close(self) -> None:  # pragma: no cover - backends override when they hold resources
        pass

    # -- backend hooks ------------------------------------------------
    def _write(self, envelopes: list[Envelope], command: CommandRecord | None) -> None:
        raise NotImplementedError

    def _command(self, command_id: str) -> CommandRecord | None:
        raise NotImplementedError

    def _read(self, flt: ScanFilter) -> Iterator[Envelope]:
        raise NotImplementedError


class InMemoryEventLog(EventLog):
    """A log in a Python list: for unit tests and throwaway stores. Not durable."""

    def __init__(self) -> None:
        super().__init__()
        self._rows: list[Envelope] = []
        self._ids: set[str] = set()
        self._commands: dict[str, CommandRecord] = {}

    def _write(self, envelopes: list[Envelope], command: CommandRecord | None) -> None:
        ids = [e.event_id for e in envelopes]
        repeated = {i for i in ids if ids.count(i) > 1} if len(set(ids)) != len(ids) else set()
        clash = self._ids.intersection(ids) | repeated
        if clash:
            raise ConcurrencyError(f"event id already stored or repeated in the batch: {sorted(clash)[:3]}")
        for env in envelopes:
            if env.seq <= self._heads.get(env.stream, 0):
                raise ConcurrencyError(f"seq {env.seq} of {env.stream} is already taken")
        if command is not None and command.command_id in self._commands:
            raise ConcurrencyError(f"command {command.command_id} is already recorded")
        self._rows.extend(envelopes)
        self._ids.update(ids)
        if command is not None:
            self._commands[command.command_id] = command

    def _command(self, command_id: str) -> CommandRecord | None:
        return self._commands.get(command_id)

    def _read(self, flt: ScanFilter) -> Iterator[Envelope]:
        rows = sorted(self._rows, key=lambda e: (e.tenant, e.user_id, e.seq))
        return (e for e in rows if flt.matches(e))
