"""``palimpsest archive ...``: the printers of the declared ``archive sweep``, ``archive list``, ``archive archive``
and ``archive restore`` (:mod:`palimpsest.operations`), and the group's help.

Archival never deletes: it is a ``memory_archived`` event; default retrieval
skips archived memories, ``palimpsest search --scope archive`` still finds
them, and ``restore`` brings them back (an event, counted as an access).
"""

from __future__ import annotations

import argparse

from palimpsest.cli_style import paint


def print_sweep(rows: list[dict], args: argparse.Namespace) -> None:
    """``archive sweep`` (a declared operation) as text: what was (or would be) archived, per user and reason."""
    verb = "would archive" if args.dry_run else "archived"
    for row in rows:
        print(f"{row['tenant']}/{row['user_id']}: {verb} {len(row['memory_ids'])} ({row['reason']})")
        for memory_id, text in zip(row["memory_ids"], row["texts"]):
            print(f"   {memory_id}  {text[:70]}")
    total = sum(len(r["memory_ids"]) for r in rows)
    print(paint(f"-- {verb} {total} memories" + (" (dry run: nothing written)" if args.dry_run else ""), "dim"))


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
    sub.add_parser("archive", help="archived memories: sweep by retention, list, restore")  # its commands: declared
