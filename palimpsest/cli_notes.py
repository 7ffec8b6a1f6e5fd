"""``palimpsest notes|note-history|profile|tiers|reply``: semantic notes, their versions, the long-term profile."""

from __future__ import annotations

import argparse

from palimpsest.cli_common import open_store, parse_when, print_json, stream_args


def _print_note(n: dict, indent: str = "") -> None:
    span = f"{n['valid_from'][:10]} → {n['valid_to'][:10] if n['valid_to'] else 'now'}"
    print(f"{indent}v{n['version']} [{n['status']}] {n['category']:<10} {n['text']}")
    print(f"{indent}   {span} · id {n['note_id']} · {n['decider']}: {n['reason'][:90]}")
    for src in n["sources"]:
        print(f"{indent}   source {src['turn_id'] or src['memory_id']} ({src['occurred_at'][:10]}) "
              f"{src['speaker']}: {src['text'][:70]}")


def cmd_list(args: argparse.Namespace) -> int:
    with open_store(args) as mem:
        notes = mem.notes(args.tenant, args.user, at=args.at, include_inactive=args.all)
    if args.json:
        print_json(notes)
        return 0
    for n in notes:
        _print_note(n)
    print(f"-- {len(notes)} notes" + (" (every version)" if args.all else ""))
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    with open_store(args) as mem:
        found = mem.note_history(args.note_id, tenant=args.tenant, user_id=args.user)
    if args.json:
        print_json(found)
        return 0
    print(f"{found['tenant']}/{found['user_id']}: {len(found['chain'])} version(s), oldest first")
    for n in found["chain"]:
        _print_note(n, "  ")
    return 0


def cmd_review(args: argparse.Namespace) -> int:
    with open_store(args) as mem:
        rows = mem.review_notes(args.at, tenant=args.tenant, user_id=args.user)
    if args.json:
        print_json(rows)
        return 0
    for r in rows:
        print(f"{r['tenant']}/{r['user_id']} {r['trigger']:<10} {r['decision']:<8} importance {r['importance']:.2f} "
              f"{r['text'][:50]} — {r['reason']}")
    print(f"-- {len(rows)} reviews")
    return 0


def cmd_profile(args: argparse.Namespace) -> int:
    with open_store(args) as mem:
        profile = mem.get_user_profile(args.tenant, args.user, include_assistant_knowledge=args.assistant)
    if args.json:
        print_json(profile)
        return 0
    print(f"profile of {args.tenant}/{args.user} ({profile['distillations']} distillations)")
    for name, value in profile["traits"].items():
        print(f"  {name}: {value}")
    for title, key in (("user knowledge", "user_knowledge"), ("assistant knowledge", "assistant_knowledge")):
        if profile.get(key):
            print(f"  {title}:")
            for line in profile[key]:
                print(f"    - {line}")
    return 0


def cmd_tiers(args: argparse.Namespace) -> int:
    with open_store(args) as mem:
        view = mem.tiers(args.tenant, args.user, conversation_id=args.conversation, now=args.at)
    if args.json or not view:
        print_json(view)
        return 0
    print(f"short-term ({len(view['short_term'])} pages): " + " | ".join(p["text"][:30] for p in view["short_term"][-5:]))
    print(f"mid-term sessions ({len(view['sessions'])}), hottest first:")
    for s in view["sessions"][:10]:
        print(f"  heat {s['heat']:7.3f}  {s['pages']:>3} pages ({s['unanalysed']} unanalysed), {s['visits']} visits  "
              f"{', '.join(s['keywords'][:5])}")
    print(f"evicted sessions: {len(view['evicted_sessions'])}")
    print(f"working memory of {view['conversation_id']}: "
          + " | ".join(f"{i['text'][:25]} (×{i['rehearsals']})" for i in view.get("working_memory", [])))
    print(f"sensory buffer: {len(view.get('sensory_buffer', []))} messages")
    return 0


def cmd_reply(args: argparse.Namespace) -> int:
    with open_store(args) as mem:
        used = mem.record_reply(args.tenant, args.user, args.reply, args.memory_ids, query=args.query or "")
    if args.json:
        print_json(used)
        return 0
    print(f"the reply drew on {len(used)} of {len(args.memory_ids)} retrieved memories (reinforced):")
    for u in used:
        print(f"  {u['memory_id']}  overlap {u['score']:.2f}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("notes", help="semantic notes: list (active, at a time, or every version), review")
    nsub = p.add_subparsers(dest="notes_command", required=True)
    sp = nsub.add_parser("list", help="one user's notes, grouped by category, with their sources")
    stream_args(sp)
    sp.add_argument("--at", type=parse_when, help="the notes valid at this time (ISO with offset)")
    sp.add_argument("--all", action="store_true", help="every version, superseded and retracted included")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_list)
    sp = nsub.add_parser("review", help="promotion / retraction review of notes whose importance crossed a threshold")
    stream_args(sp, required=False)
    sp.add_argument("--at", type=parse_when, help="review time (default now)")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_review)

    sp = sub.add_parser("note-history", help="the supersession chain of a note, every version with its sources")
    sp.add_argument("note_id")
    stream_args(sp, required=False)
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_history)

    sp = sub.add_parser("profile", help="get_user_profile: traits and knowledge distilled from hot sessions")
    stream_args(sp)
    sp.add_argument("--assistant", action="store_true", help="include assistant knowledge")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_profile)

    sp = sub.add_parser("tiers", help="short-term, mid-term sessions with heat, working memory, sensory buffer")
    stream_args(sp)
    sp.add_argument("--conversation", help="conversation for working memory (default: the latest)")
    sp.add_argument("--at", type=parse_when, help="time for heat and the sensory buffer (default now)")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_tiers)

    sp = sub.add_parser("reply", help="record the agent's reply: retrieved memories it drew on are reinforced")
    stream_args(sp)
    sp.add_argument("reply")
    sp.add_argument("memory_ids", nargs="+", metavar="MEMORY_ID", help="ids of the retrieved notes/turns")
    sp.add_argument("--query", help="the question the reply answered")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_reply)
