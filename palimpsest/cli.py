"""The ``palimpsest`` command line: a thin layer over :class:`palimpsest.Memory` and the audit reader.

Modules are imported where a command needs them, so that a command sent to a server (``--server URL``)
loads neither Ray nor the projections: it answers in a fraction of a second from a cold shell.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import datetime
from pathlib import Path

from events.errors import InvalidInputError, PalimpsestError
from palimpsest import (
    __version__, cli_archive, cli_backup, cli_erasure, cli_feedback, cli_graph, cli_learning, cli_mcp, cli_notes,
    cli_operations, cli_serve, cli_style,
)
from palimpsest.cli_common import (
    DEFAULT_STORE, EMBEDDER_HELP, REEMBED_HELP, open_store, parse_when, print_json, read_options, remote, stream_args,
)

def cmd_ingest(args: argparse.Namespace) -> int:
    from palimpsest import formats

    path = Path(args.file)
    if not path.exists():
        raise PalimpsestError(f"no such file: {path}; give a LoCoMo JSON or a JSONL message file")
    fmt = formats.detect_format(path) if args.format == "auto" else args.format
    client = remote(args)
    if client is None:  # validated before the store is opened: a refused file creates no store, starts no Ray
        from events.commands import validate_messages

        messages = formats.read_locomo(path, args.tenant or "locomo") if fmt == "locomo" else formats.read_jsonl(path)
        defaults = {k: v for k, v in (("tenant", args.tenant), ("user_id", args.user)) if v is not None}
        messages = validate_messages([{**defaults, **m} for m in messages])
    with client or open_store(args, num_shards=args.num_shards, embedder=args.embedder) as mem:
        if client:
            default_tenant = args.tenant or mem.tenant  # through a server: the key's
            messages = formats.read_locomo(path, default_tenant) if fmt == "locomo" else formats.read_jsonl(path)
        report = mem.add_messages(messages, tenant=args.tenant, user_id=args.user, progress=not args.quiet)
    print(
        f"ingested {report.received} messages ({report.created} new, {report.duplicates} already stored) "
        f"from {path} [{fmt}] in {report.seconds:.1f}s ({report.messages_per_s:.0f} msg/s)"
    )
    return 0


def cmd_operation(op, args: argparse.Namespace) -> int:
    """A declared operation's subcommand (:mod:`palimpsest.cli_operations`): its method on the store or the server."""
    with open_store(args) as mem:
        result = cli_operations.call(op, mem, args)
        cli_operations.show(op, result, args, mem)
    return 0


def read_queries(path: str, tenant: str | None, user: str | None) -> list[tuple[str, str, str]]:
    """A query file: one query per line, plain text (needs --tenant/--user) or JSON {"query", "tenant", "user"}."""
    out = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        row = json.loads(line) if line.lstrip().startswith("{") else {"query": line.strip()}
        t, u = row.get("tenant", tenant), row.get("user", row.get("user_id", user))
        if not (t and u and row.get("query")):
            raise PalimpsestError(f"{path}:{n}: a query needs a tenant and a user; pass --tenant/--user or give "
                                  'JSON lines like {"query": "...", "tenant": "acme", "user": "alice"}')
        out.append((t, u, row["query"]))
    return out


def retention_policy(value: str):
    """``--policy``: a policy file (.json/.toml), or a preset's name (``palimpsest policies``; old names too)."""
    from projections.folds.policy import RetentionPolicy, preset

    if Path(value).exists() or Path(value).suffix.lower() in (".json", ".toml"):
        return RetentionPolicy.load(value)
    return preset(value)


