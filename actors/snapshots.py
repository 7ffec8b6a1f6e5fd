"""Per-user snapshots of a shard's projections: a checkpoint to start from instead of event 0.

One file per (tenant, user) under the shard's snapshot directory: a JSON
header line (stream, last folded ``seq``, fold fingerprint, sha256 and size
of the body) and the body, the user's :class:`~projections.folds.state.UserMemory`
pickled (protocol 5). Written to a temporary file and renamed, so a crash
leaves the old snapshot or the new one, never half of one.

Why pickle and not Arrow/Parquet: the projections are Python object graphs
(BM25 postings, episode and tier structures, the memory graph, numpy
vectors); a columnar encoding would need a schema per projection and a decode
back into these objects, which is the very fold cost a snapshot avoids.
Pickle restores them at C speed. A snapshot is trusted like the log beside
it (whoever can write the store directory is trusted); a damaged or
hand-edited file fails its checksum and is ignored.

An encrypted store's snapshots are sealed under their user's data key
(:mod:`events.sealed_blob`; the header says which generation, and stays
clear: ids, seqs and checksums only), so encryption at rest covers them and
forgetting the user (destroying its keys) leaves any copy of its snapshot
unreadable. A user with no live key gets no snapshot. Snapshots written in
plaintext before (an older store) are sealed when the shard starts
(:meth:`SnapshotStore.seal_plaintext`), or removed when their user has no
live key; a plaintext snapshot met later in an encrypted store is ignored.

A snapshot is used only if its fingerprint matches: a hash of the source of
every module in ``events/`` and ``projections/`` (the folds and what they
call), the fold configs (retention policy, segmentation, tiers, working
memory) and the Python and pickle versions. Any change there makes old
snapshots stale: the user is folded from event 0 and a new snapshot written.
"""

from __future__ import annotations

import copyreg
import dataclasses
import hashlib
import importlib
import inspect
import io
import json
import os
import pickle
import pkgutil
import sys
from functools import cache
from operator import attrgetter
from pathlib import Path

import structlog

import events
import projections
from events.crypto import PayloadCipher
from events.errors import StoreError
from events.sealed_blob import open_blob, seal_blob
from projections.folds.state import UserMemory

logger = structlog.get_logger("palimpsest.snapshots")
FORMAT = 1
ALL_SEALED = ".all-sealed"  # in an encrypted store's snapshot directory: no plaintext snapshot is left in it
Stream = tuple[str, str]


