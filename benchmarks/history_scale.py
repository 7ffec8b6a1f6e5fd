"""One user's history grows for months: what an ingest and a search cost at each length of it.

    python -m benchmarks.history_scale --out bench/history_scale.json   # --sizes 500,2000,6000 (default)

A user of a memory system keeps talking to it: a year of daily chats is thousands of turns, and a person's
facts change (moves, jobs, diets, tools), so their notes pile up in chains of versions. Costs that grow with the
history rather than with what a request reads show only then. One shard's class runs in this process (no Ray), on
a real DuckDB log and LanceDB table in a temporary directory, with the hash encoder. One user is written one
message per ingest command, as a served client writes (a synthetic English and Chinese dialogue, a day per 20
turns: chit-chat, facts, and changes of those facts). At each size in ``--sizes`` the benchmark reports the
ingests of the last stretch (p50/p95 ms per message) and ``--queries`` searches and context builds of that user
(p50/p95 ms, touches not recorded), with the user's active notes and superseded turns. The figures depend on the
machine and on what else runs on it: the load average before and after is in the report.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from benchmarks.provenance import stamp

START = datetime(2025, 1, 6, 8, tzinfo=UTC)
PLACES = ["Berlin", "Lyon", "Porto", "Oslo", "Kyoto", "杭州", "成都", "上海", "深圳"]
FOODS = ["coffee", "green tea", "oat milk", "sushi", "ramen", "火锅", "豆浆", "绿茶"]
TOOLS = ["PostgreSQL", "MySQL", "Redis", "Neovim", "VS Code", "Emacs", "数据库", "新电脑"]
JOBS = ["nurse", "teacher", "engineer", "designer", "counselor"]
FACTS = [
    "I live in {place}.", "I moved to {place} last month.", "I love {food}.", "I switched from {food} to {food2}.",
    "I don't drink {food} anymore.", "We decided to use {tool} for the project.",
    "Let's drop {tool} and go with {tool2}.", "I work as a {job} now.", "My sister lives in {place}.",
    "我住在{place}。", "我上个月搬到{place}了。", "我喜欢喝{food}。", "我们决定用{tool}做这个项目。", "我从{food}换成了{food2}。",
]
CHAT = [
    "Good morning! How are you today?", "That sounds great, tell me more.", "I had a long day at work.",
    "Can you remind me what we talked about?", "Haha, that's funny.", "I'm thinking about the weekend.",
    "The weather is nice today.", "今天天气不错。", "我刚下班，有点累。", "周末打算出去走走。", "谢谢你的建议！",
    "What do you think about that?", "I watched a movie yesterday.", "Let me check my calendar.",
]
QUESTIONS = [
    "Where do I live now?", "What do I drink in the morning?", "Which database did we pick for the project?",
    "What is my job?", "Where does my sister live?", "我现在住在哪里？", "我们项目用什么数据库？", "我喜欢喝什么？",
]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.history_scale", description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=Path("bench/history_scale.json"),
                   help="the JSON report (default %(default)s); a Markdown summary goes next to it")
    p.add_argument("--sizes", default="500,2000,6000",
                   help="history lengths (messages) at which to measure, ascending (default %(default)s)")
    p.add_argument("--queries", type=int, default=100, help="searches and context builds at each size (default 100)")
    p.add_argument("--window", type=int, default=200,
                   help="the last ingests before each size that are reported (default %(default)s)")
    p.add_argument("--facts", type=float, default=0.3, help="the share of turns that state a fact (default 0.3)")
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args(argv)
    args.sizes = sorted(int(x) for x in args.sizes.split(","))
    if not args.sizes or args.sizes[0] < 1:
        p.error("--sizes takes positive message counts, e.g. 500,2000,6000")
    return args


def dialogue(n: int, facts: float, seed: int) -> list[dict]:
    """``n`` messages of one user: a day per 20 turns, ``facts`` of them stating (and changing) facts."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        if rng.random() < facts:
            text = rng.choice(FACTS).format(place=rng.choice(PLACES), food=rng.choice(FOODS), food2=rng.choice(FOODS),
                                            tool=rng.choice(TOOLS), tool2=rng.choice(TOOLS), job=rng.choice(JOBS))
        else:
            text = rng.choice(CHAT)
        at = START + timedelta(days=i // 20, minutes=3 * (i % 20))
        out.append({"tenant": "bench", "user_id": "maya", "text": text, "occurred_at": at.isoformat(),
                    "conversation_id": f"day-{i // 20}", "client_message_id": f"m{i}"})
    return out


def percentiles(values: list[float]) -> dict:
    ordered = sorted(values)
    return {"p50_ms": round(statistics.median(ordered), 2), "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 2)}


def run(args: argparse.Namespace, root: Path) -> list[dict]:
    from actors import commands as c
    from actors.core import ShardCore
    from actors.spec import ShardSpec
    from events.commands import validate_messages
    from projections.adapters.embedding import HashEmbedder

    embed = HashEmbedder()
    core = ShardCore(ShardSpec(index=0, log_path=root / "shard-000.duckdb", lance_dir=root / "vectors",
                               model_id=embed.model_id, dim=embed.dim, record_search_touches=False))
    messages, rows, written = dialogue(args.sizes[-1], args.facts, args.seed), [], 0
    vectors = {q: embed.encode([q])[0] for q in QUESTIONS}
    try:
        for size in args.sizes:
            ingest = []
            for item in messages[written:size]:
                commands = validate_messages([item])
                command = c.RecordMessages(messages=tuple(commands), model_id=embed.model_id,
                                           vectors=embed.encode([m.index_text() for m in commands]))
                started = time.perf_counter()
                core.handle([command])
                ingest.append((time.perf_counter() - started) * 1000)
            written = size
            now = datetime.fromisoformat(messages[size - 1]["occurred_at"]) + timedelta(hours=1)
            searches, contexts = [], []
            for n in range(args.queries):
                q = QUESTIONS[n % len(QUESTIONS)]
                started = time.perf_counter()
                core.query(c.Search(tenant="bench", user_id="maya", query=q, query_vector=vectors[q], k=10, now=now,
                                    touch_reason=None))
                searches.append((time.perf_counter() - started) * 1000)
                started = time.perf_counter()
                core.query(c.BuildContext(tenant="bench", user_id="maya", query=q, query_vector=vectors[q],
                                          token_budget=800, now=now))
                contexts.append((time.perf_counter() - started) * 1000)
            memory = core.state.user("bench", "maya")
            notes = memory.notes.notes.values()
            rows.append({"messages": size, "ingest": percentiles(ingest[-args.window:]),
                         "search": percentiles(searches), "context": percentiles(contexts),
                         "active_notes": sum(n.status == "active" for n in notes),
                         "closed_notes": sum(n.status != "active" for n in notes),
                         "superseded_turns": len(memory.notes.turns)})
            print(json.dumps(rows[-1]), flush=True)
    finally:
        core.close()
    return rows


def markdown(report: dict) -> str:
    lines = ["# One user's history: ingest and search cost by its length", "",
             "| messages | active / closed notes | ingest p50 / p95 ms | search p50 / p95 ms | context p50 / p95 ms |",
             "|---|---|---|---|---|"]
    for r in report["sizes"]:
        lines.append(f"| {r['messages']} | {r['active_notes']} / {r['closed_notes']} | {r['ingest']['p50_ms']} / "
                     f"{r['ingest']['p95_ms']} | {r['search']['p50_ms']} / {r['search']['p95_ms']} | "
                     f"{r['context']['p50_ms']} / {r['context']['p95_ms']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="palimpsest-history-") as tmp:
        sizes = run(args, Path(tmp))
    report = {"sizes": sizes, "config": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
              "load_average": {"before": [round(x, 2) for x in load_before],
                               "after": [round(x, 2) for x in os.getloadavg()]},
              "provenance": stamp("benchmarks.history_scale", argv)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    args.out.with_suffix(".md").write_text(markdown(report))
    print(f"wrote {args.out} and {args.out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
