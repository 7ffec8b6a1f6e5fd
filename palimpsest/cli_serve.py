"""``palimpsest serve`` and ``palimpsest keys ...``: run the HTTP service, manage tenant API keys.

Keys are managed against the store directory, or with ``--server URL`` and
an admin key through the running server (either way the key log is
append-only and read by every replica on every request, so a key created or
revoked while the store is served takes effect at once).
"""

from __future__ import annotations

import argparse

from palimpsest.cli_common import EMBEDDER_HELP, print_json, read_options, remote
from palimpsest.cli_style import paint
from palimpsest.server.settings import DEFAULT_PORT, INGRESS


def cmd_serve(args: argparse.Namespace) -> int:
    from palimpsest.server.proxy_upstream import Upstream
    from palimpsest.server.run import serve_forever  # imports Ray Serve: only for this command
    from palimpsest.server.settings import ServeSettings

    from dataclasses import replace

    from palimpsest.server.admission import AdmissionSettings

    given = {f: getattr(args, f) for f in ("read_slots", "write_slots", "tenant_slots", "tenant_rest", "queue",
                                           "wait_ms") if getattr(args, f) is not None}
    if args.no_server_timing:
        given["timing"] = False
    admission = replace(AdmissionSettings.from_env(), **given)  # the options over the environment's defaults
    settings = ServeSettings(store=args.store, host=args.host, port=args.port, replicas=args.replicas,
                             max_replicas=args.max_replicas,
                             rate_per_s=args.rate_limit, burst=args.burst, max_body_bytes=args.max_body_bytes,
                             ingress=args.ingress, upstream=Upstream.from_env(), admission=admission)
    return serve_forever(settings, embedder=args.embedder, num_shards=args.num_shards)


def cmd_keys_create(args: argparse.Namespace) -> int:
    client = remote(args)
    if client:  # an admin key of the running server
        with client:
            token, key = client.create_key(args.tenant, admin=args.admin, label=args.label or "")
    else:
        from pathlib import Path

        from palimpsest.config import StoreConfig
        from palimpsest.server.keys import KeyRing

        StoreConfig.load(Path(args.store))  # a key belongs to an existing store; says how to create one otherwise
        token, made = KeyRing(args.store).create(args.tenant, admin=args.admin, label=args.label or "")
        key = made.public()
    kind = "admin key" if key["admin"] else "key"
    print(f"created {kind} {key['key_id']} for tenant {key['tenant']!r}; it is shown once, store it now:")
    print(token)
    return 0


def cmd_keys_list(args: argparse.Namespace) -> int:
    client = remote(args)
    if client:
        with client:
            rows = client.keys(args.tenant)
    else:
        from palimpsest.server.keys import KeyRing

        rows = [r for r in KeyRing(args.store).listing() if not args.tenant or r["tenant"] == args.tenant]
    if args.json:
        print_json(rows)
        return 0
    for r in rows:
        state = paint(f"revoked {r['revoked_at'][:19]}", "warn") if r["revoked_at"] else "active"
        print(f"{r['key_id']}  {r['tenant']:<20} {'admin' if r['admin'] else 'tenant':<6} "
              f"created {r['created_at'][:19]}  {state}  {r['label']}")
    print(paint(f"-- {len(rows)} keys", "dim"))
    return 0


def cmd_keys_revoke(args: argparse.Namespace) -> int:
    client = remote(args)
    if client:
        with client:
            key = client.revoke_key(args.key_id, reason=args.reason or "")
    else:
        from palimpsest.server.keys import KeyRing

        key = KeyRing(args.store).revoke(args.key_id, reason=args.reason or "").public()
    print(f"revoked key {key['key_id']} of tenant {key['tenant']!r} (at {key['revoked_at']})")
    return 0


