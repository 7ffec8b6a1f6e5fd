"""Erasure benchmark: the cost of encryption on ingest, search and replay, and the scan that proves a forget.

    python -m benchmarks.erasure --out bench/erasure.json           # make bench-erasure
    python -m benchmarks.erasure --out /tmp/e.json --rounds 1 --embedder hash --en-samples 1 --zh-samples 1

Part 1, cost: the same dev dialogues (``--en-samples`` LoCoMo samples, ``--zh-samples`` MemDaily samples,
Chinese) go into a plaintext and an encrypted shard, through the real shard core (deciders, folds, DuckDB
log, LanceDB), in process and without Ray so the shared machine's noise is not multiplied by actor hops.
Vectors are computed once, before any clock starts: the figures are the memory system's own work, which
makes the relative cost of encryption an upper bound of what an ingest that also embeds pays. Each round
builds both stores afresh (order alternating) and times: ingest (every batch acknowledged), ``--queries``
searches, a replay (fold from event 0 and LanceDB rebuild), each as CPU time of the process (all its
threads: the headline on a shared machine) and as wall time. Medians over ``--rounds``.

Part 2, the scan (:mod:`benchmarks.erasure_scan`): on the last encrypted store, the needles of one English
and one Chinese user (their texts that no other user's text contains, a distinctive window of each vector,
raw and base64, their raw and wrapped data keys) are looked for in every file. Positive controls: the store
before the forget (snapshots and LanceDB hold them legitimately, the log must not), a decrypted export made
before the forget outside the store, and the plaintext store. Then both users are forgotten (timed), a new
export is made inside the store, and the store is scanned open and closed: 0 hits is the pass.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from actors import commands as c
from actors.core import ShardCore
from actors.spec import ShardSpec
from benchmarks.dataset import load
from benchmarks.erasure_scan import needles, scan
from events.audit import AuditReader
from events.commands import validate_messages
from events.crypto import PayloadCipher
from events.keystore import KeyStore
from projections.adapters.encoder_kinds import make_embedder, model_id
from projections.adapters.embedding import encode_whole_queries

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"
BATCH = 64


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.erasure", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--en", type=Path, default=DATA / "locomo" / "locomo10_dev.json")
    p.add_argument("--zh", type=Path, default=DATA / "memdaily" / "memdaily_dev.json")
    p.add_argument("--en-samples", type=int, default=3)
    p.add_argument("--zh-samples", type=int, default=3)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--embedder", choices=["minilm", "hash"], default="minilm")
    p.add_argument("--work-dir", type=Path, help="where the stores go (default: a temporary directory)")
    return p.parse_args(argv)


def workload(args) -> tuple[list[c.RecordMessages], list[tuple[str, str, str, object]], dict]:
    """The record commands (vectors included), the queries (tenant, user, text, vector), per user its texts."""
    en, zh = load(args.en, args.en_samples), load(args.zh, args.zh_samples)
    messages = [{**m, "tenant": "zh"} if i else m for i, d in enumerate((en, zh)) for m in d.messages]
    commands = validate_messages(messages)
    embedder = make_embedder(args.embedder)
    vectors = embedder.encode([m.index_text() for m in commands])
    by_user: dict[tuple[str, str], list[int]] = {}
    for i, m in enumerate(commands):
        by_user.setdefault((m.tenant, m.user_id), []).append(i)
    records = []
    for rows in by_user.values():
        for k in range(0, len(rows), BATCH):
            part = rows[k:k + BATCH]
            records.append(c.RecordMessages(messages=tuple(commands[i] for i in part), vectors=vectors[part],
                                            model_id=embedder.model_id))
    questions = [("locomo", q.user_id, q.question) for q in en.questions] + \
                [("zh", q.user_id, q.question) for q in zh.questions]
    questions = questions[:: max(1, len(questions) // args.queries)][: args.queries]
    qvecs = encode_whole_queries(embedder, [q for _, _, q in questions])
    texts = {s: [commands[i].text for i in rows] for s, rows in by_user.items()}
    return records, [(*q, v) for q, v in zip(questions, qvecs)], texts


def spec_of(root: Path, args, master: bytes | None) -> ShardSpec:
    return ShardSpec(index=0, log_path=root / "log" / "shard-000.duckdb", lance_dir=root / "vectors",
                     model_id=model_id(args.embedder), dim=embedder.dim, snapshot_dir=root / "snapshots",
                     key_store=root / "keys" / "shard-000.keys" if master else None, master_key=master,
                     record_search_touches=False)


def one_run(root: Path, args, master: bytes | None, records, queries) -> dict:
    """One store built and timed: wall clock (``*_s``) and this process's CPU time, every thread (``*_cpu``).
    The machine is shared: CPU time is what the code costs, wall time adds the other engineers' load."""
    core = ShardCore(spec_of(root, args, master))
    started, cpu = time.perf_counter(), time.process_time()
    for record in records:
        core.handle([record])
    ingest, ingest_cpu = time.perf_counter() - started, time.process_time() - cpu
    started, cpu = time.perf_counter(), time.process_time()
    for tenant, user, text, vec in queries:
        core.query(c.Search(tenant=tenant, user_id=user, query=text, query_vector=vec, k=10))
    search, search_cpu = time.perf_counter() - started, time.process_time() - cpu
    cpu = time.process_time()
    report = core.admin(c.Replay())
    replay_cpu = time.process_time() - cpu
    events = core.log.count()
    core.close()
    size = (root / "log" / "shard-000.duckdb").stat().st_size
    return {"ingest_s": ingest, "ingest_cpu": ingest_cpu, "search_s": search, "search_cpu": search_cpu,
            "replay_s": report.seconds, "replay_cpu": replay_cpu, "replay_equal": report.equal,
            "events": events, "log_bytes": size}


