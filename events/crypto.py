"""Sealing what a log stores about a user under that user's data key (AES-256-GCM), at the log's boundary.

An encrypted store seals the whole ``payload`` of every event of a user (its JSON: text, speaker, metadata,
note and graph texts, model calls, vectors) and the recorded outcome of the user's commands. The envelope
columns (tenant, user, seq, event id, kind, version, times, causation) stay clear: they route, order and
audit, and hold no content. A sealed value is ``pe1:<generation>:<base64(nonce + ciphertext + tag)>``
(plain JSON starts with ``{`` or ``[``, so both can sit in one log); its associated data binds it to its
row (tenant, user, event id, kind, version), so a sealed payload moved to another row does not open.

``user_forgotten`` events stay clear: they carry no personal data and say which key was destroyed.
Once a user's key is destroyed its sealed payloads open to ``None``: the decoder turns them into
:class:`~events.erasure_events.PayloadErased` and the folds skip them.
"""

from __future__ import annotations

import binascii
import json
import os
from collections.abc import Sequence

import pyarrow as pa
from cryptography.exceptions import InvalidTag

from events.errors import StoreError
from events.keystore import NONCE_BYTES, KeyStore

SEALED = "pe1:"
CLEAR_KINDS = frozenset({"user_forgotten"})
CLEAR_OUTCOMES = frozenset({"ForgetUser"})  # ids, seqs and a key generation: it must outlive the key it destroys
Stream = tuple[str, str]


def payload_aad(tenant: str, user_id: str, event_id: str, kind: str, version: int) -> bytes:
    return f"ev\x1f{tenant}\x1f{user_id}\x1f{event_id}\x1f{kind}\x1f{version}".encode()


def _outcome_aad(command_id: str, tenant: str, user_id: str) -> bytes:
    return f"cmd\x1f{command_id}\x1f{tenant}\x1f{user_id}".encode()


def is_sealed(value: str) -> bool:
    return value.startswith(SEALED)


def erased_json(kind: str, gen: int) -> str:
    """What the audit shows for the payload of a forgotten user's event."""
    return json.dumps({"erased": True, "kind": kind, "key_generation": gen})


class PayloadCipher:
    """Seals and opens one shard's payloads with the data keys of its :class:`KeyStore`."""

    def __init__(self, keys: KeyStore) -> None:
        self.keys = keys

    # -- events ------------------------------------------------------------
    def seal_payloads(self, rows: Sequence[tuple[str, str, str, str, int, str]]) -> list[str]:
        """``(tenant, user_id, event_id, kind, version, payload_json)`` → stored payloads (one key per stream)."""
        keys = self.keys.ensure(dict.fromkeys((t, u) for t, u, _, kind, _, _ in rows if kind not in CLEAR_KINDS))
        out = []
        for tenant, user_id, event_id, kind, version, payload in rows:
            if kind in CLEAR_KINDS:
                out.append(payload)
                continue
            gen, aead = keys[(tenant, user_id)]
            nonce = os.urandom(NONCE_BYTES)
            sealed = aead.encrypt(nonce, payload.encode("utf-8"), payload_aad(tenant, user_id, event_id, kind, version))
            out.append(f"{SEALED}{gen}:{binascii.b2a_base64(nonce + sealed, newline=False).decode('ascii')}")
        return out

    def open_payload(self, tenant: str, user_id: str, event_id: str, kind: str, version: int,
                     stored: str) -> tuple[bytes | None, int]:
        """The payload JSON (UTF-8 bytes) and its key generation; ``None`` when the key was destroyed."""
        gen, aead = self._key((tenant, user_id), stored)
        if aead is None:
            return None, gen
        return self._open(aead, stored, payload_aad(tenant, user_id, event_id, kind, version), event_id), gen

    def open_column(self, table: pa.Table) -> pa.Array:
        """The ``payload`` column of stored rows, opened (erased ones as :func:`erased_json`): the audit's view."""
        cols = [table.column(n).to_pylist() for n in ("tenant", "user_id", "event_id", "kind", "schema_version",
                                                      "payload")]
        out = []
        for tenant, user_id, event_id, kind, version, stored in zip(*cols, strict=True):
            if stored is None or not is_sealed(stored):
                out.append(stored)
                continue
            text, gen = self.open_payload(tenant, user_id, event_id, kind, version, stored)
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
