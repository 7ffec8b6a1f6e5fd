"""Helpers shared by the command modules of the CLI: opening the store, times, JSON output."""

from __future__ import annotations

import argparse
import json
import os
from datetime import datetime


DEFAULT_STORE = os.environ.get("PALIMPSEST_STORE", ".store")


def parse_when(value: str) -> datetime:
    try:
        stamp = datetime.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not an ISO-8601 time; give one like 2024-05-01T09:30:00+00:00") from None
    if stamp.tzinfo is None:
        raise argparse.ArgumentTypeError(f"{value!r} has no timezone; add one, e.g. {value}+00:00")
    return stamp


def open_store(args: argparse.Namespace, **create):
    """The store, or with ``--server``/``PALIMPSEST_URL`` a client of the server serving it (no Ray, no store)."""
    from palimpsest.client import RemoteMemory, server_url

    url = server_url(args)
    if url and not create:
        return RemoteMemory(url, os.environ.get("PALIMPSEST_API_KEY", "").strip())
    from palimpsest.memory import Memory  # imports Ray: only for commands that need the actors

    return Memory.open(args.store, create=bool(create), **create)


def print_json(obj) -> None:
    print(json.dumps(obj, ensure_ascii=False, indent=2, default=str))


def stream_args(sp: argparse.ArgumentParser, required: bool = True) -> None:
    sp.add_argument("--tenant", required=required)
    sp.add_argument("--user", required=required)
