"""``palimpsest feedback judge|list``: the Feedback Judge on a user's reaction, and the recorded signals."""

from __future__ import annotations

import argparse

from palimpsest.cli_common import open_store, print_json, stream_args


def _print(s: dict) -> None:
    print(f"{s['type']:<8} {s['confidence']:.2f} targets {','.join(s['targets']) or '-'} "
          f"hints {','.join(s['action_hints']) or '-'} · {s['event_id'][:12]} · {s['judge']}")
    if s["cues"]:
        print(f"   cues: {'; '.join(s['cues'])}")
    if s["memory_ids"]:
        print(f"   context: {' '.join(m[:12] for m in s['memory_ids'])}")


def cmd_judge(args: argparse.Namespace) -> int:
    with open_store(args) as mem:
        verdict = mem.judge_feedback(args.tenant, args.user, args.input, args.reply,
                                     context_window=args.context or (), retrieved=args.memory_id or ())
    if args.json:
        print_json(verdict)
    else:
        _print(verdict)
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    with open_store(args) as mem:
        signals = mem.feedback(args.tenant, args.user, memory_id=args.memory_id)
    if args.json:
        print_json(signals)
        return 0
    for s in signals:
        _print(s)
    print(f"-- {len(signals)} signals")
    return 0


def register(sub) -> None:
    p = sub.add_parser("feedback", help="the Feedback Judge (seed 003): judge a user's reaction, list signals")
    fsub = p.add_subparsers(dest="feedback_command", required=True)
    sp = fsub.add_parser("judge", help="judge the user's turn that answers an agent reply; records the signal")
    stream_args(sp)
    sp.add_argument("--input", required=True, help="the user's turn")
    sp.add_argument("--reply", required=True, help="the agent's reply it reacts to")
    sp.add_argument("--context", action="append", help="an earlier turn (repeatable, oldest first)")
    sp.add_argument("--memory-id", action="append", help="a memory or note id the reply's context held (repeatable)")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_judge)
    sp = fsub.add_parser("list", help="the user's feedback signals, oldest first")
    stream_args(sp)
    sp.add_argument("--memory-id", help="only the signals naming this memory or note")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_list)
