"""The one envelope every log row has, as a pyarrow schema, and its codec.

The schema is written once here and asserted in tests. ``payload`` is the
event's JSON (bytes fields base64-encoded), so any DuckDB or Arrow tool can
audit the log without this code. In an encrypted store a row also has
``sealed`` (:data:`SEALED_SCHEMA`): that JSON compressed and sealed under the
user's data key (:mod:`events.crypto`), ``payload`` then only a stub; given a
cipher, the codec here seals and opens it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime

import pyarrow as pa
from pydantic import ValidationError

from events.crypto import PayloadCipher
from events.erasure_events import PayloadErased
from events.errors import StoreError, UnknownEventError
from events.model import Event
from events.registry import EVENT_TYPES
from events.upcasting import upcast

ENVELOPE_SCHEMA = pa.schema(
    [
        pa.field("tenant", pa.string(), nullable=False),
        pa.field("user_id", pa.string(), nullable=False),
        pa.field("seq", pa.int64(), nullable=False),
        pa.field("event_id", pa.string(), nullable=False),
        pa.field("kind", pa.string(), nullable=False),
        pa.field("schema_version", pa.int16(), nullable=False),
        pa.field("occurred_at", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("recorded_at", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("causation_id", pa.string(), nullable=True),
        pa.field("correlation_id", pa.string(), nullable=True),
        pa.field("payload", pa.string(), nullable=False),
    ]
)
SEALED_FIELD = pa.field("sealed", pa.binary(), nullable=True)
SEALED_SCHEMA = ENVELOPE_SCHEMA.append(SEALED_FIELD)  # the rows of an encrypted log


@dataclass(frozen=True, slots=True)
class PendingEvent:
    """An event decided but not yet appended: the log gives it ``seq`` and ``recorded_at``."""

    tenant: str
    user_id: str
    event_id: str
    event: Event
    causation_id: str | None = None
    correlation_id: str | None = None


@dataclass(frozen=True, slots=True)
class Envelope:
    """A stored event: the envelope columns plus the decoded, upcast payload."""

    tenant: str
    user_id: str
    seq: int
    event_id: str
    kind: str
    schema_version: int
    occurred_at: datetime
    recorded_at: datetime
    causation_id: str | None
    correlation_id: str | None
    event: Event

    @property
    def stream(self) -> tuple[str, str]:
        return (self.tenant, self.user_id)


def seal(pending: PendingEvent, seq: int, recorded_at: datetime) -> Envelope:
    event = pending.event
    return Envelope(
        tenant=pending.tenant,
        user_id=pending.user_id,
        seq=seq,
        event_id=pending.event_id,
        kind=event.kind,
        schema_version=event.schema_version,
        occurred_at=event.occurred(recorded_at).astimezone(UTC),
        recorded_at=recorded_at,
        causation_id=pending.causation_id,
        correlation_id=pending.correlation_id,
        event=event,
    )


def to_arrow(envelopes: list[Envelope], cipher: PayloadCipher | None = None) -> pa.Table:
    """Encode envelopes as a table with exactly :data:`ENVELOPE_SCHEMA`; with ``cipher``, :data:`SEALED_SCHEMA`
    (payloads sealed)."""
    cols: dict[str, list] = {name: [] for name in ENVELOPE_SCHEMA.names}
    for env in envelopes:
        cols["tenant"].append(env.tenant)
        cols["user_id"].append(env.user_id)
        cols["seq"].append(env.seq)
        cols["event_id"].append(env.event_id)
        cols["kind"].append(env.kind)
        cols["schema_version"].append(env.schema_version)
        cols["occurred_at"].append(env.occurred_at)
        cols["recorded_at"].append(env.recorded_at)
        cols["causation_id"].append(env.causation_id)
        cols["correlation_id"].append(env.correlation_id)
        cols["payload"].append(env.event.model_dump_json())
    if cipher is None:
        return pa.Table.from_pydict(cols, schema=ENVELOPE_SCHEMA)
    cols["payload"], cols["sealed"] = cipher.seal_payloads(cols["tenant"], cols["user_id"], cols["event_id"],
                                                           cols["kind"], cols["schema_version"], cols["payload"])
    return pa.Table.from_pydict(cols, schema=SEALED_SCHEMA)


def decode_payload(kind: str, version: int, payload: str | bytes) -> Event:
    cls = EVENT_TYPES.get(kind)
    if cls is None:
        raise UnknownEventError(f"unknown event kind {kind!r}; upgrade palimpsest to read this log")
    try:
        if version == cls.schema_version:
            return cls.model_validate_json(payload)
        return cls.model_validate(upcast(kind, version, json.loads(payload)))
    except ValidationError as exc:
        raise UnknownEventError(
            f"a stored {kind} v{version} payload does not decode ({exc.error_count()} problem(s): "
            f"{exc.errors()[0]['loc']} {exc.errors()[0]['msg']}); its shape changed without a version bump "
            "and an upcaster, or the log is corrupt"
        ) from exc


def _decoder(kind: str, version: int):
    """The function of a stored payload (JSON bytes or text) → its event, for rows of this kind and version.

    The current version is validated by the class's pydantic validator directly (what ``model_validate_json``
    calls, without its per-call wrapper); an older one goes through :func:`decode_payload` (upcasters).
    """
    cls = EVENT_TYPES.get(kind)
    if cls is None or version != cls.schema_version:
        return lambda payload: decode_payload(kind, version, payload)
    validate = cls.__pydantic_validator__.validate_json

    def decode(payload: str | bytes) -> Event:
        try:
            return validate(payload)
        except ValidationError:
            return decode_payload(kind, version, payload)  # raises the error naming the problem and the fix
    return decode


def _pylist(column: pa.ChunkedArray) -> list:
    """``column.to_pylist()``, converting each distinct timestamp once.

    Converting a timestamp into a zone-aware datetime costs microseconds per
    value, and a log holds few distinct times (a batch shares its
    ``recorded_at``, a conversation session its ``occurred_at``).
    """
    if not pa.types.is_timestamp(column.type):
        return column.to_pylist()
    encoded = column.combine_chunks().dictionary_encode()
    # The schema's times are UTC: given as the ``UTC`` singleton (pyarrow gives zoneinfo's), two of them compare
    # and subtract without a call to ``utcoffset`` (zoneinfo's costs microseconds, the ranking does it per candidate).
    values = [None if v is None else v.replace(tzinfo=UTC) for v in encoded.dictionary.to_pylist()]
    return [None if i is None else values[i] for i in encoded.indices.to_pylist()]


# The slot setters of Envelope, in field order. A frozen dataclass's __init__ sets each field through
# object.__setattr__ (a Python-level call per field, most of the cost of decoding a small event); a replay builds
# one envelope per stored row, from values the log already holds in the right types, so it sets the slots directly.
_SLOT_SETTERS = tuple(getattr(Envelope, name).__set__ for name in Envelope.__slots__)
assert Envelope.__slots__ == (*ENVELOPE_SCHEMA.names[:-1], "event")


def _stored(tenant, user_id, seq, event_id, kind, version, occurred_at, recorded_at, causation_id, correlation_id,
            event) -> Envelope:
    """``Envelope(...)`` of one stored row, without the frozen ``__init__``'s per-field calls (same object)."""
    env = object.__new__(Envelope)
    s = _SLOT_SETTERS
    s[0](env, tenant)
    s[1](env, user_id)
    s[2](env, seq)
    s[3](env, event_id)
    s[4](env, kind)
    s[5](env, version)
    s[6](env, occurred_at)
    s[7](env, recorded_at)
    s[8](env, causation_id)
    s[9](env, correlation_id)
    s[10](env, event)
    return env


