"""``palimpsest backup DIR`` and ``palimpsest restore DIR``: see :mod:`palimpsest.backup`."""

from __future__ import annotations

import argparse

from palimpsest.cli_common import open_store


def cmd_backup(args: argparse.Namespace) -> int:
    with open_store(args) as mem:
        manifest = mem.backup(args.dir)
    events = sum(s["events"] for s in manifest["shards"])
    size = sum(s["bytes"] for s in manifest["shards"])
    print(f"backed up {args.store} to {args.dir}: {len(manifest['shards'])} shard logs, {events} events, "
          f"{size / 1e6:.1f} MB (+ {', '.join(manifest['files'])}); restore with "
          f"`palimpsest --store NEW_DIR restore {args.dir}`")
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    from palimpsest.backup import restore

    manifest = restore(args.dir, args.store, forgets_from=args.forgets_from)
    events = sum(s["events"] for s in manifest["shards"])
    print(f"restored {events} events in {len(manifest['shards'])} shard logs from {args.dir} (taken "
          f"{manifest['finished']}) into {args.store}; the vectors are rebuilt from the logs on first open")
    if manifest["forgets_applied"]:
        print(f"kept forgotten: {len(manifest['forgets_applied'])} user(s) forgotten since the backup, their keys "
              "destroyed in the restored store")
    return 0


def register(sub) -> None:
    sp = sub.add_parser("backup", help="copy the store (consistent, also while it runs or is served) to a new directory")
    sp.add_argument("dir", help="a new or empty directory")
    sp.set_defaults(func=cmd_backup)
    sp = sub.add_parser("restore", help="restore a backup into --store (a new directory)")
    sp.add_argument("dir", help="the backup directory (holding manifest.json)")
    sp.add_argument("--forgets-from", metavar="STORE",
                    help="where to read the users forgotten since the backup (default: the store it was taken "
                         "from); 'none' to restore without")
    sp.set_defaults(func=cmd_restore)