METRICS = ("ingest_cpu", "search_cpu", "replay_cpu", "ingest_s", "search_s", "replay_s", "log_bytes")


def cost(args, work: Path, records, queries) -> tuple[dict, Path, Path, bytes]:
    runs: dict[str, list[dict]] = {"plaintext": [], "encrypted": []}
    master = os.urandom(32)
    for mode in ("plaintext", "encrypted"):  # warm-up, not counted: imports, tokenizer, first LanceDB table
        one_run(work / f"warmup-{mode}", args, master if mode == "encrypted" else None, records[:4], queries[:5])
    for r in range(args.rounds):
        order = ["plaintext", "encrypted"] if r % 2 == 0 else ["encrypted", "plaintext"]
        for mode in order:
            root = work / f"round-{r}-{mode}"
            runs[mode].append(one_run(root, args, master if mode == "encrypted" else None, records, queries))
            print(f"round {r} {mode}: " + ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}"
                                                    for k, v in runs[mode][-1].items()), flush=True)
    out: dict = {"rounds": args.rounds, "runs": runs, "median": {}, "overhead_pct": {}}
    for mode, rows in runs.items():
        out["median"][mode] = {k: statistics.median(row[k] for row in rows) for k in METRICS}
    for k in METRICS:
        plain, enc = out["median"]["plaintext"][k], out["median"]["encrypted"][k]
        out["overhead_pct"][k] = round(100 * (enc - plain) / plain, 1) if plain else None
    last = args.rounds - 1
    return out, work / f"round-{last}-encrypted", work / f"round-{last}-plaintext", master


