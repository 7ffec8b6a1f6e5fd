"""What the OpenAI-compatible memory proxy adds to a chat call: ``python -m benchmarks.proxy --out bench/proxy.json``
(``--quick``: the hash encoder, fewer calls).

1. Starts the project's scripted OpenAI-compatible chat server in a process of its own, as a real upstream is
   (it answers at once, the same short reply each time), and a served store (local Ray, Ray Serve, the store's
   encoder) whose proxy forwards to it.
2. Gives each simulated client a user of its own holding a short history (English and Chinese turns, so the
   proxy's context holds notes and turns).
3. At each number of concurrent clients and each think time, every client sends a chat request in turn to the
   upstream directly, through the proxy, and through the proxy as a user the store has never seen (a new user id
   each call: the proxy reads no memory, so no query is encoded and no shard asked; it forwards and records as
   for any user), the order of the three rotating (the official ``openai`` client, one per client and route; each
   call's question is numbered, a new text, so the proxy encodes every query as it would a new user turn),
   waiting a think time after each answer; the latency of each call is timed in the client. The think times are
   drawn from an exponential distribution with the given mean (``--pacing random``, the default: independent
   users, each pausing as long as it takes to read and type), or are all exactly the given time with the clients
   started together (``--pacing fixed``: every client calls at the same instants, a burst of all of them at once).
   Each call is a new chat (``--chat new``, the default), or a client's calls continue one chat, resending its
   history as chat clients do (``--chat continued``: a call then holds the turn before it, so it reads the memory
   without waiting for that turn to be recorded).
4. Reports per level and route p50/p95/p99, the added latency (proxied minus direct, per percentile) against the
   target of at most 15 ms added at p95, what the proxy adds without a memory to read (the new users' calls minus
   direct: its HTTP hop, the upstream hop and its own handling, the floor under the target), and the phases of
   the proxied calls' ``Server-Timing`` header: the proxy's own (the wait for the user's earlier calls to be
   recorded, settle; reading the memory, memory; the upstream, upstream) and the server's (within memory the
   query's encode and the shard's answer, its lock wait and read, and the CPU the encode and the read spent;
   admit, total: :mod:`palimpsest.phases`).

The proxy records each call after answering, and a user's next call waits until that call's messages are written (a
call of a continued chat skips the wait for the one call before it, never for two): with no think time (a client
calling back to back, faster than any person or real model), the wait is part of each call and the levels measure
how fast the store records; with a think time (default 1 s, still short of a real model's answer) they measure what
a call pays. The figures depend on the machine and on what else runs on it: the load average before and after is in
the report.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import multiprocessing
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from benchmarks.provenance import stamp

TARGET_ADDED_P95_MS = 15.0
HISTORY = [
    "I prefer window seats on long flights.", "I like coffee in the morning.", "My sister Lena lives in Oslo.",
    "We decided to use PostgreSQL for the Atlas project.", "I am allergic to peanuts.",
    "我喜欢喝绿茶。", "我住在杭州。", "我们决定改用 MySQL 作为数据库。",
]
QUESTION = "What should I drink tomorrow morning, and where does my sister live?"
REPLY = "Green tea, and Lena lives in Oslo."
ROUTES = ("direct", "proxied", "new_user")  # the upstream itself; the proxy; the proxy for a user it never saw
SERIAL = itertools.count(1)  # numbers each call's question, over the whole run (no query vector is ever cached)
NEW_USERS = itertools.count(1)  # numbers the new users, over the whole run (each is new to the store)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.proxy", description=__doc__.splitlines()[0])
    p.add_argument("--out", default="bench/proxy.json", help="where to write the JSON report (default %(default)s)")
    p.add_argument("--quick", action="store_true", help="the hash encoder and 20 calls per client and route")
    p.add_argument("--levels", default="1,16", help="concurrent clients per level (default %(default)s)")
    p.add_argument("--think-ms", default="1000,0",
                   help="a client's wait after each answer, one run of the levels per value (default %(default)s)")
    p.add_argument("--pacing", choices=("random", "fixed"), default="random",
                   help="think times drawn from an exponential distribution with mean --think-ms (random, seeded) or "
                        "all exactly --think-ms, the clients in step (fixed) (default %(default)s)")
    p.add_argument("--chat", choices=("new", "continued"), default="new",
                   help="each call a new chat (new), or each client's calls one chat, its history resent (continued: "
                        "the call holds the turn before it, and reads without waiting for it to be recorded) "
                        "(default %(default)s)")
    p.add_argument("--calls", type=int, help="calls per client and route at each level (default 100; quick 20)")
    p.add_argument("--warmup", type=int, default=5, help="untimed calls per client and route first (default 5)")
    p.add_argument("--embedder", help="the store's encoder (default: minilm, a new store's default; quick: hash)")
    args = p.parse_args(argv)
    args.levels = [int(x) for x in args.levels.split(",")]
    args.think_ms = [float(x) for x in args.think_ms.split(",")]
    args.calls = args.calls or (20 if args.quick else 100)
    args.embedder = args.embedder or ("hash" if args.quick else "minilm")
    return args


def percentiles(values: list[float]) -> dict:
    ordered = sorted(values)
    at = lambda q: round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)  # noqa: E731 - nearest rank
    return {"n": len(ordered), "p50_ms": at(0.50), "p95_ms": at(0.95), "p99_ms": at(0.99),
            "mean_ms": round(statistics.fmean(ordered), 2)}


def level(clients: int, think_ms: float, direct_url: str, proxy_url: str, key: str,
          args: argparse.Namespace) -> dict:
    """``clients`` clients, each calling the routes in turn, ``think_ms`` after each answer; the latencies of the
    routes and the proxy's phases."""
    from openai import OpenAI

    from palimpsest.server.routes_proxy import USER_HEADER

    times: dict[str, list[float]] = {route: [] for route in ROUTES}
    errors: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(clients)

    def client(n: int) -> None:
        proxy = OpenAI(base_url=proxy_url, api_key=key, max_retries=0)
        routes = {"direct": OpenAI(base_url=direct_url, api_key="upstream-key", max_retries=0),
                  "proxied": proxy.with_options(default_headers={USER_HEADER: f"user-{n}"}), "new_user": proxy}
        mine: dict[str, list[float]] = {route: [] for route in ROUTES}
        phases: dict[str, list[float]] = {}
        pause = random.Random(n).expovariate if args.pacing == "random" else None
        # each call a question of its own (every route the same): the proxy encodes every query, as a new user turn's
        messages = [_messages(n, f"{QUESTION} #{next(SERIAL)}", i, args.chat) for i in range(args.warmup + args.calls)]
        start.wait()
        for i in range(args.warmup + args.calls):
            for route in ROUTES[i % 3:] + ROUTES[:i % 3]:
                # a new user each call: the store has never seen them, so the proxy reads no memory
                fresh = {USER_HEADER: f"new-{next(NEW_USERS)}"} if route == "new_user" else None
                began = time.perf_counter()
                try:
                    raw = routes[route].chat.completions.with_raw_response.create(model="bench-model",
                                                                                  messages=messages[i],
                                                                                  extra_headers=fresh)
                    answer = raw.parse()
                    assert answer.choices[0].message.content == REPLY, answer
                except Exception as exc:  # noqa: BLE001 - counted and reported, the run goes on
                    with lock:
                        errors.append(f"{route}: {type(exc).__name__}: {str(exc)[:200]}")
                    continue
                if i >= args.warmup:
                    mine[route].append((time.perf_counter() - began) * 1000)
                    parts = raw.headers.get("server-timing", "").split(",") if route == "proxied" else ()
                    for part in parts:  # the proxy's own phases, when it reads the memory
                        name, _, duration = part.strip().partition(";dur=")
                        if duration:
                            phases.setdefault(name, []).append(float(duration))
                if think_ms:
                    time.sleep((pause(1000 / think_ms) if pause else think_ms / 1000))
        with lock:
            for route, values in mine.items():
                times[route] += values
            for name, values in phases.items():
                times.setdefault(name, []).extend(values)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    began = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - began
    direct, proxied, new_user = (percentiles(times[route]) for route in ROUTES)
    return {"clients": clients, "think_ms": think_ms, "pacing": args.pacing, "calls_per_client_and_route": args.calls,
            "direct": direct, "proxied": proxied, "proxied_new_user": new_user,
            "added_p50_ms": round(proxied["p50_ms"] - direct["p50_ms"], 2),
            "added_p95_ms": round(proxied["p95_ms"] - direct["p95_ms"], 2),
            # what the proxy adds reading no memory (a new user's call): the floor under the added latency
            "added_without_memory_p50_ms": round(new_user["p50_ms"] - direct["p50_ms"], 2),
            "added_without_memory_p95_ms": round(new_user["p95_ms"] - direct["p95_ms"], 2),
            "proxy_phases": {name: percentiles(values) for name, values in times.items()
                             if name not in ROUTES and values},
            "errors": len(errors), "error_samples": errors[:5], "wall_seconds": round(wall, 1)}