def from_arrow(table: pa.Table, cipher: PayloadCipher | None = None) -> list[Envelope]:
    """Decode rows (any column order) into envelopes, upcasting old payload versions.

    A row with ``sealed`` set is opened with ``cipher``; one whose key was destroyed (a forgotten user)
    decodes as :class:`PayloadErased`, its stored kind and version kept in the envelope.
    """
    names = ENVELOPE_SCHEMA.names
    columns = [_pylist(table.column(name)) for name in names]
    opened = [None] * table.num_rows
    if "sealed" in table.column_names:
        sealed = table.column("sealed").to_pylist()
        if any(x is not None for x in sealed):
            if cipher is None:
                raise StoreError("the log's payloads are encrypted, but it was opened without its key store; open "
                                 "the store through palimpsest (store.json says whether it is encrypted)")
            tenant, user_id, _, event_id, kind, version = columns[:6]
            opened = cipher.open_payloads(tenant, user_id, event_id, kind, version, sealed)
    out: list[Envelope] = []
    append = out.append
    decoders: dict[tuple[str, int], object] = {}
    for (tenant, user_id, seq, event_id, kind, version, occurred_at, recorded_at, causation_id, correlation_id,
         payload), sealed_row in zip(zip(*columns, strict=True), opened, strict=True):
        if sealed_row is not None:
            payload, gen = sealed_row
            if payload is None:
                append(Envelope(tenant, user_id, seq, event_id, kind, version, occurred_at, recorded_at,
                                causation_id, correlation_id, PayloadErased(key_generation=gen)))
                continue
        decode = decoders.get((kind, version))
        if decode is None:
            decode = decoders[(kind, version)] = _decoder(kind, version)
        event = decode(payload)
        append(_stored(tenant, user_id, seq, event_id, kind, event.schema_version, occurred_at, recorded_at,
                       causation_id, correlation_id, event))
    return out
