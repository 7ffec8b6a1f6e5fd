"""Helpers shared by the command modules of the CLI: opening the store, times, JSON output, the options every read
command takes (``--json``, ``--no-pager``)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from datetime import date, datetime
from pathlib import Path


DEFAULT_STORE = os.environ.get("PALIMPSEST_STORE", ".store")
SCOPES = ("active", "archive", "all")  # projections.folds.archive.SCOPES, without importing the folds


def parse_when(value: str) -> datetime:
    try:
        stamp = datetime.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not an ISO-8601 time; give one like 2024-05-01T09:30:00+00:00") from None
    if stamp.tzinfo is None:
        raise argparse.ArgumentTypeError(f"{value!r} has no timezone; add one, e.g. {value}+00:00")
    return stamp


def remote(args: argparse.Namespace, *, connect: bool = True):
    """With ``--server``/``PALIMPSEST_URL``: a client of that server (no Ray, no store); else None.

    ``connect=False`` only says whether there is a server to talk to."""
    url = getattr(args, "server", None) or os.environ.get("PALIMPSEST_URL") or None
    if not url or not connect:
        return url
    from palimpsest.client import RemoteMemory

    return RemoteMemory(url, os.environ.get("PALIMPSEST_API_KEY", "").strip())


_OTHER_ENCODERS = ("multilingual-e5-small (offline, ~100 languages: Chinese, and questions across languages; better "
                   "recall, slower search), sentence-transformers:<name-or-path>, openai:<model> (an OpenAI-compatible "
                   "endpoint set by PALIMPSEST_EMBEDDINGS_BASE_URL / _API_KEY)")
EMBEDDER_HELP = (f"encoder of a new store: minilm (default; English, the fastest search), {_OTHER_ENCODERS}; an "
                 "existing store keeps its own (see reembed)")
REEMBED_HELP = f"the encoder to move to: minilm (English, the fastest search), {_OTHER_ENCODERS}"


def open_store(args: argparse.Namespace, **create):
    """The store, or with ``--server``/``PALIMPSEST_URL`` a client of the server serving it (no Ray, no store)."""
    client = remote(args)
    if client:
        return client
    if not create or (Path(args.store) / "store.json").exists():  # no store there (a read), or another process
        _refuse_unopenable(Path(args.store))  # has it open: said at once, before the seconds of importing Ray
    from palimpsest.memory import Memory  # imports Ray: only for commands that need the actors

    return Memory.open(args.store, create=bool(create), **create)


def _refuse_unopenable(path: Path) -> None:
    """The error ``Memory.open`` would give (no ``store.json``, a damaged one), or, when another process holds a
    shard's log (a server, or a program with the store open), one that names it and the way in through a server."""
    from events.errors import StoreError
    from events.log_lock import lock_holders
    from palimpsest.config import StoreConfig, log_path

    cfg = StoreConfig.load(path)
    ray = sys.modules.get("ray")
    if os.environ.get("RAY_ADDRESS") or (ray is not None and ray.is_initialized()):
        return  # a running Ray: the store's shards may be actors there, which the command attaches to
    logs = [log_path(path, shard) for shard in range(cfg.num_shards)]
    held = lock_holders(logs)
    for log in logs:
        if log in held:
            raise StoreError(
                f"the store at {path} is open in another process (PID {', '.join(map(str, held[log]))} holds "
                f"{log.name}); a store is opened by one process at a time. If it is served, ask "
                "its server: `palimpsest --server URL ...` with an API key in PALIMPSEST_API_KEY; otherwise stop "
                "that program and run the command again")


def _plain(value):
    """A value JSON has no type for: times as ISO-8601, records as objects, paths and the rest as text."""
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return value.to_dict() if hasattr(value, "to_dict") else dataclasses.asdict(value)
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    if hasattr(value, "model_dump"):  # a pydantic model
        return value.model_dump(mode="json")
    return str(value)


def print_json(obj) -> None:
    """``obj`` as one JSON document on stdout (``--json``): keys in the order the command gives them, times ISO."""
    print(json.dumps(obj, ensure_ascii=False, indent=2, default=_plain))


def read_options(sp: argparse.ArgumentParser) -> None:
    """The options of a command that prints what it read: ``--json`` and ``--no-pager``."""
    sp.add_argument("--json", action="store_true", help="print one JSON document (for programs; no colours, no pager)")
    sp.add_argument("--no-pager", action="store_true", help="print everything, even past the screen's height "
                                                            "(default: long output on a terminal goes through $PAGER, "
                                                            "else less -FRX)")


def stream_args(sp: argparse.ArgumentParser, required: bool = True) -> None:
    sp.add_argument("--tenant", required=required)
    sp.add_argument("--user", required=required)