def cmd_counterfactual(args: argparse.Namespace) -> int:
    policy = retention_policy(args.policy)
    queries = read_queries(args.queries, args.tenant, args.user) if args.queries else []
    with open_store(args) as mem:
        report = mem.counterfactual(policy, args.at, queries=queries, k=args.k, tenant=args.tenant)
    if args.json:
        print_json(report)
        return 0
    print(f"re-projected retention under policy {policy.name!r} (the log was only read)")
    for user in report:
        print(f"\n{user['tenant']}/{user['user_id']}: {user['memories']} memories; archived now "
              f"{user['archived_current']} -> under {policy.name!r} {user['archived_other']}")
        for key, label in (("archived_only_under_other", "would be archived"), ("kept_only_under_other", "would be kept")):
            for item in user[key][:10]:
                print(f"  {label:<17} {str(item['turn_id'] or '-'):<10} {item['text'][:70]}")
            if (line := cli_style.more(len(user[key]) - 10, "--json for every one")) is not None:
                print(f"  {line}")
        for q in user["queries"]:
            moved = [r for r in q["ranks"] if r["rank_current"] != r["rank_other"]]
            print(f"  query {q['query']!r}: {len(moved)} of top {args.k} change rank (current -> {policy.name})")
            for r in moved:
                a, b = (str(r[k] or "-") for k in ("rank_current", "rank_other"))
                print(f"    {a:>3} -> {b:<3} {str(r['turn_id'] or '-'):<10} {r['text'][:60]}")
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    if args.policy:
        return cmd_counterfactual(args)
    with open_store(args) as mem:
        reports = mem.replay()
    if args.json:
        print_json({"equal": all(r.equal for r in reports), "shards": reports})
        return 0 if all(r.equal for r in reports) else 1
    ok = True
    for r in reports:
        ok &= r.equal
        rate = r.events / r.seconds if r.seconds else 0.0
        print(f"shard {r.shard}: {r.events} events rebuilt in {r.seconds:.2f}s ({rate:,.0f} events/s)")
        if getattr(r, "erased", 0):
            print(f"   {r.erased} events of forgotten users replayed as erased (their keys are destroyed)")
        for name in r.live:
            mark = "==" if r.live[name] == r.rebuilt[name] else "!="
            print(f"   {name:<9} live {r.live[name][:16]} {mark} rebuilt {r.rebuilt[name][:16]}")
    print("digests match: every projection equals its rebuild from the log" if ok else "DIGEST MISMATCH")
    return 0 if ok else 1


def _audit(args: argparse.Namespace, tenant: str | None = None, *, bounded: bool = False):
    """The read-only reader, once the ids and kinds given are ids and kinds (a name with bytes that are not
    UTF-8 arrives as a lone surrogate and is refused here, not by DuckDB); ``bounded``: each query within the
    store's ``audit_limits`` (the caller's own SQL)."""
    from events.audit import AuditReader
    from events.commands import ID_RULE, canonical_id, id_problem
    from palimpsest import config as store_config

    problems = [(f"--{flag}", f"{id_problem(value)} (got {value!r:.60}); give an id of {ID_RULE}")
                for flag in ("tenant", "user") if (value := getattr(args, flag, None)) is not None
                and id_problem(value)]
    problems += [("--kind", f"{kind!r:.60} is no event kind; e.g. message_recorded")
                 for kind in getattr(args, "kind", None) or () if not kind.isascii() or not kind.isidentifier()]
    problems += [(f"--{flag.replace('_', '-')}", f"{value}; give a non-negative integer")
                 for flag in ("from_seq", "to_seq", "limit") if (value := getattr(args, flag, None)) is not None
                 and value < 0]
    if problems:
        raise InvalidInputError(problems, what=args.command)
    files = store_config.log_files(Path(args.store))
    ciphers = cli_erasure.audit_ciphers(Path(args.store), files) if files else None
    limits = None
    if bounded and files:
        from palimpsest.settings import StoreSettings

        path = Path(args.store)
        settings = StoreSettings.from_json(store_config.StoreConfig.load(path).settings, str(path / "store.json"))
        limits = settings.audit_limits
    return AuditReader(files, tenant=canonical_id(tenant), ciphers=ciphers, limits=limits)


def _iso(value) -> str:
    return (value if isinstance(value, datetime) else datetime.fromisoformat(value)).isoformat()


def cmd_events(args: argparse.Namespace) -> int:
    from events.commands import canonical_id
    from events.log import ScanFilter

    if args.user and not args.tenant and not remote(args):
        raise InvalidInputError([("--tenant", "missing; user ids are per tenant: give --tenant with --user")],
                                what="events")
    flt = ScanFilter(canonical_id(args.tenant), canonical_id(args.user), args.from_seq, args.to_seq, args.since,
                     args.until, tuple(args.kind) if args.kind else None)
    client = remote(args)
    cut = args.limit is not None
    if client:  # the server counts nothing: one row more than asked tells whether the list was cut
        with client:
            rows = client.audit_events(flt, args.limit + 1 if cut else None)
        total = None if cut and len(rows) > args.limit else len(rows)
        rows = rows[:args.limit] if cut else rows
    else:
        reader = _audit(args)
        rows = reader.events(flt, args.limit).to_pylist()
        total = reader.count(flt) if cut and len(rows) == args.limit else len(rows)
    if args.json:
        print_json(rows)
        return 0
    width = cli_style.line_width()
    for row in rows:
        payload = json.loads(row["payload"])
        summary = payload.get("text") or payload.get("query") or payload.get("model_id") or ""
        print(cli_style.truncate(f"{row['tenant']}/{row['user_id']} #{row['seq']:<5} {row['kind']:<17} "
                                 f"v{row['schema_version']} {_iso(row['occurred_at'])} {row['event_id'][:12]} "
                                 f"{summary}", width))
    print(f"-- {len(rows)} events")
    if (line := cli_style.more(None if total is None else total - len(rows), "--limit")) is not None:
        print(line)
    return 0


