"""One shard's per-user data keys, each wrapped (AES-256-GCM) under the store's master key, in one file.

A user's events are sealed under its current data key (:mod:`events.crypto`); forgetting the user destroys
the key, which is what makes its events unreadable (crypto-shredding): the log itself stays append-only.

File format, JSON lines (``keys/shard-NNN.keys``):

- a header ``{"format": 1, "check": ...}``: a known constant sealed under the master key, so a wrong master
  key is refused at open instead of every payload failing later;
- ``{"tenant", "user_id", "gen", "wrapped"}``: generation ``gen`` of the user's data key, wrapped (nonce +
  ciphertext, base64; the associated data binds it to tenant, user and generation);
- ``{"tenant", "user_id", "gen", "destroyed"}``: a tombstone. A payload sealed under a destroyed generation
  decodes as erased; one sealed under a generation with neither key nor tombstone is an error (a lost key
  store must not look like a forget).

A new key is appended and fsynced before any payload sealed under it is committed to the log. Destroying
keys rewrites the whole file without their wrapped bytes (a temporary file, fsynced, renamed over the old
one, directory fsynced): no file of the store keeps them. What the file system does with the freed blocks
is below this guarantee (see the README's erasure section).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from datetime import UTC, datetime
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from events.errors import StoreError

FORMAT = 1
KEY_BYTES = 32
NONCE_BYTES = 12
CHECK = b"palimpsest key store v1"
Stream = tuple[str, str]


def _wrap_aad(tenant: str, user_id: str, gen: int) -> bytes:
    return f"key\x1f{tenant}\x1f{user_id}\x1f{gen}".encode()


def _seal(aead: AESGCM, plain: bytes, aad: bytes) -> str:
    nonce = os.urandom(NONCE_BYTES)
    return base64.b64encode(nonce + aead.encrypt(nonce, plain, aad)).decode("ascii")


def _open(aead: AESGCM, sealed: str, aad: bytes) -> bytes:
    raw = base64.b64decode(sealed)
    return aead.decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], aad)


def tombstones(path: Path) -> dict[Stream, int]:
    """Per user, the newest generation a key store file records as destroyed (read without the master key:
    tombstones hold ids and generations only)."""
    out: dict[Stream, int] = {}
    try:
        lines = Path(path).read_bytes().splitlines()
    except OSError as exc:
        raise StoreError(f"cannot read the key store {path} ({exc}); give a store or backup whose keys/ is readable")
    for n, line in enumerate(lines[1:], start=2):
        try:
            row = json.loads(line)
        except ValueError:
            raise StoreError(f"{path}: line {n} is not JSON; give an intact store or backup") from None
        if isinstance(row, dict) and "destroyed" in row:
            stream = (row["tenant"], row["user_id"])
            out[stream] = max(out.get(stream, 0), int(row["gen"]))
    return out


class KeyStore:
    """The data keys of one shard's users. ``read_only``: never creates the file or a key (the audit)."""

    def __init__(self, path: Path, master_key: bytes, *, read_only: bool = False) -> None:
        if len(master_key) != KEY_BYTES:
            raise StoreError(f"the master key must be {KEY_BYTES} bytes, got {len(master_key)}")
        self.path = Path(path)
        self.read_only = read_only
        self._master = AESGCM(master_key)
        self._live: dict[Stream, dict[int, AESGCM]] = {}
        self._destroyed: dict[Stream, set[int]] = {}
        self._lines: list[dict] = []  # the file's entries, in order (rewritten without wrapped keys on destroy)
        self._load()

    # -- reading ---------------------------------------------------------
    def _load(self) -> None:
        if not self.path.exists():
            if not self.read_only:
                self._rewrite([])
            return
        good = 0
        with self.path.open("rb") as fh:
            lines = fh.readlines()
        if not lines:
            raise StoreError(f"the key store {self.path} is empty; restore it from a backup")
        for n, line in enumerate(lines):
            if not line.endswith(b"\n"):
                break  # a torn last line was never followed by a commit that needs it
            try:
                row = json.loads(line)
            except ValueError:
                raise StoreError(f"{self.path}: line {n + 1} is not JSON; restore the key store from a backup") from None
            if n == 0:
                self._check_header(row)
            else:
                self._apply(row)
                self._lines.append(row)
            good += len(line)
        if good < sum(len(x) for x in lines) and not self.read_only:
            with self.path.open("r+b") as fh:
                fh.truncate(good)
                os.fsync(fh.fileno())

    def _check_header(self, row: dict) -> None:
        if not isinstance(row, dict) or row.get("format") != FORMAT or "check" not in row:
            raise StoreError(f"{self.path} is not a palimpsest key store of format {FORMAT}")
        try:
            ok = _open(self._master, row["check"], b"check") == CHECK
        except (InvalidTag, ValueError):
            ok = False
        if not ok:
            raise StoreError(
                f"the key store {self.path} was sealed under another master key; set PALIMPSEST_MASTER_KEY to the "
                "key the store was created with (or restore its master.key file)")

    def _apply(self, row: dict) -> None:
        stream, gen = (row["tenant"], row["user_id"]), int(row["gen"])
        if "destroyed" in row:
            self._live.get(stream, {}).pop(gen, None)
            self._destroyed.setdefault(stream, set()).add(gen)
            return
        key = _open(self._master, row["wrapped"], _wrap_aad(*stream, gen))
        self._live.setdefault(stream, {})[gen] = AESGCM(key)

    def key(self, stream: Stream, gen: int) -> AESGCM | None:
        """The data key of ``gen``; None if it was destroyed. A generation never created is an error."""
        aead = self._live.get(stream, {}).get(gen)
        if aead is not None or gen in self._destroyed.get(stream, ()):
            return aead
        raise StoreError(
            f"no data key {stream} generation {gen} in {self.path}, and no record of its destruction: the key "
            "store is not the one this log was written with; restore it from a backup")

    def keys_of(self, stream: Stream) -> tuple[dict[int, AESGCM], set[int]]:
        """The live keys and the destroyed generations of one user (one lookup per stream per batch)."""
        return self._live.get(stream, {}), self._destroyed.get(stream, set())

    def current(self, stream: Stream) -> int | None:
        """The generation new payloads of the user are sealed under, or None when it has no live key."""
        live = self._live.get(stream)
        return max(live) if live else None  # destruction goes up to a generation: a live one is newer

    def unfinished(self, stream: Stream, gen: int) -> bool:
        """Whether a key of generation ``gen`` or older is still live (a forget the process died inside)."""
        return any(g <= gen for g in self._live.get(stream, {}))

    # -- writing ---------------------------------------------------------
    def ensure(self, streams) -> dict[Stream, tuple[int, AESGCM]]:
        """Each stream's current key, creating (durably) a new generation for those without a live one."""
        out, new = {}, []
        for stream in streams:
            gen = self.current(stream)
            if gen is None:
                if self.read_only:
                    raise StoreError(f"the key store {self.path} is opened read-only; it cannot create keys")
                gen = max([0, *self._live.get(stream, {}), *self._destroyed.get(stream, ())]) + 1
                key = AESGCM.generate_key(bit_length=256)
                row = {"tenant": stream[0], "user_id": stream[1], "gen": gen,
                       "wrapped": _seal(self._master, key, _wrap_aad(*stream, gen))}
                new.append(row)
                self._live.setdefault(stream, {})[gen] = AESGCM(key)
            out[stream] = (gen, self._live[stream][gen])
        if new:
            self._lines += new
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in new))
                fh.flush()
                os.fsync(fh.fileno())
        return out

    def destroy(self, stream: Stream, upto_gen: int) -> int:
        """Destroy every key of the user up to generation ``upto_gen``; returns how many were live."""
        doomed = [g for g in self._live.get(stream, {}) if g <= upto_gen]
        if not doomed:
            return 0
        at = datetime.now(UTC).isoformat()
        kept = [r for r in self._lines
                if not ((r["tenant"], r["user_id"]) == stream and int(r["gen"]) in doomed and "wrapped" in r)]
        tombstones = [{"tenant": stream[0], "user_id": stream[1], "gen": g, "destroyed": at} for g in doomed]
        self._rewrite(kept + tombstones)
        for g in doomed:
            del self._live[stream][g]
            self._destroyed.setdefault(stream, set()).add(g)
        return len(doomed)

    def copy_to(self, target: Path) -> dict:
        """A copy of the file at ``target`` (mode 0600, synced, renamed into place): its name, size, sha256."""
        data = self.path.read_bytes()
        tmp = target.with_name(target.name + ".partial")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
        return {"file": target.name, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}

    def destroyed(self) -> dict[Stream, int]:
        """Per user, the newest generation destroyed (the forgets this key store records)."""
        return {stream: max(gens) for stream, gens in self._destroyed.items() if gens}

    def _rewrite(self, rows: list[dict]) -> None:
        header = {"format": FORMAT, "check": _seal(self._master, CHECK, b"check")}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in [header, *rows]))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)
        dir_fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
        self._lines = list(rows)
