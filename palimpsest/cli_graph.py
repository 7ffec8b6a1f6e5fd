"""``palimpsest tool|tools|consolidate|graph``: the memory graph from the command line (``merges`` and ``unmerge``
are declared operations: :mod:`palimpsest.operations`; their printers are here)."""

from __future__ import annotations

import argparse
from pathlib import Path

from events.errors import PalimpsestError
from palimpsest.cli_common import open_store, parse_when, print_json, read_options, remote, stream_args
from palimpsest.cli_style import paint


TOOL_NAMES = ("create_memory", "link_memories", "search_memories")  # projections.rules.tool_calls.TOOLS


def cmd_tool(args: argparse.Namespace) -> int:
    arguments = args.arguments
    if arguments.startswith("@"):
        path = Path(arguments[1:])
        if not path.is_file():
            raise PalimpsestError(f"{path}: no such file; give the call's JSON inline or as @FILE")
        arguments = path.read_text(encoding="utf-8")
    with open_store(args) as mem:
        result = mem.tool_call(args.tenant, args.user, args.name, arguments, reference=args.at)
    if args.json or args.name != "search_memories":
        print_json(result)
        return 0
    print(paint(f"depth {result['depth']}, {len(result['hits'])} memories", "heading"))
    for rank, h in enumerate(result["hits"], start=1):
        terms = " ".join(f"{k}={v:.3f}" for k, v in h["contributions"].items())
        via = f" via {' → '.join(h['via'])}" if h["via"] else ""
        print(f"{rank:>2}. {h['score']:.3f} [{h['memory_type']}] {h['summary']}  (distance {h['distance']}{via})")
        print(f"    turns {', '.join(h['turn_ids']) or '-'} · {terms}")
    return 0


def cmd_tools(args: argparse.Namespace) -> int:
    from projections.rules.tool_calls import TOOLS, write_tool_schemas

    target = write_tool_schemas(Path(args.out))
    print(f"wrote the JSON schemas of {', '.join(TOOLS)} to {target}")
    return 0


def cmd_consolidate(args: argparse.Namespace) -> int:
    with open_store(args) as mem:
        # the tasks in flight are the store's own, where it runs: a server sets its own
        workers = {"max_in_flight": args.workers} if args.workers and not remote(args, connect=False) else {}
        report = mem.consolidate(tenant=args.tenant, user_id=args.user, at=args.at, decay=args.decay,
                                 idle=args.decay, **workers)
    if args.json:
        print_json(report)
        return 0
    print(f"consolidated {report['staged']} staged memories of {report['users']} users in {report['seconds']:.2f}s: "
          f"{report['events']} events (status changes, merges, links, conclusions); "
          f"{report['superseded']} superseded by the notes, {report['archived']} archived by decay")
    return 0


CONSOLIDATE_HELP = """Each user's round: (1) mark superseded the graph memories resting on notes since superseded or
deleted (history is kept: a status change, still in the log and the export); (2) merge near-duplicate nodes, link
related memories, mark the staged batch consolidated, abstract conclusions; (3) with --decay only, archive the
memories whose decayed importance fell below the floor, measured at --at, else at each user's latest message time
(their own timeline, not the wall clock). Only users with staged memories take part, unless --decay."""


def cmd_graph(args: argparse.Namespace) -> int:
    out = Path(args.out)
    with open_store(args) as mem:
        export = mem.graph_export(args.tenant, args.user)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(export["html"], encoding="utf-8")
    graphml = Path(args.graphml) if args.graphml else out.with_suffix(".graphml")
    graphml.write_text(export["graphml"], encoding="utf-8")
    if args.json:
        print_json({"html": str(out), "graphml": str(graphml),
                    **{k: export[k] for k in ("memories", "nodes", "edges")}})
    else:
        print(f"wrote {out} and {graphml}: {export['memories']} memories, {export['nodes']} nodes, "
              f"{export['edges']} edges")
    return 0


def print_merges(merges: list[dict], args: argparse.Namespace) -> None:
    if not merges:
        print(f"no node merges in {args.tenant}/{args.user}")
    for m in merges:
        state = paint(f"undone ({m['undo_reason']})", "warn") if m["undone"] else "active"
        print(f"{m['merge_id']}  {state}: {', '.join(map(repr, m['merged_labels']))} → {m['kept_label']!r} "
              f"(similarity {m['similarity']:.3f}; {m['reason']})")


def print_unmerge(result: dict, args: argparse.Namespace) -> None:
    print(f"undid merge {result['merge_id']}: {', '.join(result['restored_nodes'])} stand apart from "
          f"{result['kept_node']} again (event {result['event_id']})")


def register(sub) -> None:
    sp = sub.add_parser("tool", help="run a memory-graph tool call: create_memory, link_memories or search_memories")
    stream_args(sp)
    sp.add_argument("name", choices=TOOL_NAMES)
    sp.add_argument("arguments", help='the call\'s JSON object, e.g. \'{"query": "why was I tired?"}\', or @FILE')
    sp.add_argument("--at", type=parse_when, help="reference time for relative times (ISO with offset; default now)")
    read_options(sp)
    sp.set_defaults(func=cmd_tool)

    sp = sub.add_parser("tools", help="export the tools' JSON schemas (OpenAI function-calling format)")
    sp.add_argument("--out", required=True)
    sp.set_defaults(func=cmd_tools)

    sp = sub.add_parser("consolidate", help="consolidate staged graph memories now (parallel Ray tasks)",
                        description=CONSOLIDATE_HELP)
    stream_args(sp, required=False)
    sp.add_argument("--workers", type=int, help="tasks in flight at once (default: the CPU count)")
    sp.add_argument("--at", type=parse_when, metavar="ISO",
                    help="ISO time with offset to measure decay at (default: each user's latest message time)")
    sp.add_argument("--decay", action="store_true",
                    help="also archive decayed memories, for every user (even with nothing staged)")
    read_options(sp)
    sp.set_defaults(func=cmd_consolidate)

    sp = sub.add_parser("graph", help="write a user's memory graph as interactive HTML and GraphML")
    stream_args(sp)
    sp.add_argument("--out", required=True, help="the HTML file (GraphML goes next to it, .graphml)")
    sp.add_argument("--graphml", help="where to write the GraphML instead")
    read_options(sp)
    sp.set_defaults(func=cmd_graph)



