"""A store directory and its ``store.json``: fixed at creation, read on every open; and its master key."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import stat
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from events.errors import EncoderError, StoreError
from projections.adapters import encoder_kinds

FORMAT_VERSION = 1
ENCRYPTION = "aes-256-gcm"  # store.json "encryption" of a store whose payloads are sealed per user
PLAINTEXT = "none"  # a store created before encryption (store.json has no "encryption" entry): still opens
MASTER_KEY_ENV = "PALIMPSEST_MASTER_KEY"
MASTER_KEY_HOWTO = ("a base64-encoded 32-byte key, e.g. from "
                    "`python -c 'import base64, os; print(base64.b64encode(os.urandom(32)).decode())'`")


@dataclass(frozen=True)
class StoreConfig:
    """``num_shards`` cannot change after creation (routing depends on it). ``embedder`` is the spec of the
    active encoder (:mod:`projections.adapters.encoder_kinds`), ``model_id`` and ``dim`` those of its vectors:
    chosen at creation, changed only by a re-embedding (``palimpsest reembed``), which records the switch."""

    num_shards: int
    embedder: str = encoder_kinds.DEFAULT
    model_id: str = encoder_kinds.NAMED[encoder_kinds.DEFAULT][0]
    dim: int = 384
    format_version: int = FORMAT_VERSION
    settings: dict = field(default_factory=dict)  # palimpsest.settings.StoreSettings as JSON
    encryption: str = PLAINTEXT  # fixed at creation: new stores are encrypted (ENCRYPTION) unless asked not to be

    @property
    def encrypted(self) -> bool:
        return self.encryption == ENCRYPTION

    def save(self, path: Path) -> None:
        tmp = path / "store.json.tmp"
        tmp.write_text(json.dumps(asdict(self), indent=2) + "\n")
        os.replace(tmp, path / "store.json")

    def with_settings(self, settings: dict) -> StoreConfig:
        return replace(self, settings=settings)

    @classmethod
    def create(cls, path: Path, num_shards: int | None = None, embedder: str = encoder_kinds.DEFAULT,
               settings: dict | None = None, encrypted: bool = True) -> StoreConfig:
        embedder = (embedder or encoder_kinds.DEFAULT).strip() if isinstance(embedder, str) else embedder
        encoder_kinds.parse(embedder)
        n = num_shards or os.cpu_count() or 1
        if n < 1:
            raise StoreError(f"num_shards must be at least 1, got {n}")
        dim = encoder_kinds.known_dim(embedder)
        if dim is None:  # a remote or user-supplied model: its size is learned by loading it (a probe request)
            dim = encoder_kinds.make_embedder(embedder).dim
        cfg = cls(num_shards=n, embedder=embedder, model_id=encoder_kinds.model_id(embedder), dim=dim,
                  settings=settings or {}, encryption=ENCRYPTION if encrypted else PLAINTEXT)
        path.mkdir(parents=True, exist_ok=True)
        if encrypted:
            master_key(path, cfg, create=True)  # the key file, unless PALIMPSEST_MASTER_KEY holds the key
        cfg.save(path)
        return cfg

    @classmethod
    def load(cls, path: Path) -> StoreConfig:
        file = path / "store.json"
        if not file.exists():
            raise StoreError(
                f"{path} is not a palimpsest store (no store.json); create one with `palimpsest --store {path} ingest FILE`"
            )
        try:
            data = json.loads(file.read_text())
        except ValueError as exc:
            raise StoreError(f"{file} is not valid JSON ({exc}); restore it from a backup or fix it by hand") from None
        if not isinstance(data, dict):
            raise StoreError(f"{file} must hold a JSON object, got {type(data).__name__}")
        if data.get("format_version") != FORMAT_VERSION:
            raise StoreError(f"{file} has format {data.get('format_version')}, this code reads {FORMAT_VERSION}")
        known = {f for f in cls.__dataclass_fields__}
        unknown = sorted(set(data) - known)
        if unknown:
            raise StoreError(f"{file} has unknown entries {unknown}; remove them (known: {sorted(known)})")
        missing = sorted({"num_shards"} - set(data))
        if missing:
            raise StoreError(f"{file} lacks {missing}; restore it from a backup (it is written at creation)")
        n = data["num_shards"]
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise StoreError(f"{file}: num_shards must be a positive integer, got {n!r}; set it back to the number "
                             "of shard logs in log/")
        for name, kind in (("embedder", str), ("model_id", str), ("settings", dict)):
            if name in data and not isinstance(data[name], kind):
                raise StoreError(f"{file}: {name} must be a JSON {'object' if kind is dict else 'string'}, got "
                                 f"{data[name]!r:.60}; restore it from a backup (it is written at creation)")
        embedder = data.get("embedder", encoder_kinds.LEGACY)
        try:
            expected_id = encoder_kinds.model_id(embedder)
        except EncoderError as exc:
            raise StoreError(f"{file}: {exc}; set it back to the encoder the store uses") from None
        if data.get("model_id", expected_id) != expected_id:
            raise StoreError(f"{file}: embedder {embedder!r} records vectors as {expected_id!r}, but model_id says "
                             f"{data.get('model_id')!r}; set both back (change the encoder with `palimpsest "
                             "reembed`, which re-encodes the stored texts)")
        dim = encoder_kinds.known_dim(embedder)
        given = data.get("dim", dim if dim is not None else 384)
        if dim is not None and given != dim or isinstance(given, bool) or not isinstance(given, int) or given < 1:
            raise StoreError(f"{file}: dim is {data.get('dim')!r:.60}, but embedder {embedder!r} writes vectors of "
                             f"{dim if dim is not None else 'a fixed number of'} numbers; set dim back"
                             + (f" to {dim}" if dim is not None else ""))
        if data.get("encryption", PLAINTEXT) not in (PLAINTEXT, ENCRYPTION):
            raise StoreError(f"{file}: unknown encryption {data['encryption']!r}; it is {ENCRYPTION!r} or "
                             f"{PLAINTEXT!r}, fixed when the store was created: set it back")
        return cls(**data)


def master_key_file(path: Path) -> Path:
    return path / "master.key"


def key_store(path: Path, shard: int) -> Path:
    return path / "keys" / f"shard-{shard:03d}.keys"


def master_key(path: Path, cfg: StoreConfig, *, create: bool = False) -> bytes | None:
    """The master key of an encrypted store (None for a plaintext one): ``PALIMPSEST_MASTER_KEY`` if set, else
    the store's ``master.key`` (created, mode 0600, with ``create``: when the store is created)."""
    if not cfg.encrypted:
        return None
    env = os.environ.get(MASTER_KEY_ENV, "").strip()
    if env:
        return _decoded(env, MASTER_KEY_ENV)
    file = master_key_file(path)
    if create and not file.exists():
        fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(base64.b64encode(os.urandom(32)).decode() + "\n")
            fh.flush()
            os.fsync(fh.fileno())
    if not file.exists():
        raise StoreError(f"the store {path} is encrypted, but {MASTER_KEY_ENV} is not set and {file} does not "
                         f"exist; set {MASTER_KEY_ENV} to the key the store was created with, or restore the file")
    mode = stat.S_IMODE(file.stat().st_mode)
    if mode & 0o077:
        raise StoreError(f"{file} is readable by other users (mode {mode:o}); run `chmod 600 {file}`")
    return _decoded(file.read_text().strip(), str(file))


