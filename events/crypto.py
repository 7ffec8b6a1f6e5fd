"""Sealing what a log stores about a user under that user's data key (AES-256-GCM), at the log's boundary.

An encrypted store seals the whole ``payload`` of every event of a user (its JSON: text, speaker, metadata,
note and graph texts, model calls, vectors) and the recorded outcome of the user's commands. The envelope
columns (tenant, user, seq, event id, kind, version, times, causation) stay clear: they route, order and
audit, and hold no content; so does a touch row's ``touch`` column (reason, memory ids, key generation:
:mod:`events.touch_block`), which a replay folds without opening the payload.

An event's sealed payload is stored as bytes in the log's ``sealed`` column (a BLOB; its ``payload`` column
then holds only :data:`SEALED_STUB`)::

    0x02 | key generation (4 bytes, big-endian) | nonce (12) | AES-GCM(codec byte + body) with its 16-byte tag

The body is the payload JSON compressed with zstd at level 1 (codec ``s``: its length in 4 bytes, big-endian,
then the frame) or, when shorter than :data:`MIN_COMPRESS` bytes or not made smaller, as it is (codec ``j``):
one event at a time, no dictionary shared across events or users. Logs written before hold zlib bodies
(codec ``z``), still read. zstd (pyarrow's) packs an event's JSON ~2.6 times faster than zlib level 1 did at
the same size (20,000 MemDaily dev payloads of ~1 KB: 14.9 against 39.4 us each, 0.785 against 0.773 of the
JSON; opening 9.8 against 11.2 us), and zlib's per-call set-up (~20 us) is no longer paid for the short
payloads that gained 7-14 % from it (a classification, a short message). The frames are made and read by the
``zstandard`` package (the same frames as pyarrow's codec, which wrote the logs before it: 20,000 JSON payloads
of 0.1-1.5 KB packed in 11.7 against 17.4 us each and opened in 5.5 against 11.7 us; a replay opens every
payload of a log). The associated
data binds the sealed bytes to their row (tenant, user, event id, kind, version) and to their header, so
a sealed payload moved to another row, or given another generation, does not open. Nonces are random
(96 bits) under a key of one user: far below the 2**32 messages a random-nonce key may seal.

A command's outcome stays text: ``pe1:<generation>:<base64(nonce + ciphertext + tag)>`` (one per command).

``user_forgotten`` events stay clear: they carry no personal data and say which key was destroyed.
Once a user's key is destroyed its sealed payloads open to ``None``: the decoder turns them into
:class:`~events.erasure_events.PayloadErased` and the folds skip them.
"""

from __future__ import annotations

import binascii
import json
import os
import threading
import zlib
from collections.abc import Sequence

import pyarrow as pa
import zstandard
from cryptography.exceptions import InvalidTag

from events.errors import StoreError
from events.keystore import NONCE_BYTES, KeyStore

SEALED = "pe1:"  # a sealed command outcome (text)
SEALED_STUB = '{"sealed":true}'  # the ``payload`` of a row whose payload is in ``sealed``
FORMAT = 2
HEADER = 5  # format byte + generation
CLEAR_KINDS = frozenset({"user_forgotten"})
CLEAR_OUTCOMES = frozenset({"ForgetUser"})  # ids, seqs and a key generation: it must outlive the key it destroys
MIN_COMPRESS = 256  # shorter JSON is stored as it is (compressing it saves a few bytes for much CPU)
ZSTD_LEVEL = 1
_CODECS = threading.local()  # a zstandard (de)compressor is used by one thread at a time: one pair per thread
Stream = tuple[str, str]


def payload_aad(tenant: str, user_id: str, event_id: str, kind: str, version: int) -> bytes:
    return f"ev\x1f{tenant}\x1f{user_id}\x1f{event_id}\x1f{kind}\x1f{version}".encode()


def _outcome_aad(command_id: str, tenant: str, user_id: str) -> bytes:
    return f"cmd\x1f{command_id}\x1f{tenant}\x1f{user_id}".encode()


def is_sealed(value: str) -> bool:
    """Whether a stored command outcome is sealed (event payloads are sealed when their ``sealed`` is set)."""
    return value.startswith(SEALED)


def erased_json(kind: str, gen: int) -> str:
    """What the audit shows for the payload of a forgotten user's event."""
    return json.dumps({"erased": True, "kind": kind, "key_generation": gen})


def _codecs() -> tuple[zstandard.ZstdCompressor, zstandard.ZstdDecompressor]:
    pair = getattr(_CODECS, "pair", None)
    if pair is None:
        pair = _CODECS.pair = (zstandard.ZstdCompressor(level=ZSTD_LEVEL), zstandard.ZstdDecompressor())
    return pair


def _pack(plain: bytes) -> bytes:
    if len(plain) >= MIN_COMPRESS:
        packed = _codecs()[0].compress(plain)
        if len(packed) + 4 < len(plain):
            return b"s" + len(plain).to_bytes(4, "big") + packed
    return b"j" + plain


