"""The measurements of ``benchmarks.serve`` against a running served store (used by the benchmark and its test).

- :func:`load_dialogues`: each sample's turns sent through ``POST /v1/users/{user}/messages`` under its
  tenant's key; every acknowledgement is kept. A refusal (503, 429) is sent again after its ``Retry-After``, as
  the Python client does; the open loop counts refusals apart from errors.
- :func:`same_hits`: the dev questions asked through HTTP and in-process (the same shard actors, the same
  ``now``): same memory ids in the same order, recall@k of both, the latency of both one query at a time.
- :func:`open_loop`: a mixed workload (ingest, search, context, notes, MCP ``retrieve_memory``) at a fixed
  arrival rate with at most ``clients`` requests in flight; a request's latency runs from its *scheduled*
  start, so a saturated server shows as queueing delay, not as a slower arrival rate.
- :func:`exactly_once`: every acknowledged message is in the log exactly once.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import httpx
import numpy as np

MIX = {"search": 40, "context": 15, "notes": 10, "ingest": 20, "mcp": 15}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def pct(values: list[float], q: float) -> float | None:
    return round(float(np.percentile(values, q)), 2) if values else None


def summary(ms: list[float]) -> dict:
    return {"n": len(ms), "p50_ms": pct(ms, 50), "p95_ms": pct(ms, 95), "p99_ms": pct(ms, 99)}


@dataclass
class Tenancy:
    """Which tenant each sample's user belongs to, the tenants' keys, and every acknowledged message."""

    url: str
    keys: dict[str, str]  # tenant -> API key
    tenant_of: dict[str, str]  # user -> tenant
    acked: dict[tuple[str, str, str], str] = field(default_factory=dict)  # (tenant, user, client id) -> memory

    def headers(self, user: str) -> dict:
        return {"Authorization": f"Bearer {self.keys[self.tenant_of[user]]}"}

    def ack(self, user: str, messages: list[dict], answer: dict) -> None:
        for m, memory_id in zip(messages, answer["memory_ids"]):
            self.acked[(self.tenant_of[user], user, m["client_message_id"])] = memory_id


REFUSALS = (503, 429)  # the server's "come back later" (admission control, a key's rate): not errors


def post_admitted(client: httpx.Client, path: str, body: dict, headers: dict,
                  attempts: int = 30) -> tuple[httpx.Response, int, float]:
    """``POST`` as a well-behaved client does: a refusal (503, 429) is sent again after its ``Retry-After`` (at
    most ``attempts`` times); ``(the last answer, refusals met, ms of the attempt that answered)``."""
    refused = 0
    while True:
        t0 = time.perf_counter()
        r = client.post(path, json=body, headers=headers)
        ms = 1000 * (time.perf_counter() - t0)
        if r.status_code not in REFUSALS or refused + 1 >= attempts:
            return r, refused, ms
        refused += 1
        time.sleep(min(5.0, float(r.headers.get("retry-after") or 1.0)))


def load_dialogues(tenancy: Tenancy, samples, batch: int = 200) -> dict:
    """Every sample's turns through the HTTP API (a refused batch sent again after its ``Retry-After``); the
    ingest rate, the refusals met and the errors."""
    errors, refusals, sent, started = 0, 0, 0, time.perf_counter()
    with httpx.Client(base_url=tenancy.url, timeout=600) as client:
        for sample in samples:
            user = sample.sample_id
            turns = [{k: v for k, v in m.items() if k not in ("tenant", "user_id")} for m in sample.messages]
            for i in range(0, len(turns), batch):
                part = turns[i:i + batch]
                r, refused, _ = post_admitted(client, f"/v1/users/{user}/messages", {"messages": part},
                                              tenancy.headers(user))
                refusals += refused
                if r.status_code != 200:
                    errors += 1
                    continue
                tenancy.ack(user, part, r.json())
                sent += len(part)
    seconds = time.perf_counter() - started
    return {"messages": sent, "seconds": round(seconds, 2), "messages_per_s": round(sent / seconds, 1),
            "errors": errors, "refused": refusals}


def same_hits(tenancy: Tenancy, memory, questions, k: int = 10) -> dict:
    """Each question through HTTP and in-process at the same ``now``; same hits, recall, latency of both."""
    same, served_ms, local_ms, mismatches = 0, [], [], []
    recall = {"served": [], "in_process": []}
    with httpx.Client(base_url=tenancy.url, timeout=600) as client:
        for q in questions:
            tenant, now = tenancy.tenant_of[q.user_id], q.asked_at
            t0 = time.perf_counter()
            local = memory.search(tenant, q.user_id, q.question, k=k, now=now)
            local_ms.append(1000 * (time.perf_counter() - t0))
            r, _, ms = post_admitted(client, f"/v1/users/{q.user_id}/search",
                                     {"query": q.question, "k": k, "now": now.isoformat()}, tenancy.headers(q.user_id))
            served_ms.append(ms)
            hits = r.json()["hits"] if r.status_code == 200 else []
            ids = ([h.memory_id for h in local], [h["memory_id"] for h in hits])
            turns = ([h.turn_id for h in local], [h["turn_id"] for h in hits])
            if ids[0] == ids[1] and turns[0] == turns[1]:
                same += 1
            else:
                mismatches.append(f"{q.sample_id}#{q.index}")
            for name, got in zip(("in_process", "served"), turns):
                recall[name].append(len(q.evidence & set(got)) / len(q.evidence))
    return {"questions": len(questions), "same_hits": same, "mismatches": mismatches[:20],
            f"recall@{k}": {n: round(float(np.mean(v)), 4) if v else None for n, v in recall.items()},
            "served_search": summary(served_ms), "in_process_search": summary(local_ms),
            "overhead_ratio_p50": round(pct(served_ms, 50) / pct(local_ms, 50), 3) if local_ms else None,
            "overhead_ms_p50": round(pct(served_ms, 50) - pct(local_ms, 50), 2) if local_ms else None}


class Workload:
    """The requests of the mixed workload, drawn from the dev questions and turns with a seeded RNG."""

    def __init__(self, tenancy: Tenancy, questions, texts: list[str], seed: int = 7, mix: dict | None = None,
                 prefix: str = "load") -> None:
        self.tenancy, self.questions, self.texts = tenancy, questions, texts
        self.rng = random.Random(seed)
        self.kinds = [k for k, w in (mix or MIX).items() for _ in range(w)]
        self.counter, self.prefix = 0, prefix  # ingested client ids are f"{prefix}-{n}": unique per workload

    def next(self) -> tuple[str, str, str, dict | None, dict, list | None]:
        """(endpoint, method, path, JSON body, headers, messages sent) of the next request."""
        kind, q = self.rng.choice(self.kinds), self.rng.choice(self.questions)
        user, headers = q.user_id, self.tenancy.headers(q.user_id)
        base = f"/v1/users/{user}"
        if kind == "search":
            return kind, "POST", base + "/search", {"query": q.question, "k": 10}, headers, None
        if kind == "context":
            return kind, "POST", base + "/context", {"query": q.question, "token_budget": 1000}, headers, None
        if kind == "notes":
            return kind, "GET", base + "/notes", None, headers, None
        if kind == "ingest":
            self.counter += 1
            msg = {"text": self.rng.choice(self.texts), "occurred_at": q.asked_at.isoformat(),
                   "client_message_id": f"{self.prefix}-{self.counter}", "speaker": "load"}
            return kind, "POST", base + "/messages", {"messages": [msg]}, headers, [msg]
        call = {"jsonrpc": "2.0", "id": self.counter, "method": "tools/call",
                "params": {"name": "retrieve_memory", "arguments": {"user_id": user, "query": q.question,
                                                                    "max_results": 5}}}
        return kind, "POST", "/mcp", call, {**headers, **MCP_HEADERS}, None


async def _open_loop(tenancy: Tenancy, workload: Workload, clients: int, rate: float, seconds: float) -> dict:
    latencies: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, Counter] = defaultdict(Counter)
    refused: dict[str, Counter] = defaultdict(Counter)  # 503/429: the server said "later", in time
    slots = asyncio.Semaphore(clients)
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=tenancy.url, timeout=120, limits=limits) as client:
        async def one(scheduled: float, request) -> None:
            kind, method, path, body, headers, messages = request
            async with slots:
                try:
                    r = await client.request(method, path, json=body, headers=headers)
                    ok = r.status_code == 200 and not (kind == "mcp" and r.json().get("result", {}).get("isError"))
                    if ok and messages:
                        tenancy.ack(path.split("/")[3], messages, r.json())
                    if r.status_code in REFUSALS:
                        refused[kind][str(r.status_code)] += 1
                        return
                    if not ok:
                        errors[kind][str(r.status_code)] += 1
                except httpx.HTTPError as exc:
                    errors[kind][type(exc).__name__] += 1
                    return
            latencies[kind].append(1000 * (time.perf_counter() - scheduled))

        start, tasks, n = time.perf_counter(), [], int(rate * seconds)
        for i in range(n):
            scheduled = start + i / rate
            await asyncio.sleep(max(0.0, scheduled - time.perf_counter()))
            tasks.append(asyncio.create_task(one(scheduled, workload.next())))
        await asyncio.gather(*tasks)
        elapsed = time.perf_counter() - start
    done = sum(len(v) for v in latencies.values())
    return {
        "clients": clients, "target_rate_per_s": rate, "seconds": round(elapsed, 2), "requests": n,
        "achieved_rate_per_s": round(done / elapsed, 2),
        "errors": sum(sum(c.values()) for c in errors.values()),
        "refused": sum(sum(c.values()) for c in refused.values()),
        "endpoints": {kind: {**summary(latencies[kind]), "throughput_per_s": round(len(latencies[kind]) / elapsed, 2),
                             "errors": dict(errors[kind]), "refused": dict(refused[kind])} for kind in MIX},
    }


def open_loop(tenancy: Tenancy, workload: Workload, clients: int, rate: float, seconds: float) -> dict:
    return asyncio.run(_open_loop(tenancy, workload, clients, rate, seconds))


def exactly_once(tenancy: Tenancy, memory) -> dict:
    """Every acknowledged message recorded once (by tenant, user and client id), and no client id twice."""
    stored: Counter = Counter()
    for tenant in tenancy.keys:
        for env in memory.events(tenant, kinds=["message_recorded"]):
            stored[(env.tenant, env.user_id, env.event.client_message_id)] += 1
    lost = [k for k in tenancy.acked if stored[k] == 0]
    doubled = [k for k, n in stored.items() if n > 1]
    return {"acknowledged": len(tenancy.acked), "stored": sum(stored.values()), "lost": len(lost),
            "duplicated": len(doubled), "examples": [list(k) for k in (lost + doubled)[:5]]}
