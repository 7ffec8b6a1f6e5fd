"""Backups of a running store, and restoring one into a new directory.

A backup holds what cannot be derived: ``store.json``, every shard's DuckDB log, the routing table
(``directory.jsonl``) and the API keys (``keys.jsonl``), with ``manifest.json`` written last (size,
sha256, event count and each user's head seq per log). In an encrypted store each shard also copies its
key store (``keys/shard-NNN.keys``, right after its log, in the same call: every key the copied log needs
is there, and a user forgotten before the backup has none), and the store's ``master.key`` is copied when
the store has one (with ``PALIMPSEST_MASTER_KEY`` the backup holds no master key: keep it apart).

Forgetting outlives a backup: a restore reads which users were forgotten since from the store the backup
was taken from (``manifest.json`` names it), or from ``forgets_from`` (that store moved, or any later
backup of it), and destroys their data keys in the restored key stores before the restored store can
open, so their events stay unreadable ciphertext and replay as erased. If neither is there the restore
is refused unless told ``forgets_from="none"``. Each shard copies its own log, checkpointed,
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
MASTER_FILE = "master.key"


def _copy_private(src: Path, dst: Path) -> None:
    """Copy a secret (a key file) with mode 0600 from the start, synced."""
    fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(src.read_bytes())
        fh.flush()
        os.fsync(fh.fileno())


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
    keys = None
    if mem.config.encrypted:
        keys = target / "keys"
        keys.mkdir(mode=0o700)
        keys = str(keys.resolve())
    shards = get([mem.shards.submit_admin(i, [Backup(target=str((target / "log").resolve()), keys_target=keys)])
                  for i in range(mem.config.num_shards)])
    copied = [name for name in SIDE_FILES if (mem.path / name).exists()]
    for name in copied:
        shutil.copyfile(mem.path / name, target / name)
    if store_config.master_key_file(mem.path).exists():
        _copy_private(store_config.master_key_file(mem.path), target / MASTER_FILE)
        copied.append(MASTER_FILE)
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


def restore(source: str | Path, store: str | Path, forgets_from: str | Path | None = None) -> dict:
    """Restore the backup at ``source`` into the new store directory ``store``; returns the manifest, with
    ``forgets_applied``: the users forgotten since the backup whose keys were destroyed in the copy."""
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
        keys = source / "keys" / shard["keys"]["file"] if "keys" in shard else None
        if keys is not None and (not keys.exists() or _sha256(keys) != shard["keys"]["sha256"]):
            raise StoreError(f"{keys} is missing or differs from the checksum in {source / MANIFEST}; the backup "
                             "is damaged: use another backup")
    encrypted = any("keys" in shard for shard in manifest["shards"])
    ledger = _forget_ledger(manifest, forgets_from) if encrypted else {}
    if (store / "store.json").exists():
        raise StoreError(f"{store} is already a store; restore into a new directory (or move that store away)")
    _empty_dir(store, "restored store")
    (store / "log").mkdir()
    for shard in manifest["shards"]:
        shutil.copyfile(source / "log" / shard["file"], store / "log" / shard["file"])
    for name in manifest["files"]:
        if name == MASTER_FILE:
            _copy_private(source / name, store / name)
        elif name != "store.json":
            shutil.copyfile(source / name, store / name)
    applied = []
    if encrypted:
        (store / "keys").mkdir(mode=0o700)
        for shard in manifest["shards"]:
            _copy_private(source / "keys" / shard["keys"]["file"], store / "keys" / shard["keys"]["file"])
        applied = _apply_forgets(source, store, manifest, ledger)
    shutil.copyfile(source / "store.json", store / "store.json")  # last: a store.json marks a complete store
    store_config.check_layout(store, store_config.StoreConfig.load(store))
    return {**manifest, "forgets_applied": applied}


def _forget_ledger(manifest: dict, forgets_from) -> dict:
    """Per (tenant, user), the newest key generation destroyed in the store the backup came from (or in
    ``forgets_from``); ``forgets_from="none"`` skips it."""
    from events.keystore import tombstones

    if forgets_from is not None and str(forgets_from) == "none":
        return {}
    where = Path(forgets_from) if forgets_from is not None else Path(manifest.get("source", ""))
    files = sorted((where / "keys").glob("shard-*.keys")) if (where / "store.json").exists() else []
    if not files:
        said = "the given --forgets-from" if forgets_from is not None else "the store this backup was taken from"
        raise StoreError(
            f"{said} ({where}) is not an encrypted store or backup with its key stores, so users forgotten after "
            f"this backup ({manifest.get('finished')}) cannot be kept forgotten; give --forgets-from STORE (that "
            "store where it is now, or a later backup of it), or --forgets-from none to restore without (users "
            "forgotten since would come back)")
    ledger: dict = {}
    for path in files:
        for stream, gen in tombstones(path).items():
            ledger[stream] = max(ledger.get(stream, 0), gen)
    return ledger


def _apply_forgets(source: Path, store: Path, manifest: dict, ledger: dict) -> list[list]:
    """Destroy, in the restored key stores, the keys of users forgotten since the backup."""
    from events.keystore import KeyStore

    cfg = store_config.StoreConfig.load(source)
    master = store_config.master_key(store, cfg)
    applied = []
    for shard in manifest["shards"]:
        keys = KeyStore(store / "keys" / shard["keys"]["file"], master)
        for stream, gen in sorted(ledger.items()):
            if keys.destroy(stream, gen):
                applied.append([*stream, gen])
    return applied
