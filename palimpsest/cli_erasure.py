"""``palimpsest forget``: erase one user (crypto-shredding); ``palimpsest encrypt``: copy a plaintext store into
an encrypted one; the key stores the offline audit opens."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from events.errors import InvalidInputError
from palimpsest.cli_common import print_json, read_options, remote, stream_args


def audit_ciphers(store: Path, log_files: list[Path]):
    """For ``events``/``sql``/``export`` on a stopped store: one read-only cipher per shard log (in the order of
    ``log_files``) when the store is encrypted, so the audit shows payloads opened; None for a plaintext store."""
    from events.crypto import PayloadCipher
    from events.keystore import KeyStore
    from palimpsest import config as store_config

    cfg = store_config.StoreConfig.load(store)
    if not cfg.encrypted:
        return None
    master = store_config.master_key(store, cfg)
    out = []
    for path in log_files:
        keys = store_config.key_store(store, int(path.stem.split("-")[1]))
        out.append(PayloadCipher(KeyStore(keys, master, read_only=True)))
    return out


def _confirmed(tenant: str, user: str) -> bool:
    if not sys.stdin.isatty():
        raise InvalidInputError([("--yes", "missing; forgetting a user cannot be undone: pass --yes to confirm "
                                           "(no terminal to ask on)")], what="forget")
    answer = input(f"Forget every memory of user {user!r} of tenant {tenant!r}? Their events become unreadable "
                   "for good. Type the user id to confirm: ")
    return answer.strip() == user


def cmd_forget(args: argparse.Namespace) -> int:
    if not args.yes and not _confirmed(args.tenant, args.user):
        print("not confirmed; nothing was done", file=sys.stderr)
        return 1
    client = remote(args)
    if client:
        with client:
            outcome = client.forget(args.tenant, args.user)
    else:
        from palimpsest import config as store_config
        from palimpsest.memory import Memory

        cfg = store_config.StoreConfig.load(Path(args.store))  # a plaintext store refuses before Ray starts
        if not cfg.encrypted:
            from actors.decide_erasure import NOT_ENCRYPTED

            raise InvalidInputError([("store", NOT_ENCRYPTED)], what="forget")
        with Memory.open(args.store, create=False) as mem:
            outcome = mem.forget(args.tenant, args.user)
    if args.json:
        print_json(outcome)
    elif outcome["forgotten"]:
        print(f"forgot {args.tenant}/{args.user}: events 1..{outcome['through_seq']} erased (data key generation "
              f"{outcome['key_generation']} destroyed; projections, vectors and snapshot removed)")
    else:
        print(f"nothing to forget for {args.tenant}/{args.user}: {outcome['reason']}")
    return 0


def cmd_encrypt(args: argparse.Namespace) -> int:
    from palimpsest.migrate import encrypt_store

    report = encrypt_store(Path(args.store), Path(args.out))
    print(f"copied {report['events']} events and {report['commands']} command records of {report['shards']} shard(s) "
          f"into the encrypted store {args.out}; projections, vectors and snapshots are rebuilt when it is first "
          f"opened. {args.store} still holds them in clear: delete it (and its backups) once {args.out} is checked")
    return 0


def register(sub) -> None:
    sp = sub.add_parser("forget", help="erase one user for good: its data key destroyed, its projections, vectors "
                                       "and snapshot removed (an encrypted store)")
    stream_args(sp)
    sp.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    read_options(sp)
    sp.set_defaults(func=cmd_forget)

    sp = sub.add_parser("encrypt", help="copy a plaintext store (created before encryption) into a new encrypted "
                                        "store, which can forget users")
    sp.add_argument("--out", required=True, help="the new store's directory (must not exist or be empty)")
    sp.set_defaults(func=cmd_encrypt)