def _unpack(body: bytes | memoryview) -> bytes:
    codec = body[:1]
    if codec == b"s":
        return _codecs()[1].decompress(memoryview(body)[5:], max_output_size=int.from_bytes(body[1:5], "big"))
    if codec == b"z":
        return zlib.decompress(memoryview(body)[1:])
    return bytes(body[1:])


class PayloadCipher:
    """Seals and opens one shard's payloads with the data keys of its :class:`KeyStore`."""

    def __init__(self, keys: KeyStore) -> None:
        self.keys = keys

    # -- events ------------------------------------------------------------
    def seal_payloads(self, tenants: Sequence[str], user_ids: Sequence[str], event_ids: Sequence[str],
                      kinds: Sequence[str], versions: Sequence[int],
                      payloads: Sequence[str]) -> tuple[list[str], list[bytes | None]]:
        """Columns of rows to store → their ``payload`` and ``sealed`` columns (one key lookup per stream)."""
        streams = dict.fromkeys((t, u) for t, u, k in zip(tenants, user_ids, kinds) if k not in CLEAR_KINDS)
        keys = self.keys.ensure(streams)
        heads = {s: bytes([FORMAT]) + gen.to_bytes(4, "big") for s, (gen, _) in keys.items()}
        out_payload, out_sealed = [], []
        urandom = os.urandom
        for tenant, user_id, event_id, kind, version, payload in zip(tenants, user_ids, event_ids, kinds, versions,
                                                                     payloads):
            if kind in CLEAR_KINDS:
                out_payload.append(payload)
                out_sealed.append(None)
                continue
            stream = (tenant, user_id)
            aead, head = keys[stream][1], heads[stream]
            nonce = urandom(NONCE_BYTES)
            body = aead.encrypt(nonce, _pack(payload.encode("utf-8")),
                                payload_aad(tenant, user_id, event_id, kind, version) + head)
            out_payload.append(SEALED_STUB)
            out_sealed.append(head + nonce + body)
        return out_payload, out_sealed

    def open_payload(self, tenant: str, user_id: str, event_id: str, kind: str, version: int,
                     sealed: bytes) -> tuple[bytes | None, int]:
        """The payload JSON (UTF-8 bytes) and its key generation; ``None`` when the key was destroyed."""
        if len(sealed) < HEADER + NONCE_BYTES or sealed[0] != FORMAT:
            raise StoreError(f"the sealed payload of {event_id} is not of format {FORMAT}; the log is corrupt or "
                             "newer than this palimpsest: restore it from a backup, or upgrade palimpsest")
        gen = int.from_bytes(sealed[1:HEADER], "big")
        aead = self.keys.key((tenant, user_id), gen)
        if aead is None:
            return None, gen
        try:
            body = aead.decrypt(sealed[HEADER:HEADER + NONCE_BYTES], sealed[HEADER + NONCE_BYTES:],
                                payload_aad(tenant, user_id, event_id, kind, version) + sealed[:HEADER])
            return _unpack(body), gen
        except (InvalidTag, zlib.error, zstandard.ZstdError):
            raise StoreError(f"the sealed payload of {event_id} does not open under its user's key: it was altered "
                             "or moved from another row; restore the log from a backup") from None

    def open_payloads(self, tenants: Sequence[str], user_ids: Sequence[str], event_ids: Sequence[str],
                      kinds: Sequence[str], versions: Sequence[int],
                      sealed: Sequence[bytes | None]) -> list[tuple[bytes | None, int] | None]:
        """:meth:`open_payload` of each row of these columns (None where ``sealed`` is None), one key lookup per
        (stream, generation) instead of one per row: a replay opens every payload of the log."""
        keys: dict[tuple[str, str, bytes], tuple] = {}  # (tenant, user, header) → (key or None, generation)
        # payload_aad's bytes in three parts built once each (per stream, per kind and version), the event id
        # encoded per row: the same bytes without formatting and encoding the whole string per row.
        streams: dict[tuple[str, str], bytes] = {}
        tails: dict[tuple[str, int], bytes] = {}
        out: list[tuple[bytes | None, int] | None] = []
        append = out.append
        start, body_at = HEADER, HEADER + NONCE_BYTES
        # Rows come by stream (a scan's order): the last row's stream, header, key and AAD prefix are reused while
        # they hold, without the lookups and tuples of the dicts above.
        last = (None, None, None)
        aead = gen = prefix = None
        for tenant, user_id, event_id, kind, version, blob in zip(tenants, user_ids, event_ids, kinds, versions,
                                                                   sealed):
            if blob is None:
                append(None)
                continue
            if len(blob) < body_at or blob[0] != FORMAT:
                self.open_payload(tenant, user_id, event_id, kind, version, blob)  # raises the format error
            head = blob[:start]
            if tenant != last[0] or user_id != last[1] or head != last[2]:
                known = keys.get((tenant, user_id, head))
                if known is None:
                    gen = int.from_bytes(head[1:], "big")
                    known = keys[(tenant, user_id, head)] = (self.keys.key((tenant, user_id), gen), gen)
                aead, gen = known
                prefix = streams.get((tenant, user_id))
                if prefix is None:
                    prefix = streams[(tenant, user_id)] = f"ev\x1f{tenant}\x1f{user_id}\x1f".encode()
                last = (tenant, user_id, head)
            if aead is None:
                append((None, gen))
                continue
            tail = tails.get((kind, version))
            if tail is None:
                tail = tails[(kind, version)] = f"\x1f{kind}\x1f{version}".encode()
            view = memoryview(blob)  # nonce and ciphertext read in place, not copied out of the row
            try:
                body = aead.decrypt(view[start:body_at], view[body_at:], prefix + event_id.encode() + tail + head)
                append((_unpack(body), gen))
            except (InvalidTag, zlib.error, zstandard.ZstdError):
                raise StoreError(f"the sealed payload of {event_id} does not open under its user's key: it was "
                                 "altered or moved from another row; restore the log from a backup") from None
        return out

    def open_column(self, table: pa.Table) -> pa.Array:
        """The ``payload`` column of stored rows (with ``sealed``), opened (erased ones as :func:`erased_json`)."""
        cols = [table.column(n).to_pylist() for n in ("tenant", "user_id", "event_id", "kind", "schema_version",
                                                      "payload", "sealed")]
        out = []
        for tenant, user_id, event_id, kind, version, payload, sealed in zip(*cols, strict=True):
            if sealed is None:
                out.append(payload)
                continue
            text, gen = self.open_payload(tenant, user_id, event_id, kind, version, sealed)
            out.append(erased_json(kind, gen) if text is None else text.decode("utf-8"))
        return pa.array(out, type=pa.string())

    # -- command outcomes ----------------------------------------------------
    def seal_outcome(self, command_id: str, kind: str, tenant: str, user_id: str, outcome: str) -> str:
        """A command's recorded outcome: sealed under its user's key, or per row for a command spanning users
        (rows naming ``tenant`` and ``user_id``, as a sweep or a review reports them); other shapes hold ids
        and counts only and stay clear, as does a forget's (a retry must still read it)."""
        if kind in CLEAR_OUTCOMES:
            return outcome
        if tenant and user_id:
            return self._seal_one((tenant, user_id), outcome, _outcome_aad(command_id, tenant, user_id))
        value = json.loads(outcome)
        if not (isinstance(value, list) and value and all(isinstance(r, dict) and "tenant" in r and "user_id" in r
                                                           for r in value)):
            return outcome
        sealed = [self._seal_one((r["tenant"], r["user_id"]), json.dumps(r),
                                 _outcome_aad(command_id, r["tenant"], r["user_id"]) + f"\x1f{i}".encode())
                  for i, r in enumerate(value)]
        return json.dumps([{"tenant": r["tenant"], "user_id": r["user_id"], "sealed": s}
                           for r, s in zip(value, sealed)])

    def open_outcome(self, command_id: str, tenant: str, user_id: str, stored: str) -> str:
        """The outcome as it was given; rows (or the whole) of users forgotten since are left out."""
        if is_sealed(stored):
            gen, aead = self._key((tenant, user_id), stored)
            if aead is None:
                return json.dumps({"erased": True, "key_generation": gen})
            return self._open(aead, stored, _outcome_aad(command_id, tenant, user_id), command_id).decode("utf-8")
        value = json.loads(stored)
        if not (isinstance(value, list) and value and all(isinstance(r, dict) and "sealed" in r for r in value)):
            return stored
        rows = []
        for i, r in enumerate(value):
            gen, aead = self._key((r["tenant"], r["user_id"]), r["sealed"])
            if aead is not None:
                aad = _outcome_aad(command_id, r["tenant"], r["user_id"]) + f"\x1f{i}".encode()
                rows.append(json.loads(self._open(aead, r["sealed"], aad, command_id)))
        return json.dumps(rows)

    # -- helpers ---------------------------------------------------------------
    def _seal_one(self, stream: Stream, plain: str, aad: bytes) -> str:
        gen, aead = self.keys.ensure([stream])[stream]
        nonce = os.urandom(NONCE_BYTES)
        sealed = aead.encrypt(nonce, plain.encode("utf-8"), aad)
        return f"{SEALED}{gen}:{binascii.b2a_base64(nonce + sealed, newline=False).decode('ascii')}"

    def _key(self, stream: Stream, stored: str):
        try:
            gen = int(stored[len(SEALED):stored.index(":", len(SEALED))])
        except ValueError:
            raise StoreError(f"a sealed value of {stream} has no key generation; the log is corrupt") from None
        return gen, self.keys.key(stream, gen)

    def _open(self, aead, stored: str, aad: bytes, what: str) -> bytes:
        try:
            raw = binascii.a2b_base64(stored[stored.index(":", len(SEALED)) + 1:])
            return aead.decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], aad)
        except (InvalidTag, binascii.Error):
            raise StoreError(f"the sealed payload of {what} does not open under its user's key: it was altered or "
                             "moved from another row; restore the log from a backup") from None
