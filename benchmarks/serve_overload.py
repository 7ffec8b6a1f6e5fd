"""``benchmarks.serve --overload``: the served store past its capacity (used by :mod:`benchmarks.serve`).

- :func:`ramp`: open-loop load raised step by step (×``factor``) until goodput (answered 2xx per second) stops
  rising; the capacity is the best goodput seen, and apart the best with search p95 within 100 ms.
- :func:`drive`: one level: requests sent at a fixed arrival rate, each timed from its *scheduled* start;
  answers sorted into accepted (2xx), refused (503 and 429, each with its own latency) and other errors; the
  accepted answers' ``Server-Timing`` phases (the wait for a slot, the query's encode, the shard, the total in
  the server) as p50 / p95 each.
- :func:`fairness`: a modest tenant's searches alone, then beside a tenant flooding at ``factor`` × its share
  of the capacity; the modest tenant's requests are sent by a process of their own, so the flood's client
  does not delay them.

The client is :mod:`benchmarks.http_client` (keep-alive connections, requests encoded before each level: at several
hundred requests per second the load generator shares the server's cores, and each request costs it about half the
CPU aiohttp's does). Every level records the 1-minute load average.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import time
from collections import Counter, defaultdict
from urllib.parse import urlsplit

import numpy as np

from benchmarks.http_client import Client
from benchmarks.serve_load import REFUSALS

ANSWER_TIMEOUT_S = 120.0  # a request not answered this long after the level's last one was sent is an error


def pct(values: list[float], q: float) -> float | None:
    return round(float(np.percentile(values, q)), 2) if values else None


def load_1m() -> float:
    return round(os.getloadavg()[0], 2)


async def _drive(url: str, requests: list, rate: float, seconds: float, connections: int, on_ack=None) -> dict:
    accepted: dict[str, list[float]] = defaultdict(list)
    refused: dict[int, list[float]] = defaultdict(list)
    phases: dict[str, list[float]] = defaultdict(list)  # the server's Server-Timing of the accepted answers
    other: Counter = Counter()
    where = urlsplit(url)
    client = Client(where.hostname, where.port, connections)
    load_before = load_1m()
    gates_before = await _gates(client)
    n = int(rate * seconds)
    # encoded before the level starts: the generator's work per request is only sending and reading
    sent = [(request, client.encode(*request[1:5])) for request in requests[:max(1, n)]]

    async def one(scheduled: float, request, raw: bytes) -> None:
        kind, method, path, body, headers, messages = request
        try:
            answer = await client.send(raw)
        except (OSError, ValueError) as exc:
            other[type(exc).__name__] += 1
            return
        ms = 1000 * (time.perf_counter() - scheduled)
        status = answer.status
        if status in REFUSALS:
            refused[status].append(ms)
        elif status != 200:
            other[f"{kind} {status}"] += 1
        else:
            # only the answers the generator reads are parsed (an MCP tool's error flag, an ingest's memory ids):
            # a search's or a notes list's JSON decoded here would be CPU taken from the server it measures
            if kind == "mcp" and json.loads(answer.body).get("result", {}).get("isError"):
                other[f"{kind} tool error"] += 1
                return
            if messages and on_ack is not None:
                on_ack(path.split("/")[3], messages, json.loads(answer.body))
            accepted[kind].append(ms)
            timing = answer.header("server-timing")
            for name, _, dur in (part.partition(";dur=") for part in timing.split(", ") if timing):
                phases[name].append(float(dur))

    try:
        start, tasks = time.perf_counter(), []
        for i in range(n):
            scheduled = start + i / rate
            delay = scheduled - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            request, raw = sent[i % len(sent)]
            tasks.append(asyncio.create_task(one(scheduled, request, raw)))
        sent_s = time.perf_counter() - start
        if tasks:
            _, late = await asyncio.wait(tasks, timeout=ANSWER_TIMEOUT_S)
            for task in late:  # no answer within the timeout after the level's last request: an error
                task.cancel()
                other["TimeoutError"] += 1
        elapsed = time.perf_counter() - start
        gates_after = await _gates(client)
    finally:
        client.close()
    ok = [ms for v in accepted.values() for ms in v]
    no = [ms for v in refused.values() for ms in v]
    return {
        "offered_req_s": round(rate, 1), "sent_req_s": round(n / sent_s, 1) if sent_s else None,
        "seconds": round(elapsed, 2), "requests": n,
        "goodput_req_s": round(len(ok) / elapsed, 1),
        "refused_req_s": {str(s): round(len(v) / elapsed, 1) for s, v in sorted(refused.items())},
        "refused_total_req_s": round(len(no) / elapsed, 1),
        "accepted_p50_ms": pct(ok, 50), "accepted_p95_ms": pct(ok, 95), "accepted_p99_ms": pct(ok, 99),
        "refusal_p50_ms": pct(no, 50), "refusal_p95_ms": pct(no, 95),
        "search_p95_ms": pct(accepted.get("search", []), 95),
        "by_endpoint": {k: {"n": len(v), "p50_ms": pct(v, 50), "p95_ms": pct(v, 95)}
                        for k, v in sorted(accepted.items())},
        # where the accepted requests' time went in the server (its Server-Timing): each phase's p50 / p95
        "server_phases": {k: {"p50_ms": pct(v, 50), "p95_ms": pct(v, 95)} for k, v in phases.items()},
        "other_errors": sum(other.values()), "other_error_kinds": dict(other),
        "refused_by_gate": _refusals_between(gates_before, gates_after),
        "shared_slots": {k: g["shared"] - gates_before.get(k, {}).get("shared", 0) for k, g in gates_after.items()
                         if g.get("shared", 0) > gates_before.get(k, {}).get("shared", 0)},
        "load_1m_before": load_before, "load_1m_after": load_1m(),
    }


async def _gates(client: Client) -> dict:
    """The replica's admission gates as ``/health`` shows them (one replica: direct ingress)."""
    answer = await client.request("GET", "/health")
    return json.loads(answer.body).get("admission", {}) if answer.status == 200 else {}