def cmd_sql(args: argparse.Namespace) -> int:
    client = remote(args)
    if client:
        with client:
            columns, rows = client.audit_sql(args.query, args.tenant)
    else:
        table = _audit(args, args.tenant, bounded=True).sql(args.query)
        columns, rows = table.column_names, [list(r.values()) for r in table.to_pylist()]
    if args.json:
        print_json([dict(zip(columns, row)) for row in rows])
    else:
        print(" | ".join(columns))
        for row in rows:
            print(" | ".join(str(v) for v in row))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    client = remote(args)
    if client:
        with client:
            target = client.export_parquet(Path(args.out), args.tenant)
    else:
        reader = _audit(args, args.tenant)
        try:
            target = reader.export_parquet(Path(args.out))
        except OSError as exc:
            raise PalimpsestError(f"--out {args.out}: cannot write the export there ({exc.strerror or exc}); give a "
                                  "directory you can write (created if missing; the file is events.parquet)") from None
    print(f"wrote {target}")
    return 0


def print_stats(stats: dict, args: argparse.Namespace) -> None:
    """``stats`` (a declared operation, :mod:`palimpsest.operations`) as text: the store, its models, its shards."""
    print(f"store {stats['path']}: {stats['num_shards']} shards, encoder {stats['embedder']} ({stats['model_id']}, "
          f"{stats['dim']} numbers per vector)")
    print(f"users {stats['users']} · messages {stats['messages']} · touches {stats['touches']} · events {stats['events']}")
    for model, entry in stats.get("models", {}).items():
        if model != stats["model_id"] and entry["vectors"] < stats["messages"]:
            print(f"re-embedding to {model} unfinished: {entry['vectors']} of {stats['messages']} messages encoded "
                  "(run `palimpsest reembed` again to finish it)")
    for s in stats["shards"]:
        print(f"  shard {s['shard']}: {s['users']} users, {s['events']} events, {s['vectors_indexed']} vectors")


def cmd_reembed(args: argparse.Namespace) -> int:
    with open_store(args) as mem:
        if not hasattr(mem, "reembed"):
            raise PalimpsestError("reembed runs on the store itself, not through --server: run it where the store "
                                  "is, with the server stopped, or restart the server afterwards")
        report = mem.reembed(args.embedder, dry_run=args.dry_run, progress=not args.json)
    if args.json:
        print_json(report)
    elif args.dry_run:
        print(f"would encode {report['messages']} messages and {report['labels']} graph labels of "
              f"{report['users']} users with {report['embedder']} ({report['model_id']}); about "
              f"{report['estimate_seconds']:.0f} s")
    else:
        print(f"switched {report['switched']} users from {report['previous']} to {report['embedder']} "
              f"({report['messages']} messages and {report['labels']} labels encoded in {report['seconds']:.1f} s)")
    return 0


