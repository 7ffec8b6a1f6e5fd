"""A store directory and its ``store.json``: fixed at creation, read on every open."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from events.errors import StoreError
from projections.adapters.embedding import EMBEDDERS, MODEL_IDS

FORMAT_VERSION = 1


@dataclass(frozen=True)
class StoreConfig:
    """``num_shards`` and the embedder cannot change after creation: routing and vectors depend on them."""

    num_shards: int
    embedder: str = "minilm"
    model_id: str = MODEL_IDS["minilm"]
    dim: int = 384
    format_version: int = FORMAT_VERSION
    settings: dict = field(default_factory=dict)  # palimpsest.settings.StoreSettings as JSON

    def save(self, path: Path) -> None:
        tmp = path / "store.json.tmp"
        tmp.write_text(json.dumps(asdict(self), indent=2) + "\n")
        os.replace(tmp, path / "store.json")

    def with_settings(self, settings: dict) -> StoreConfig:
        return replace(self, settings=settings)

    @classmethod
    def create(cls, path: Path, num_shards: int | None = None, embedder: str = "minilm",
               settings: dict | None = None) -> StoreConfig:
        if embedder not in EMBEDDERS:
            raise StoreError(f"unknown embedder {embedder!r}; use one of {sorted(EMBEDDERS)}")
        n = num_shards or os.cpu_count() or 1
        if n < 1:
            raise StoreError(f"num_shards must be at least 1, got {n}")
        cfg = cls(num_shards=n, embedder=embedder, model_id=MODEL_IDS[embedder], settings=settings or {})
        path.mkdir(parents=True, exist_ok=True)
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
        embedder = data.get("embedder", "minilm")
        dim = EMBEDDERS[embedder].dim if embedder in EMBEDDERS else None
        if dim is not None and data.get("dim", dim) != dim:
            raise StoreError(f"{file}: dim is {data.get('dim')!r:.60}, but embedder {embedder!r} writes vectors of "
                             f"{dim} numbers; set dim back to {dim} (it cannot change after creation)")
        if embedder not in EMBEDDERS:
            raise StoreError(f"{file}: unknown embedder {embedder!r}; use one of {sorted(EMBEDDERS)}")
        if data.get("model_id", MODEL_IDS[embedder]) != MODEL_IDS[embedder]:
            raise StoreError(f"{file}: embedder {embedder!r} encodes with {MODEL_IDS[embedder]!r}, but model_id says "
                             f"{data.get('model_id')!r}; the embedder cannot change after creation: set both back")
        return cls(**data)


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