def register(sub) -> None:
    sp = sub.add_parser("serve", help="serve the store over HTTP (Ray Serve + FastAPI; tenant API keys)")
    sp.add_argument("--host", default="127.0.0.1")
    sp.add_argument("--port", type=int, default=DEFAULT_PORT)
    sp.add_argument("--replicas", type=int, default=1, help="HTTP replicas (default 1)")
    sp.add_argument("--max-replicas", type=int,
                    help="autoscale: Ray Serve adds replicas up to this many while each has more requests in flight "
                         "than its read and write slots, and removes them when idle (at least --replicas are kept; "
                         "served through Ray Serve's proxy)")
    sp.add_argument("--ingress", choices=INGRESS, default="auto",
                    help="direct: the replica answers the port itself (no proxy hop; replica i on port+i); proxy: "
                         "Ray Serve's HTTP proxy balances over the replicas; auto (default): direct for one replica "
                         "on a local Ray, else proxy")
    sp.add_argument("--rate-limit", type=float, default=100.0, help="requests/s per key, shared by every replica (0: no limit)")
    sp.add_argument("--burst", type=int, default=200, help="requests a key may send at once before the rate applies")
    sp.add_argument("--max-body-bytes", type=int, default=4 * 1024 * 1024, help="request size cap (413 above)")
    sp.add_argument("--read-slots", type=int,
                    help="reads each replica runs at once (default 4; PALIMPSEST_READ_SLOTS); more wait in a "
                         "bounded queue, fair across tenants")
    sp.add_argument("--write-slots", type=int,
                    help="writes each replica runs at once (default 1; PALIMPSEST_WRITE_SLOTS)")
    sp.add_argument("--tenant-slots", type=int,
                    help="read (and write) slots a flooding tenant (refused in the last second) holds at most beside "
                         "a tenant that is not; reads and writes together once most of its requests are refused "
                         "(default 1; 0: all but one of each class; PALIMPSEST_TENANT_SLOTS)")
    sp.add_argument("--tenant-rest", type=float,
                    help="after each request, a tenant most of whose requests are refused beside a modest one waits "
                         "this many times as long as the request held its slot before its next takes one (default 1: "
                         "it keeps at most half of a slot's time; 0: no rest; PALIMPSEST_TENANT_REST)")
    sp.add_argument("--queue", type=int,
                    help="requests of a class that may wait for a slot (default 32; PALIMPSEST_ADMISSION_QUEUE); "
                         "past it, 503 with Retry-After at once")
    sp.add_argument("--wait-ms", type=float,
                    help="longest wait for a slot before a request is refused 503 (default 100; "
                         "PALIMPSEST_ADMISSION_WAIT_MS)")
    sp.add_argument("--no-server-timing", action="store_true",
                    help="answer without the Server-Timing header (where each request's time went: it tells a "
                         "tenant how busy its shard is with other tenants' requests; PALIMPSEST_SERVER_TIMING=off)")
    sp.add_argument("--num-shards", type=int, help="shards of a new store (default: CPU count)")
    sp.add_argument("--embedder", metavar="KIND", default=None, help=EMBEDDER_HELP)
    sp.set_defaults(func=cmd_serve)

    keys = sub.add_parser("keys", help="tenant API keys of the store: create, list, revoke")
    ksub = keys.add_subparsers(dest="keys_command", required=True)
    sp = ksub.add_parser("create", help="a new key; printed once, alone on the last line")
    sp.add_argument("--tenant", required=True)
    sp.add_argument("--admin", action="store_true", help="may also audit every tenant, digest and replay")
    sp.add_argument("--label", help="a note to recognise the key by in `keys list`")
    sp.set_defaults(func=cmd_keys_create)
    sp = ksub.add_parser("list", help="every key (never its secret) with tenant, rights and state")
    sp.add_argument("--tenant")
    read_options(sp)
    sp.set_defaults(func=cmd_keys_list)
    sp = ksub.add_parser("revoke", help="end a key (an event; requests with it get 401 at once)")
    sp.add_argument("key_id")
    sp.add_argument("--reason")
    sp.set_defaults(func=cmd_keys_revoke)