def _decoded(text: str, where: str) -> bytes:
    try:
        key = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        key = b""
    if len(key) != 32:
        raise StoreError(f"{where} is not a master key; give {MASTER_KEY_HOWTO}")
    return key


def store_id(path: Path) -> str:
    """Short id of a store directory, used to name its actors."""
    return hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]


def log_path(path: Path, shard: int) -> Path:
    return path / "log" / f"shard-{shard:03d}.duckdb"


def routing_table(path: Path) -> Path:
    return path / "directory.jsonl"


def snapshot_dir(path: Path) -> Path:
    return path / "snapshots"


def lance_dir(path: Path) -> Path:
    return path / "vectors"


def log_files(path: Path) -> list[Path]:
    return sorted((path / "log").glob("shard-*.duckdb"))


def check_layout(path: Path, cfg: StoreConfig) -> None:
    """Refuse a store whose files disagree with ``store.json``, before any actor opens (or creates) a log.

    Once a store holds data every shard has its log: a missing one would be
    created empty (its users' memories gone without a word), and a
    ``num_shards`` edited by hand would hide logs or route users elsewhere.
    """
    present = {int(f.stem.split("-")[1]) for f in log_files(path) if f.stem.split("-")[1].isdigit()}
    if not present:
        return  # a new store: the shards create their logs
    beyond = sorted(i for i in present if i >= cfg.num_shards)
    if beyond:
        raise StoreError(
            f"{path / 'store.json'} says num_shards={cfg.num_shards}, but {path / 'log'} holds the logs of shards "
            f"{beyond}; set num_shards back to {max(present) + 1} (the shard count cannot change after creation)")
    missing = [log_path(path, i) for i in range(cfg.num_shards) if i not in present]
    if missing:
        raise StoreError(
            f"the event log {missing[0]} is missing, but the store holds data in {len(present)} other shard log(s); "
            "restore the file from a backup (palimpsest will not recreate a shard log empty), or, if "
            "num_shards in store.json was raised by hand, set it back to the number of shard logs")
    if cfg.encrypted:
        lost = [key_store(path, i) for i in sorted(present) if not key_store(path, i).exists()]
        if lost:
            raise StoreError(
                f"the key store {lost[0]} is missing, but its shard log holds (sealed) events; restore it from a "
                "backup (without it those events cannot be read)")