def _messages(client: int, question: str, i: int, chat: str) -> list[dict]:
    """The messages of a client's ``i``-th call: a new chat (``new``), or its one chat continued (``continued``: its
    opening turn, the reply before the question, then the question, as a chat client resends its history, cut)."""
    if chat == "new" or i == 0:
        return [{"role": "user", "content": question}]
    return [{"role": "user", "content": f"Hello, I am client {client}."}, {"role": "assistant", "content": REPLY},
            {"role": "user", "content": question}]


def _answer(body: dict):
    from tests.fakes.openai_server import Reply

    return Reply.text(REPLY)


def _serve_upstream(sent, stop) -> None:
    from tests.fakes.openai_server import FakeOpenAI

    with FakeOpenAI(responder=_answer) as upstream:
        sent.send(upstream.base_url)
        stop.wait()


@contextlib.contextmanager
def upstream_process():
    """The scripted chat server in a process of its own (the clients' threads do not share its interpreter); its
    API root."""
    context = multiprocessing.get_context("spawn")
    receive, sent = context.Pipe(duplex=False)
    stop = context.Event()
    process = context.Process(target=_serve_upstream, args=(sent, stop), daemon=True)
    process.start()
    try:
        if not receive.poll(120):
            raise RuntimeError("the scripted chat server did not start within 120 s")
        yield receive.recv()
    finally:
        stop.set()
        process.join(timeout=10)