def forgotten_needles(texts: dict, victims: list[tuple[str, str]], store: Path, args, master: bytes) -> dict:
    """The victims' texts no other user's text contains, a window of each vector no other user has, their keys."""
    others = "\x00".join(t for s, ts in texts.items() if s not in victims for t in ts)
    core = ShardCore(spec_of(store, args, master))
    wanted: dict[str, bytes] = {}
    keys = core.log.cipher.keys
    # A turn another user also has (same speaker, same words) has the same vector: it is not the victim's alone.
    shared = {row.vector.tobytes() for s in core.state.users if s not in victims
              for row in core.state.users[s].vectors.rows.values()}
    for n, stream in enumerate(victims):
        own = [t for t in dict.fromkeys(texts[stream]) if len(t.encode()) >= 16 and t not in others][:300]
        vectors = [row.vector for row in core.state.users[stream].vectors.rows.values()
                   if row.vector.tobytes() not in shared][:300]
        wrapped = [r["wrapped"].encode() for r in keys._lines if (r["tenant"], r["user_id"]) == stream
                   and "wrapped" in r]
        found = needles(own, vectors, keys=wrapped)
        wanted.update({f"{label.split(':', 1)[0]}:{n}:{label.split(':', 1)[1]}": v for label, v in found.items()})
    core.close()
    return wanted


def export(store: Path, out: Path, master: bytes) -> None:
    cipher = PayloadCipher(KeyStore(store / "keys" / "shard-000.keys", master, read_only=True))
    audit = AuditReader([store / "log" / "shard-000.duckdb"], ciphers=[cipher])
    audit.export_parquet(out)
    audit.close()


def erasure_scan(args, work: Path, store: Path, plain: Path, master: bytes, texts: dict) -> dict:
    victims = [next(s for s in texts if s[0] == "locomo"), next(s for s in texts if s[0] == "zh")]
    wanted = forgotten_needles(texts, victims, store, args, master)
    export(store, work / "export-before", master)
    controls = {"store_before": scan(store, wanted).to_dict(store),
                "decrypted_export_before": scan(work / "export-before", wanted).to_dict(),
                "plaintext_store": scan(plain, wanted).to_dict(plain)}
    core = ShardCore(spec_of(store, args, master))
    started = time.perf_counter()
    outcomes = [core.handle([c.ForgetUser(tenant=t, user_id=u, now=datetime.now(UTC))])[0] for t, u in victims]
    forget_s = (time.perf_counter() - started) / len(victims)
    served = AuditReader.of_tables([core.log.rows()])
    served.export_parquet(store / "exports" / "after")
    served.close()
    while_open = scan(store, wanted)
    report = core.admin(c.Replay())
    core.close()
    after = scan(store, wanted)
    return {"victims": [list(v) for v in victims], "needles": len(wanted),
            "needles_by_kind": {k: sum(1 for n in wanted if n.startswith(k + ":")) for k in
                                ("text", "vector", "vector_b64", "key")},
            "positive_controls": controls, "forget_outcomes": outcomes, "forget_s_per_user": forget_s,
            "replay_after_forget": {"equal": report.equal, "erased_events": report.erased},
            "after_forget_open": while_open.to_dict(store), "after_forget_closed": after.to_dict(store),
            "hits_after_forget": while_open.total_hits + after.total_hits}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    records, queries, texts = workload(args)
    print(f"{sum(len(r.messages) for r in records)} messages of {len(texts)} users, {len(queries)} queries, "
          f"{args.rounds} rounds", flush=True)
    with tempfile.TemporaryDirectory(prefix="palimpsest-erasure-", dir=args.work_dir) as tmp:
        work = Path(tmp)
        result, store, plain, master = cost(args, work, records, queries)
        result["scan"] = erasure_scan(args, work, store, plain, master, texts)
    result["setup"] = {"embedder": args.embedder, "en_samples": args.en_samples, "zh_samples": args.zh_samples,
                       "messages": sum(len(r.messages) for r in records), "users": len(texts),
                       "queries": len(queries), "load_average": os.getloadavg(),
                       "at": datetime.now(UTC).isoformat(timespec="seconds")}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    s = result["scan"]
    print(json.dumps({"median": result["median"], "overhead_pct": result["overhead_pct"],
                      "positive_controls": {k: v["hits"] for k, v in s["positive_controls"].items()},
                      "hits_after_forget": s["hits_after_forget"], "scanned": s["after_forget_closed"],
                      "forget_s_per_user": round(s["forget_s_per_user"], 3)}, indent=2))
    return 0 if s["hits_after_forget"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