def cmd_policies(args: argparse.Namespace) -> int:
    """The store's retention policy and the presets ``replay --policy NAME`` takes; no actors started."""
    from projections.folds.policy import listing

    client = remote(args)
    if client:
        with client:
            found = client.policies()
    else:
        from palimpsest import config as store_config
        from palimpsest.settings import StoreSettings

        path = Path(args.store)
        settings = StoreSettings.from_json(store_config.StoreConfig.load(path).settings, str(path / "store.json"))
        found = listing(settings.retention_policy)
    if args.json:
        print_json(found)
        return 0
    live = found["live"]
    print(f"{cli_style.paint('in force:', 'heading')} {live['name']} — {live['description'] or '(no description)'}")
    print(cli_style.paint("presets (palimpsest replay --policy NAME shows what one would change):", "heading"))
    width = cli_style.line_width()
    for p in found["presets"]:
        print(cli_style.truncate(f"  {p['name']:<15} {p['description']}", width))
    for old, new in found.get("aliases", {}).items():
        print(cli_style.paint(f"  {old:<15} old name of {new}, still accepted", "dim"))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from palimpsest.demo import run_demo

    return run_demo(Path(args.store if args.store != DEFAULT_STORE else "demo-store"))


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="palimpsest", description="Event-sourced long-term memory for LLM agents.")
    p.add_argument("--store", default=DEFAULT_STORE, help="store directory (default: $PALIMPSEST_STORE or ./.store)")
    p.add_argument("--server", help="talk to a running `palimpsest serve` at this URL instead of opening the store "
                                    "(default: $PALIMPSEST_URL; key: $PALIMPSEST_API_KEY)")
    p.add_argument("--log-level", default="warning", help="structlog level (default: warning)")
    p.add_argument("--version", action="version", version=f"palimpsest {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    sp = sub.add_parser("ingest", help="add messages from a LoCoMo JSON or a JSONL file")
    sp.add_argument("file")
    sp.add_argument("--format", choices=["auto", "locomo", "jsonl"], default="auto")
    sp.add_argument("--tenant", help="tenant for records that name none (LoCoMo: default 'locomo')")
    sp.add_argument("--user", help="user for records that name none")
    sp.add_argument("--num-shards", type=int, help="shards of a new store (default: CPU count)")
    sp.add_argument("--embedder", metavar="KIND", default=None, help=EMBEDDER_HELP)
    sp.add_argument("--quiet", action="store_true", help="no progress bar")
    sp.set_defaults(func=cmd_ingest)

    sp = sub.add_parser("replay", help="rebuild every projection from the log and compare digests")
    sp.add_argument("--policy", metavar="FILE_OR_PRESET",
                    help="a retention policy file (.json/.toml) or a preset's name (see `palimpsest policies`): "
                         "report what would change under it instead")
    sp.add_argument("--at", type=parse_when, help="with --policy: the time to compare at (ISO with offset; default now)")
    read_options(sp)
    sp.add_argument("--queries", help="with --policy: a query file (one per line, or JSON lines) to compare rankings")
    sp.add_argument("--tenant", help="with --queries: tenant of plain-text queries")
    sp.add_argument("--user", help="with --queries: user of plain-text queries")
    sp.add_argument("-k", type=int, default=10, help="with --queries: top k compared (default 10)")
    sp.set_defaults(func=cmd_replay)

    cli_archive.register(sub)
    cli_notes.register(sub)
    cli_feedback.register(sub)
    cli_learning.register(sub)
    cli_graph.register(sub)
    cli_serve.register(sub)
    cli_mcp.register(sub)
    cli_erasure.register(sub)
    cli_backup.register(sub)
    cli_operations.register(sub, cmd_operation)  # the declared operations' subcommands (palimpsest.operations)

    sp = sub.add_parser("events", help="audit the log (read-only, no actors)")
    stream_args(sp, required=False)
    sp.add_argument("--kind", action="append", help="event kind, e.g. message_recorded (repeatable)")
    sp.add_argument("--from-seq", type=int)
    sp.add_argument("--to-seq", type=int)
    sp.add_argument("--since", type=parse_when, help="ISO time with offset")
    sp.add_argument("--until", type=parse_when, help="ISO time with offset")
    sp.add_argument("--limit", type=int, help="at most this many events (the rest counted)")
    read_options(sp)
    sp.set_defaults(func=cmd_events)

    sp = sub.add_parser("sql", help="read-only SQL over every shard log (view: events; one SELECT, no file access)")
    sp.add_argument("query")
    sp.add_argument("--tenant", help="only this tenant's events exist for the query")
    read_options(sp)
    sp.set_defaults(func=cmd_sql)

    sp = sub.add_parser("export", help="export the whole log to Parquet")
    sp.add_argument("--out", required=True)
    sp.add_argument("--tenant", help="export only this tenant's events")
    sp.set_defaults(func=cmd_export)

    sp = sub.add_parser("policies", help="the store's retention policy and the presets a counterfactual can use "
                                         "(`replay --policy NAME`)")
    read_options(sp)
    sp.set_defaults(func=cmd_policies)

    sp = sub.add_parser("reembed", help="move the store to another encoder: new vectors recorded as events, then a "
                                        "switch; searches keep working meanwhile; run again to finish an "
                                        "interrupted one")
    sp.add_argument("--embedder", metavar="KIND", required=True, help=REEMBED_HELP)
    sp.add_argument("--dry-run", action="store_true", help="only count what would be encoded and estimate the time")
    read_options(sp)
    sp.set_defaults(func=cmd_reembed)

    sp = sub.add_parser("demo", help="ingest the sample dialogue, query it, replay it (store: ./demo-store)")
    sp.set_defaults(func=cmd_demo)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command in ("serve", "demo") or not remote(args, connect=False):  # a client logs nothing
        from palimpsest.logs import configure

        configure(args.log_level)
    try:
        with cli_style.session(json=getattr(args, "json", False),
                               pager=hasattr(args, "no_pager") and not args.no_pager):
            return args.func(args)
    except PalimpsestError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader of a pipe stopped early (`| head`): nothing more to print, nothing wrong
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's flush at exit must not fail
        return 0
    except OSError as exc:  # a path given on the command line that cannot be read or written: said, not a traceback
        where = f" {exc.filename}" if exc.filename else ""
        print(f"error: cannot use{where}: {exc.strerror or exc}; check the path and its permissions", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