def run(args: argparse.Namespace) -> dict:
    from actors.ray_init import ensure_ray, shutdown_ray
    from palimpsest.server.keys import KeyRing
    from palimpsest.server.proxy_upstream import Upstream
    from palimpsest.server.run import start
    from palimpsest.server.settings import ServeSettings
    from tests.serve_helpers import free_port

    store = Path(tempfile.mkdtemp(prefix="palimpsest-proxy-bench-")) / "store"
    load_before, started = os.getloadavg(), time.perf_counter()
    ensure_ray()
    with upstream_process() as upstream_url:
        settings = ServeSettings(store=str(store), port=free_port(), rate_per_s=0,
                                 upstream=Upstream(upstream_url, api_key="upstream-key"))
        running = start(settings, embedder=args.embedder)
        try:
            running.memory.consolidate_every = 0  # consolidation rounds would land inside the timed levels
            key = KeyRing(store).create("bench", label="benchmarks.proxy")[0]
            then = datetime.now(UTC) - timedelta(days=2)
            running.memory.add_messages(
                [{"tenant": "bench", "user_id": f"user-{n}", "text": text, "conversation_id": "history",
                  "occurred_at": (then + timedelta(minutes=i)).isoformat()}
                 for n in range(max(args.levels)) for i, text in enumerate(HISTORY)])
            levels = []
            for think_ms in args.think_ms:
                for clients in args.levels:
                    print(f"{clients} clients x {args.calls} calls per route, think {think_ms:g} ms ({args.pacing})",
                          file=sys.stderr)
                    levels.append(level(clients, think_ms, upstream_url, running.url + "/v1", key, args))
        finally:
            running.stop()
            shutdown_ray()
            shutil.rmtree(store.parent, ignore_errors=True)
    return {"levels": levels, "target_added_p95_ms": TARGET_ADDED_P95_MS,
            "within_target": {f"{lv['clients']} clients, think {lv['think_ms']:g} ms":
                              lv["added_p95_ms"] <= TARGET_ADDED_P95_MS for lv in levels},
            "config": {"embedder": args.embedder, "pacing": args.pacing, "chat": args.chat, "calls": args.calls,
                       "warmup": args.warmup, "quick": args.quick, "cpus": os.cpu_count(),
                       "load_average_before": [round(x, 2) for x in load_before],
                       "load_average_after": [round(x, 2) for x in os.getloadavg()],
                       "wall_seconds": round(time.perf_counter() - started, 1)}}


def print_report(r: dict) -> None:
    print(f"{'clients':>7} {'think ms':>8}  {'direct p50/p95/p99 ms':>22}  {'proxied p50/p95/p99 ms':>23}  "
          f"{'added p50':>9}  {'added p95':>9}  {'errors':>6}")
    for lv in r["levels"]:
        d, p = lv["direct"], lv["proxied"]
        print(f"{lv['clients']:>7} {lv['think_ms']:>8g}  {d['p50_ms']:>7}/{d['p95_ms']}/{d['p99_ms']:<7}  "
              f"{p['p50_ms']:>8}/{p['p95_ms']}/{p['p99_ms']:<7}  {lv['added_p50_ms']:>9}  {lv['added_p95_ms']:>9}  "
              f"{lv['errors']:>6}")
        print(f"                  a new user (no memory read), p50/p95/p99 ms: {_ms(lv['proxied_new_user'])}, added "
              f"{lv['added_without_memory_p50_ms']}/{lv['added_without_memory_p95_ms']}")
        print("                  inside the proxy, p50/p95 ms: " + ", ".join(
            f"{name} {v['p50_ms']}/{v['p95_ms']}" for name, v in lv["proxy_phases"].items()))
    c = r["config"]
    met = [name for name, ok in r["within_target"].items() if ok]
    print(f"target: at most {r['target_added_p95_ms']:g} ms added at p95 — met at: {', '.join(met) or 'none'}; "
          f"encoder {c['embedder']}; load average before {c['load_average_before']}, after "
          f"{c['load_average_after']} on {c['cpus']} cores")


def _ms(p: dict) -> str:
    return f"{p['p50_ms']}/{p['p95_ms']}/{p['p99_ms']}"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    report = run(args)
    report["provenance"] = stamp("benchmarks.proxy", argv)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2), encoding="utf-8")
    print_report(report)
    print(f"wrote {out}")
    return 0 if all(lv["errors"] == 0 for lv in report["levels"]) else 1


if __name__ == "__main__":
    sys.exit(main())