@cache
def code_fingerprint() -> str:
    """sha256 of the source of every module the folds can run (``events/`` and ``projections/``)."""
    h = hashlib.sha256(f"snapshot-format-{FORMAT} python-{sys.version_info[:2]} pickle-5".encode())
    for package in (events, projections):
        root = Path(package.__file__).parent
        for path in sorted(root.rglob("*.py")):
            h.update(str(path.relative_to(root.parent)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()


@cache
def dispatch_table() -> dict:
    """Picklers for the projections' slotted dataclasses: rebuilt by ``cls(*fields)``.

    The default for a slotted dataclass is ``dataclasses._dataclass_setstate``,
    which looks up the fields for every object: about 10 times slower to load
    than a constructor call. Only classes whose fields are all ``__init__``
    arguments are registered (their ``__init__`` rebuilds them exactly).
    """
    table = dict(copyreg.dispatch_table)
    for info in pkgutil.walk_packages(projections.__path__, "projections."):
        module = importlib.import_module(info.name)
        for cls in vars(module).values():
            if (inspect.isclass(cls) and cls.__module__ == module.__name__ and dataclasses.is_dataclass(cls)
                    and "__slots__" in vars(cls) and all(f.init for f in dataclasses.fields(cls))):
                table[cls] = _by_constructor(cls, tuple(f.name for f in dataclasses.fields(cls)))
    return table


def _by_constructor(cls: type, names: tuple[str, ...]):
    if len(names) < 2:  # attrgetter of one name gives the value, not a tuple
        get = attrgetter(*names) if names else None
        return lambda obj: (cls, (get(obj),) if get is not None else ())
    get = attrgetter(*names)  # the fields as one tuple, in C (a snapshot reduces ~50k objects)
    return lambda obj: (cls, get(obj))


def dumps(memory: UserMemory) -> bytes:
    out = io.BytesIO()
    pickler = pickle.Pickler(out, protocol=5)
    pickler.dispatch_table = dispatch_table()
    pickler.dump(memory)
    return out.getvalue()


def fingerprint(*configs: object) -> str:
    """The code fingerprint combined with the fold configs (their reprs are stable: frozen dataclasses/models)."""
    h = hashlib.sha256(code_fingerprint().encode())
    for config in configs:
        digest = getattr(config, "digest", None)
        h.update((digest() if callable(digest) else repr(config)).encode())
    return h.hexdigest()


class SnapshotStore:
    """Reads and writes one shard's user snapshots in ``directory``, for one fingerprint; sealed per user with
    ``cipher``'s keys (an encrypted store's)."""

    def __init__(self, directory: Path, fingerprint: str, cipher: PayloadCipher | None = None) -> None:
        self.directory = directory
        self.fingerprint = fingerprint
        self.keys = cipher.keys if cipher is not None else None
        directory.mkdir(parents=True, exist_ok=True)

    def path(self, stream: Stream) -> Path:
        key = hashlib.sha1("\x1f".join(stream).encode("utf-8")).hexdigest()
        return self.directory / f"{key}.snap"

    def save(self, stream: Stream, memory: UserMemory, log_checksum: int) -> int:
        """Write the user's snapshot atomically; returns its size in bytes (0: none written, the user of an
        encrypted store has no live key).

        ``log_checksum`` is the log's checksum of the user's events up to the
        snapshot's seq (:meth:`events.log.EventLog.checksums`).
        """
        if self.keys is not None and self.keys.current(stream) is None:
            return 0
        body, gen = dumps(memory), None
        if self.keys is not None:
            sealed = seal_blob(self.keys, stream, body, _context(memory.head, self.fingerprint))
            if sealed is None:
                return 0
            gen, body = sealed
        self._write(stream, {"format": FORMAT, "tenant": stream[0], "user_id": stream[1], "head": memory.head,
                             "fingerprint": self.fingerprint, "log_checksum": log_checksum,
                             **({"sealed": gen} if gen is not None else {})}, body)
        return len(body)

    def _write(self, stream: Stream, header: dict, body: bytes) -> None:
        header = {**header, "sha256": hashlib.sha256(body).hexdigest(), "size": len(body)}
        path = self.path(stream)
        tmp = path.with_suffix(".tmp")
        with open(tmp, "wb") as f:
            f.write(json.dumps(header).encode() + b"\n")
            f.write(body)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)

    def seal_plaintext(self) -> dict[str, int]:
        """Seal every plaintext snapshot of an encrypted store (written before snapshots were sealed) under its
        user's key, as it is (its body is not decoded); remove it when the user has no live key, or when it cannot
        be read. Temporary files a crash left are removed. Run before the shard loads any snapshot; once done, a
        mark file says so and later starts skip it (this code writes no plaintext snapshot)."""
        report = {"snapshots_sealed": 0, "snapshots_removed": 0}
        mark = self.directory / ALL_SEALED
        if self.keys is None or mark.exists():
            return report
        for tmp in self.directory.glob("*.tmp"):
            tmp.unlink(missing_ok=True)
        for path in self.directory.glob("*.snap"):
            try:
                with open(path, "rb") as f:
                    header = json.loads(f.readline())
                    if isinstance(header, dict) and "sealed" in header:
                        continue
                    body = f.read()
                stream = (header["tenant"], header["user_id"])
                sealed = seal_blob(self.keys, stream, body, _context(header["head"], header["fingerprint"]))
            except (OSError, ValueError, KeyError, TypeError):
                sealed = None
            if sealed is None or path != self.path(stream):
                path.unlink(missing_ok=True)
                report["snapshots_removed"] += 1
                continue
            kept = {k: v for k, v in header.items() if k not in ("sha256", "size")}
            self._write(stream, {**kept, "sealed": sealed[0]}, sealed[1])
            report["snapshots_sealed"] += 1
        if any(report.values()):
            logger.info("plaintext_snapshots_sealed", directory=str(self.directory), **report)
        mark.write_bytes(b"")
        return report

    def load(self, stream: Stream, max_head: int) -> tuple[UserMemory, int] | None:
        """The user's snapshot and the log checksum it was written against, if there is a valid one for this
        fingerprint at a seq the log has; else None. The caller compares the checksum with the log's."""
        path = self.path(stream)
        try:
            with open(path, "rb") as f:
                header = json.loads(f.readline())
                body = f.read()
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            return self._reject(stream, f"unreadable header: {exc}")
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            return self._reject(stream, "unknown format")
        if (header.get("tenant"), header.get("user_id")) != stream:
            return self._reject(stream, "written for another stream")
        if header.get("fingerprint") != self.fingerprint:
            return self._reject(stream, "fold code or config changed since it was written", level="info")
        if header.get("size") != len(body) or header.get("sha256") != hashlib.sha256(body).hexdigest():
            return self._reject(stream, "checksum mismatch (damaged or edited)")
        if not isinstance(header.get("head"), int) or header["head"] > max_head:
            return self._reject(stream, f"at seq {header.get('head')}, beyond the log's {max_head}")
        if (self.keys is not None) != ("sealed" in header):
            return self._reject(stream, "sealed in a plaintext store" if self.keys is None else
                                "plaintext in an encrypted store")
        if self.keys is not None:
            try:
                body = open_blob(self.keys, stream, header["sealed"], body, _context(header["head"], self.fingerprint))
            except (StoreError, TypeError) as exc:
                return self._reject(stream, f"does not open under its user's key ({exc})")
            if body is None:
                return self._reject(stream, "its user's key was destroyed (forgotten)", level="info")
        try:
            memory = pickle.loads(body)
        except Exception as exc:  # noqa: BLE001 - any unpickling failure means: rebuild from the log
            return self._reject(stream, f"cannot be decoded: {exc}")
        if not isinstance(memory, UserMemory) or memory.head != header["head"]:
            return self._reject(stream, "holds no user memory at its stated seq")
        if not isinstance(header.get("log_checksum"), int):
            return self._reject(stream, "no log checksum")
        return memory, header["log_checksum"]

    def remove(self, stream: Stream) -> bool:
        """Delete the user's snapshot (and a temporary one a crash left); whether there was one."""
        path = self.path(stream)
        path.with_suffix(".tmp").unlink(missing_ok=True)
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        return True

    def reject(self, stream: Stream, why: str, level: str = "warning") -> None:
        return self._reject(stream, why, level)

    def _reject(self, stream: Stream, why: str, level: str = "warning") -> None:
        getattr(logger, level)("snapshot_ignored", tenant=stream[0], user_id=stream[1], reason=why)
        return None

    def streams(self) -> int:
        return sum(1 for _ in self.directory.glob("*.snap"))


def _context(head: int, fingerprint: str) -> bytes:
    """What a sealed snapshot is bound to besides its user and key: its seq and fold fingerprint."""
    return f"snapshot\x1f{head}\x1f{fingerprint}".encode()