def _refusals_between(before: dict, after: dict) -> dict:
    """Refusals per class and reason during a level (queue full, tenant's share full, predicted wait, deadline),
    and of them, those of a tenant the gates paced (``of_paced_tenants``, palimpsest.server.admission_pace)."""
    out = {}
    for klass, gate in after.items():
        was = before.get(klass, {}).get("refused_by", {})
        counts = {reason: n - was.get(reason, 0) for reason, n in gate.get("refused_by", {}).items()}
        counts["of_paced_tenants"] = gate.get("refused_paced", 0) - before.get(klass, {}).get("refused_paced", 0)
        if any(counts.values()):
            out[klass] = {reason: n for reason, n in counts.items() if n}
    return out


def drive(url: str, requests: list, rate: float, seconds: float, connections: int, on_ack=None) -> dict:
    """One level: ``requests`` (cycled) at ``rate`` per second for ``seconds``; the level's figures."""
    return asyncio.run(_drive(url, requests, rate, seconds, connections, on_ack))


def draw(workload, n: int) -> list:
    return [workload.next() for _ in range(n)]


def ramp(url: str, workload, on_ack, *, start: float, factor: float, seconds: float, max_rate: float,
         connections: int, log=print) -> dict:
    """Raise the offered load until goodput stops rising (two steps without 3 % more); the steps and capacity."""
    steps, rate, flat = [], start, 0
    while rate <= max_rate:
        level = drive(url, draw(workload, int(rate * seconds)), rate, seconds, connections, on_ack)
        steps.append(level)
        log(f"  ramp {rate:7.1f} req/s offered: goodput {level['goodput_req_s']}, refused "
            f"{level['refused_total_req_s']}/s, accepted p95 {level['accepted_p95_ms']} ms, search p95 "
            f"{level['search_p95_ms']} ms, load {level['load_1m_after']}")
        best_before = max((s["goodput_req_s"] for s in steps[:-1]), default=0.0)
        flat = flat + 1 if level["goodput_req_s"] < 1.03 * best_before else 0
        if flat >= 2:
            break
        rate *= factor
    within = [s["goodput_req_s"] for s in steps if s["other_errors"] == 0 and s["search_p95_ms"] is not None
              and s["search_p95_ms"] <= 100.0 and s["refused_total_req_s"] == 0]
    return {"steps": steps, "capacity_req_s": max(s["goodput_req_s"] for s in steps),
            "capacity_search_p95_le_100ms_req_s": max(within, default=None)}


def _modest_process(url: str, requests: list, rate: float, seconds: float, ready, out) -> None:
    ready.set()
    time.sleep(1.0)  # the flood (if any) is under way
    out.put(drive(url, requests, rate, seconds, connections=32))


def fairness(url: str, modest_requests: list, flood_requests: list, *, modest_rate: float, flood_rate: float,
             seconds: float, connections: int, on_ack) -> dict:
    """The modest tenant alone, then beside the flood; its p95 both times and the ratio."""
    ctx = multiprocessing.get_context("spawn")

    def modest_alone_or_with(flood: bool) -> dict:
        out, ready = ctx.Queue(), ctx.Event()
        child = ctx.Process(target=_modest_process, args=(url, modest_requests, modest_rate, seconds, ready, out))
        child.start()
        ready.wait(60)
        flooded = drive(url, flood_requests, flood_rate, seconds + 2, connections, on_ack) if flood else None
        modest = out.get(timeout=seconds + 180)
        child.join()
        return {"modest": modest, "flood": flooded}

    alone = modest_alone_or_with(False)["modest"]
    both = modest_alone_or_with(True)
    unloaded, loaded = alone["accepted_p95_ms"], both["modest"]["accepted_p95_ms"]
    return {"modest_rate_req_s": modest_rate, "flood_rate_req_s": flood_rate,
            "modest_unloaded": alone, "modest_beside_flood": both["modest"], "flood": both["flood"],
            "modest_p95_unloaded_ms": unloaded, "modest_p95_beside_flood_ms": loaded,
            "modest_p95_ratio": round(loaded / unloaded, 2) if unloaded and loaded else None}
