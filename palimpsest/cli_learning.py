"""``palimpsest explain``: a memory's whole chain as of a time; ``palimpsest molt``: the Molt controller
— measure, propose, replay, apply or reject — with its policy history and reverts."""

from __future__ import annotations

import argparse

from palimpsest.cli_common import open_store, print_json, read_options, stream_args
from palimpsest.cli_style import more, paint


def render_explain(x: dict) -> list[str]:
    """The explanation as text, one section per block."""
    s = x["subject"]
    out = [paint(f"{x['kind']} {x['memory_id']} as of {x['at']}", "heading"), f"  {s.get('text', '')}"]
    if x["source_message_ids"] and x["kind"] != "memory":
        out.append(f"  from turns {' '.join(m[:12] for m in x['source_message_ids'])}")
    out.append("why it is where it is:")
    out += [f"  - {line}" for line in x["status"]] or ["  - (nothing recorded)"]
    if x["score"]:
        sc = x["score"]
        out.append(f"score for {sc['query']!r}:")
        out.append(f"  rank {sc['rank']} score {sc['score']:.4f} {sc['breakdown']}" if sc.get("rank")
                   else f"  {sc['note']}")
    out.append("source events:")
    out += [f"  #{e['seq']:<5} {e['kind']:<20} {e['summary']}" for e in x["source_events"]]
    if x["notes"]:
        out.append("notes (versions):")
        out += [f"  v{n['version']} {n['note_id'][:12]} {n['status']:<10} {n['text'][:60]!r} since {n['valid_from'][:10]}"
                + (f" → superseded by {n['superseded_by'][:12]}" if n["superseded_by"] else "")
                + f" · {n['decider']}: {n['reason'][:60]}" for n in x["notes"]]
    if x["graph_memories"]:
        out.append("graph memories:")
        out += [f"  {g['memory_id'][:12]} {g['subject']} —{g['topic']}→ {g['object'] or ''} [{g['status']}]"
                for g in x["graph_memories"]]
    out.append(f"touches ({len(x['touches'])}, latest last):")
    if (line := more(len(x["touches"]) - 10, "--json for every one")) is not None:
        out.append(f"  {line}")
    out += [f"  {t['at'][:16]} {t['reason']:<10} rank {t['rank']} {t['query'][:50]!r}" for t in x["touches"][-10:]]
    out.append(f"feedback ({len(x['feedback'])}):")
    out += [f"  {f['at'][:16]} {f['type']:<8} {f['confidence']:.2f} {f['user_input'][:50]!r} cues {f['cues']}"
            for f in x["feedback"]]
    for memory_id, r in x["retention"].items():
        out.append(f"retention of {memory_id[:12]} ({r['policy']}): R={r['retention']:.4f}, {r['why']}")
        out.append("  curve: " + ", ".join(f"+{p['day']}d {p['retention']:.3f}" for p in r["curve"]))
        out.append(f"  reinforced {len(r['reinforced_at'])}×"
                   + (f", last {r['reinforced_at'][-1][:16]}" if r["reinforced_at"] else "")
                   + ("; archival due since " if r["archival_due"] else "; expected archival: ")
                   + (r["expected_archival"] or "none within 10 years / exempt"))
    if x["archive"]:
        out.append("archive:")
        out += [f"  {a['at'][:16]} {a['action']} ({a['reason']})" for a in x["archive"]]
    out.append(f"adjustments ({len(x['adjustments'])}):")
    out += [f"  {a['at'][:16]} {a['layer']} {a['action']} {a['adjustment_id'][:12]} "
            f"{'applies' if a['applies'] else 'does not apply'} · {len(a['signal_ids'])} signals · {a['reason']}"
            for a in x["adjustments"]]
    return out


def print_explain(x: dict, args: argparse.Namespace) -> None:
    """The printer of the declared ``explain`` operation (:mod:`palimpsest.operations`)."""
    print("\n".join(render_explain(x)))


def _print_molt(o: dict) -> None:
    f = o["figures"]
    print(f"{o['tenant']}/{o['user_id']}: usage {f['usage_rate']} · negative {f['negative_rate']} · restores "
          f"{f['restore_rate']} · conflicts {f['conflict_rate']} · episode density {f['episode_density']} · "
          f"{o['queries']} judged queries")
    for t in o["triggers"]:
        print(f"   trigger: {t}")
    for finding in o["findings"]:
        print(f"   finding: {finding}")
    if o["proposals"]:
        print(f"   replayed {len(o['proposals'])} proposals; current policy {o['before']:.4f}; best "
              + ", ".join(f"{p['parameters']} {p['after']:.4f}" for p in sorted(
                  o["proposals"], key=lambda p: -p["after"])[:3]))
    print(f"   decision: {o['decision']}" + (f" (event {o['event_id']})" if o["event_id"] else ""))


def cmd_molt(args: argparse.Namespace) -> int:
    if args.action != "run" and not (args.tenant and args.user):
        raise SystemExit(f"molt {args.action}: give --tenant and --user (the policy is per user)")
    with open_store(args) as mem:
        if args.action == "history":
            out = mem.policy_history(args.tenant, args.user)
        elif args.action == "revert":
            if not args.change_id:
                raise SystemExit("molt revert: give the CHANGE_ID (see `palimpsest molt history`)")
            out = mem.revert_policy(args.tenant, args.user, args.change_id, reason=args.reason)
        else:
            out = mem.molt(args.tenant, args.user, dry_run=args.dry_run, force=args.force, progress=not args.json)
    if args.json:
        print_json(out)
    elif args.action == "history":
        print(f"policy in force: {out['parameters'] or 'the store settings (no change)'}")
        for r in out["history"]:
            state = " (reverted)" if r["reverted"] else ""
            print(f"{r['at'][:16]} {r['status']:<8}{state} {r['parameters']} was {r['previous']} · {r['metric']} "
                  f"{r['before']:.4f} → {r['after']:.4f} over {r['queries']} queries · {r['change_id']}")
            print(f"   {r['reason']}")
    elif args.action == "revert":
        print(f"reverted {args.change_id}" if out["reverted"] else f"{args.change_id} was already reverted")
    else:
        for o in out:
            _print_molt(o)
        if args.dry_run:
            print("-- dry run: nothing written")
    return 0


def register(sub) -> None:

    sp = sub.add_parser("molt", help="the molt controller, which tunes retrieval per user: measure effectiveness, replay proposals, "
                                     "apply or reject; `molt history`, `molt revert CHANGE_ID`")
    sp.add_argument("action", nargs="?", choices=("run", "history", "revert"), default="run")
    sp.add_argument("change_id", nargs="?", help="for revert: the policy change to undo")
    stream_args(sp, required=False)
    sp.add_argument("--dry-run", action="store_true", help="measure and replay, write nothing")
    sp.add_argument("--force", action="store_true", help="replay proposals even when no figure crossed its threshold")
    sp.add_argument("--reason", default="reverted by hand")
    read_options(sp)
    sp.set_defaults(func=cmd_molt)
