"""``palimpsest feedback judge|list``: the Feedback Judge on a user's reaction, and the recorded signals;
``palimpsest adjustments list|revert``: what the Evolution Dispatcher changed from them, and undoing it."""

from __future__ import annotations

import argparse

from palimpsest.cli_style import paint


def _print(s: dict) -> None:
    print(f"{s['type']:<8} {s['confidence']:.2f} targets {','.join(s['targets']) or '-'} "
          f"hints {','.join(s['action_hints']) or '-'} · {s['event_id'][:12]} · {s['judge']}")
    if s["cues"]:
        print(f"   cues: {'; '.join(s['cues'])}")
    if s["memory_ids"]:
        print(f"   context: {' '.join(m[:12] for m in s['memory_ids'])}")


def print_verdict(verdict: dict, args: argparse.Namespace) -> None:
    """``feedback judge`` (a declared operation, :mod:`palimpsest.operations`) as text: the signal, its adjustments."""
    _print(verdict)
    for a in verdict["adjustments"]:
        print(f"   adjusted: {a['layer']} {a['action']} {' '.join(t[:12] for t in a['target_ids']) or a['skill']}"
              f" · {a['adjustment_id'][:12]} · {a['reason']}")


def print_adjustment(a: dict) -> None:
    what = (f"{a['skill']}: {a['preference'][:50]!r} w={a['weight']:.2f} v{a['version']}" if a["action"] == "prefer"
            else " ".join(t[:12] for t in a["target_ids"]))
    factor = f" ×{a['factor']}" if a["factor"] is not None else ""
    until = f" until {a['until'][:16]}" if a["until"] else ""
    state = (paint(f"REVERTED {a['reverted_at'][:16]} ({a['revert_reason']})", "warn") if a["reverted_at"]
             else "applies")
    print(f"{paint(a['at'][:16], 'date')}  {a['layer']:<7} {a['action']:<10}{factor}{until}  {what}")
    print(f"   {a['adjustment_id']} · {state} · signals {' '.join(s[:12] for s in a['signal_ids'])}")
    print(f"   why: {a['reason']}")


def print_adjustments(rows: list[dict], args: argparse.Namespace) -> None:
    """``adjustments list`` (a declared operation, :mod:`palimpsest.operations`) as text."""
    for a in rows:
        print_adjustment(a)
    print(paint(f"-- {len(rows)} adjustments", "dim"))


def print_revert(out: dict, args: argparse.Namespace) -> None:
    """``adjustments revert`` (a declared operation, :mod:`palimpsest.operations`) as text."""
    if out["reverted"]:
        print(f"reverted {args.adjustment_id} (event {out['event_id']})")
    else:
        print(f"{args.adjustment_id} was already reverted at {out['already_reverted_at']}: nothing written")


def print_signals(signals: list[dict], args: argparse.Namespace) -> None:
    """``feedback list`` (a declared operation, :mod:`palimpsest.operations`) as text."""
    for s in signals:
        _print(s)
    print(paint(f"-- {len(signals)} signals", "dim"))


def register(sub) -> None:
    sub.add_parser("feedback", help="the feedback judge: judge a user's reaction, list signals")  # its commands:
    # judge and list, declared operations (palimpsest.operations)

    sub.add_parser("adjustments", help="the learning loop's adjustments (penalties, invalidations, skills): list, "
                                       "revert")  # its commands: declared operations (palimpsest.operations)
