"""``palimpsest --store OLD encrypt --out NEW``: copy a plaintext store (created before encryption) into a new,
encrypted one. Explicit, never silent: the old store is only read and stays as it was.

Every stored event keeps its tenant, user, seq, event id, kind, schema version, times and payload bytes (the
payload sealed under its user's new data key, not re-encoded, so no upcaster runs); every command record keeps
its id and outcome (sealed as an encrypted store seals it). Routing and API keys are copied. Projections,
LanceDB rows and snapshots are not: the new store folds its logs on first open and rebuilds them (replay never
re-embeds, the vectors are in the events). The old store still holds the plaintext: delete it (and its backups)
once the new one is checked, or a forget in the new store does not reach what the old one keeps.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import duckdb
import pyarrow as pa

from events.crypto import PayloadCipher
from events.duckdb_log import SEALED_DDL, fetch_arrow
from events.envelope import ENVELOPE_SCHEMA, SEALED_FIELD
from events.errors import StoreError
from events.keystore import KeyStore
from palimpsest import config as store_config

COPIED_FILES = ("directory.jsonl", "keys.jsonl")


def encrypt_store(old: Path, new: Path) -> dict:
    """Copy the plaintext store ``old`` into the new encrypted store ``new``; counts of what was copied."""
    cfg = store_config.StoreConfig.load(old)
    if cfg.encrypted:
        raise StoreError(f"{old} is already encrypted (store.json: {cfg.encryption!r}); nothing to migrate")
    if new.exists() and any(new.iterdir()):
        raise StoreError(f"{new} is not empty; give a new directory for the encrypted copy")
    files = store_config.log_files(old)
    store_config.check_layout(old, cfg)
    new.mkdir(parents=True, exist_ok=True)
    target = replace(cfg, encryption=store_config.ENCRYPTION)
    master = store_config.master_key(new, target, create=True)
    report = {"events": 0, "commands": 0, "shards": len(files)}
    for path in files:
        shard = int(path.stem.split("-")[1])
        cipher = PayloadCipher(KeyStore(store_config.key_store(new, shard), master))
        report_shard = _copy_log(path, store_config.log_path(new, shard), cipher)
        report["events"] += report_shard[0]
        report["commands"] += report_shard[1]
    for name in COPIED_FILES:
        if (old / name).exists():
            shutil.copy2(old / name, new / name)
    target.save(new)  # last: a half-made copy has no store.json and does not open
    return report


def _copy_log(source: Path, target: Path, cipher: PayloadCipher) -> tuple[int, int]:
    try:
        src = duckdb.connect(str(source), read_only=True)
    except duckdb.Error as exc:
        raise StoreError(f"cannot open {source} read-only: {exc}; stop the process that has the store open") from None
    try:
        src.execute("SET TimeZone = 'UTC'")
        events = fetch_arrow(src, f"SELECT {', '.join(ENVELOPE_SCHEMA.names)} FROM events ORDER BY tenant, user_id, seq")
        commands = fetch_arrow(src, "SELECT command_id, kind, tenant, user_id, recorded_at, event_ids, outcome "
                                    "FROM commands ORDER BY recorded_at")
    finally:
        src.close()
    cols = [events.column(n).to_pylist() for n in ("tenant", "user_id", "event_id", "kind", "schema_version",
                                                   "payload")]
    payloads, sealed = cipher.seal_payloads(*cols)
    events = events.set_column(events.schema.get_field_index("payload"), ENVELOPE_SCHEMA.field("payload"),
                               pa.array(payloads, pa.string())).append_column(SEALED_FIELD,
                                                                              pa.array(sealed, pa.binary()))
    target.parent.mkdir(parents=True, exist_ok=True)
    dst = duckdb.connect(str(target))
    try:
        dst.execute("SET TimeZone = 'UTC'")
        dst.execute(SEALED_DDL)
        dst.execute("BEGIN TRANSACTION")
        dst.register("_copied", events)
        dst.execute("INSERT INTO events SELECT * FROM _copied")
        dst.unregister("_copied")
        rows = zip(*(commands.column(n).to_pylist() for n in ("command_id", "kind", "tenant", "user_id", "outcome")))
        outcomes = [cipher.seal_outcome(*row) for row in rows]
        if outcomes:
            commands = commands.set_column(commands.schema.get_field_index("outcome"), "outcome", [outcomes])
            dst.register("_commands", commands)
            dst.execute("INSERT INTO commands SELECT * FROM _commands")
            dst.unregister("_commands")
        dst.execute("COMMIT")
        dst.execute("CHECKPOINT")
    finally:
        dst.close()
    return events.num_rows, commands.num_rows
