"""Tenant API keys: an append-only log of key events in the store (``keys.jsonl``) and the key ring folded from it.

A key reads ``plm_<key id>_<secret>``. The store never keeps the secret: a
``api_key_created`` event records the key id, its tenant, whether it is an
admin key, a random salt and ``sha256(salt + secret)``; ``api_key_revoked``
ends it. Both are events (frozen, versioned, fsynced before the key is
handed out or the revocation is acknowledged), so who could call the server
and when is audited and replayable: the ring is a pure fold of the log.
Secrets are 256 random bits, so one salted SHA-256 is enough (no slow KDF
on every request). A torn last line was never acknowledged and is ignored.
Several processes (the CLI, every server replica) read the log; writers take
an exclusive ``flock`` so two appends never interleave.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import os
import secrets
import uuid
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, TypeAdapter

from events.commands import ID_RULE, canonical_id, id_problem
from events.errors import InvalidInputError

KEY_LOG = "keys.jsonl"
PREFIX = "plm"


class _KeyEvent(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1] = 1
    event_id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    key_id: str
    occurred_at: AwareDatetime


class ApiKeyCreated(_KeyEvent):
    kind: Literal["api_key_created"] = "api_key_created"
    tenant: str = Field(min_length=1, max_length=200)
    admin: bool = False
    salt: str
    digest: str
    label: str = ""


class ApiKeyRevoked(_KeyEvent):
    kind: Literal["api_key_revoked"] = "api_key_revoked"
    reason: str = ""


KeyEvent = Annotated[ApiKeyCreated | ApiKeyRevoked, Field(discriminator="kind")]
_decode = TypeAdapter(KeyEvent).validate_json


@dataclass(frozen=True)
class ApiKey:
    """A key as the fold knows it (never its secret)."""

    key_id: str
    tenant: str
    admin: bool
    salt: str
    digest: str
    label: str
    created_at: datetime
    revoked_at: datetime | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    def public(self) -> dict:
        return {"key_id": self.key_id, "tenant": self.tenant, "admin": self.admin, "label": self.label,
                "created_at": self.created_at.isoformat(),
                "revoked_at": self.revoked_at.isoformat() if self.revoked_at else None}


def evolve(keys: dict[str, ApiKey], event: ApiKeyCreated | ApiKeyRevoked) -> dict[str, ApiKey]:
    """The key ring after one event (a new dict; the old one is left as it was)."""
    if isinstance(event, ApiKeyCreated):
        key = ApiKey(event.key_id, event.tenant, event.admin, event.salt, event.digest, event.label, event.occurred_at)
        return {**keys, event.key_id: key}
    old = keys.get(event.key_id)
    if old is None or not old.active:
        return keys
    return {**keys, event.key_id: replace(old, revoked_at=event.occurred_at)}


def fold(keys: dict[str, ApiKey], events) -> dict[str, ApiKey]:
    for event in events:
        keys = evolve(keys, event)
    return keys


def _digest(salt: str, secret: str) -> str:
    return hashlib.sha256(bytes.fromhex(salt) + secret.encode("utf-8")).hexdigest()


class KeyLog:
    """``keys.jsonl`` of one store: durable appends, and reads of what was appended since the last read."""

    def __init__(self, store: Path) -> None:
        self.path = Path(store) / KEY_LOG
        self._offset = 0

    def append(self, events: list[_KeyEvent]) -> None:
        """Write the events and fsync before returning: an acknowledged key event survives a crash."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a+b") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                fh.seek(0, os.SEEK_END)
                size = fh.tell()
                if size:  # a torn last line (a crashed writer) must not swallow this one
                    fh.seek(size - 1)
                    if fh.read(1) != b"\n":
                        fh.write(b"\n")
                fh.write(b"".join(e.model_dump_json().encode("utf-8") + b"\n" for e in events))
                fh.flush()
                os.fsync(fh.fileno())
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def read_new(self) -> list[ApiKeyCreated | ApiKeyRevoked]:
        """The complete events appended since the previous call (all of them the first time)."""
        try:
            if os.stat(self.path).st_size <= self._offset:  # nothing new (the usual case: one stat, no open)
                return []
            with self.path.open("rb") as fh:
                fh.seek(self._offset)
                data = fh.read()
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n") + 1
        out = []
        for line in data[:end].splitlines():
            try:
                out.append(_decode(line))
            except ValueError:
                continue  # a line torn by a crash and then followed by a good one: never acknowledged
        self._offset += end
        return out


_VERIFIED_MAX = 10_000  # tokens remembered as verified (the memory is cleared when full)


class KeyRing:
    """The keys of a store, kept current by reading the key log's new lines before each check."""

    def __init__(self, store: Path) -> None:
        self.log = KeyLog(store)
        self.keys: dict[str, ApiKey] = {}
        self._verified: dict[str, ApiKey] = {}  # tokens checked against the keys as they are now
        self.refresh()

    def refresh(self) -> None:
        new = self.log.read_new()
        if new:
            self.keys = fold(self.keys, new)
            self._verified.clear()  # a key revoked (or created) since: every token is checked again

    def verify(self, token: str) -> ApiKey | None:
        """The active key ``token`` is, or None (malformed, unknown, wrong secret or revoked)."""
        self.refresh()
        known = self._verified.get(token)
        if known is not None:
            return known
        parts = token.split("_", 2)
        if len(parts) != 3 or parts[0] != PREFIX:
            return None
        key = self.keys.get(parts[1])
        if key is None or not key.active:
            return None
        if not hmac.compare_digest(_digest(key.salt, parts[2]), key.digest):
            return None
        if len(self._verified) >= _VERIFIED_MAX:
            self._verified.clear()
        self._verified[token] = key
        return key

    def create(self, tenant: str, *, admin: bool = False, label: str = "") -> tuple[str, ApiKey]:
        """A new key for ``tenant`` (in its canonical form, NFC): its token (shown once, stored nowhere) and its
        record."""
        tenant = canonical_id(tenant)
        if id_problem(tenant):
            raise InvalidInputError([("tenant", f"{id_problem(tenant)} (got {tenant!r:.60}); give a tenant name of "
                                                f"{ID_RULE}")], what="key creation")
        key_id, secret, salt = secrets.token_hex(8), secrets.token_urlsafe(32), secrets.token_hex(16)
        event = ApiKeyCreated(key_id=key_id, tenant=tenant, admin=admin, salt=salt, digest=_digest(salt, secret),
                              label=label, occurred_at=datetime.now(UTC))
        self.log.append([event])
        self.refresh()
        return f"{PREFIX}_{key_id}_{secret}", self.keys[key_id]

    def revoke(self, key_id: str, *, reason: str = "") -> ApiKey:
        self.refresh()
        key = self.keys.get(key_id)
        if key is None:
            raise InvalidInputError([("key_id", f"{key_id!r} is no key of this store; see `palimpsest keys list`")],
                                    what="key revocation")
        if key.active:
            self.log.append([ApiKeyRevoked(key_id=key_id, reason=reason, occurred_at=datetime.now(UTC))])
            self.refresh()
        return self.keys[key_id]

    def listing(self) -> list[dict]:
        self.refresh()
        return [k.public() for k in sorted(self.keys.values(), key=lambda k: (k.created_at, k.key_id))]
