"""Backups of a running store, and restoring one into a new directory.

A backup holds what cannot be derived: ``store.json``, every shard's DuckDB log, the routing table
(``directory.jsonl``) and the API keys (``keys.jsonl``), with ``manifest.json`` written last (size,
sha256, event count and each user's head seq per log). Each shard copies its own log, checkpointed,
while it answers no other call: it is the log's only writer, so the copy is consistent at that shard's
recorded heads, also while the store is served. The LanceDB vectors and the snapshots are projections:
a restored store rebuilds them from the logs when it first opens (the vectors are the recorded
embeddings, never encoded again).

Restore refuses a backup without its manifest or with a log whose checksum differs, and never writes
into an existing store.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

from events.errors import StoreError
from palimpsest import config as store_config

MANIFEST = "manifest.json"
SIDE_FILES = ("store.json", "directory.jsonl", "keys.jsonl")  # copied as they are (appended, fsynced lines)


def _empty_dir(path: Path, what: str) -> None:
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise StoreError(f"{path} already exists and is not an empty directory; give a new directory for the {what}")
    path.mkdir(parents=True, exist_ok=True)


def backup(mem, target: str | Path) -> dict:
    """Back up the open store ``mem`` into the new directory ``target``; returns the manifest."""
    from actors.commands import Backup  # here: a restore needs neither the shard code nor Ray
    from palimpsest.remote import get

    target = Path(target)
    _empty_dir(target, "backup")
    (target / "log").mkdir()
    started = datetime.now(UTC)
    shards = get([s.query.remote([Backup(target=str((target / "log").resolve()))]) for s in mem.shards.all()])
    copied = [name for name in SIDE_FILES if (mem.path / name).exists()]
    for name in copied:
        shutil.copyfile(mem.path / name, target / name)
    manifest = {"format": 1, "started": started.isoformat(), "finished": datetime.now(UTC).isoformat(),
                "source": str(mem.path.resolve()), "num_shards": mem.config.num_shards,
                "files": copied, "shards": [answer for [answer] in shards]}
    tmp = target / (MANIFEST + ".partial")
    with tmp.open("w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=2, ensure_ascii=False)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, target / MANIFEST)  # last: a backup without its manifest is incomplete
    return manifest


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def restore(source: str | Path, store: str | Path) -> dict:
    """Restore the backup at ``source`` into the new store directory ``store``; returns the manifest."""
    source, store = Path(source), Path(store)
    try:
        manifest = json.loads((source / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise StoreError(f"{source} holds no {MANIFEST}: not a palimpsest backup, or one that did not finish; "
                         "use another backup") from None
    except ValueError as exc:
        raise StoreError(f"{source / MANIFEST} is not valid JSON ({exc}); use another backup") from None
    for shard in manifest["shards"]:
        log = source / "log" / shard["file"]
        if not log.exists() or _sha256(log) != shard["sha256"]:
            raise StoreError(f"{log} is missing or differs from the checksum in {source / MANIFEST}; the backup "
                             "is damaged: use another backup")
    if (store / "store.json").exists():
        raise StoreError(f"{store} is already a store; restore into a new directory (or move that store away)")
    _empty_dir(store, "restored store")
    (store / "log").mkdir()
    for shard in manifest["shards"]:
        shutil.copyfile(source / "log" / shard["file"], store / "log" / shard["file"])
    for name in manifest["files"]:
        if name != "store.json":
            shutil.copyfile(source / name, store / name)
    shutil.copyfile(source / "store.json", store / "store.json")  # last: a store.json marks a complete store
    store_config.check_layout(store, store_config.StoreConfig.load(store))
    return manifest
