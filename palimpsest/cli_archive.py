"""``palimpsest archive ...``: sweep by retention (here), and the printers of the declared ``archive list``,
``archive archive`` and ``archive restore`` (:mod:`palimpsest.operations`).

Archival never deletes: it is a ``memory_archived`` event; default retrieval
skips archived memories, ``palimpsest search --scope archive`` still finds
them, and ``restore`` brings them back (an event, counted as an access).
"""

from __future__ import annotations

import argparse

from palimpsest.cli_common import open_store, parse_when, print_json, read_options, stream_args
from palimpsest.cli_style import paint


def cmd_sweep(args: argparse.Namespace) -> int:
    with open_store(args) as mem:
        rows = mem.sweep(args.at, tenant=args.tenant, user_id=args.user, dry_run=args.dry_run)
    if args.json:
        print_json(rows)
        return 0
    verb = "would archive" if args.dry_run else "archived"
    for row in rows:
        print(f"{row['tenant']}/{row['user_id']}: {verb} {len(row['memory_ids'])} ({row['reason']})")
        for memory_id, text in zip(row["memory_ids"], row["texts"]):
            print(f"   {memory_id}  {text[:70]}")
    total = sum(len(r["memory_ids"]) for r in rows)
    print(paint(f"-- {verb} {total} memories" + (" (dry run: nothing written)" if args.dry_run else ""), "dim"))
    return 0


def print_archived(rows: list[dict], args: argparse.Namespace) -> None:
    """``archive list`` (a declared operation, :mod:`palimpsest.operations`) as text."""
    for row in rows:
        r = f"R={row['retention']:.3f}" if row["retention"] is not None else row["detail"][:20]
        print(f"{paint(row['at'][:16], 'date')}  {row['reason']:<15} {r:<10} {row['memory_id']}  {row['text'][:60]}")
    print(paint(f"-- {len(rows)} archived memories", "dim"))


def print_moved(done: list[str], args: argparse.Namespace) -> None:
    """``archive archive`` and ``archive restore`` (declared operations, :mod:`palimpsest.operations`) as text."""
    verb = "restored" if args.archive_command == "restore" else "archived"
    print(f"{verb} {len(done)} memories: {', '.join(done) or '-'}")


def register(sub) -> None:
    p = sub.add_parser("archive", help="archived memories: sweep by retention, list, restore")
    asub = p.add_subparsers(dest="archive_command", required=True)

    sp = asub.add_parser("sweep", help="archive every memory whose retention fell below the policy's floor")
    stream_args(sp, required=False)
    sp.add_argument("--at", type=parse_when, help="ISO time with offset (default: now)")
    sp.add_argument("--dry-run", action="store_true", help="report only; write nothing")
    read_options(sp)
    sp.set_defaults(func=cmd_sweep)

