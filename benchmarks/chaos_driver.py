"""One driver of the chaos run: a client process the killer may ``kill -9`` at any moment.

``python -m benchmarks.chaos_driver --work DIR --store DIR --address ADDR`` opens the store through the
public API (joining the harness's Ray cluster), checks it against what earlier drivers were told
(:func:`verify`), writes ``DIR/driver-<pid>.json`` (its pid, the shard and directory actors' pids, each
writer's shard, the check), then runs the writers until ``DIR/stop`` appears.

Each writer owns one (tenant, user) and a pair of append-only files, both fsynced per line:
``intent-<w>.jsonl`` (a batch's client ids, written *before* it is sent) and ``ack-<w>.jsonl`` (the
memory ids the store answered, written *after* ``add_messages`` returned and before the next batch). A
writer that starts after a crash sends its last unacknowledged batch again with the same client ids,
as a real client would; an error is retried the same way. So the files are the history the store is
judged against: every acknowledged id stored exactly once, and every batch stored whole or not at all.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

WRITERS = (("acme", "alice"), ("acme", "bob"), ("globex", "alice"), ("globex", "李雷"))
START = datetime(2024, 1, 1, tzinfo=UTC)


def append_synced(path: Path, row: dict) -> None:
    """One JSON line, on disk before this returns."""
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def read_rows(path: Path) -> list[dict]:
    """The complete lines of a history file (a torn last line was never fsynced whole: not a record)."""
    if not path.exists():
        return []
    rows = []
    for line in path.read_bytes().split(b"\n"):
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return rows


def batch_messages(w: int, b: int) -> list[dict]:
    """Batch ``b`` of writer ``w``: 1-6 English and Chinese messages, the same every time it is sent."""
    rng = random.Random(w * 1_000_003 + b)
    out = []
    for i in range(rng.randint(1, 6)):
        n = b * 10 + i
        text = (f"writer {w} batch {b} note {i}: walked {n} steps to the harbour" if i % 2 == 0
                else f"第{b}批第{i}条：今天走了{n}步，去了图书馆")
        out.append({"text": text, "occurred_at": (START + timedelta(minutes=n)).isoformat(),
                    "client_message_id": f"w{w}-b{b}-m{i}", "speaker": "Maya" if i % 3 else "李雷"})
    return out


def verify(mem, work: Path) -> dict:
    """What the histories say against what the store holds: lost, duplicated, half batches, digests."""
    out = {"acknowledged": 0, "lost": [], "duplicated": [], "half_batches": [], "wrong_memory_id": []}
    # The histories are read before the log: what was acknowledged by then was committed by then, so the check
    # is exact while the writers go on (a batch committed later is absent whole, which is allowed).
    acks = [read_rows(work / f"ack-{w}.jsonl") for w in range(len(WRITERS))]
    intents = [read_rows(work / f"intent-{w}.jsonl") for w in range(len(WRITERS))]
    for w, (tenant, user) in enumerate(WRITERS):
        stored = mem.events(tenant, user, kinds=["message_recorded"])
        count = Counter(e.event.client_message_id for e in stored)
        event_of = {e.event.client_message_id: e.event_id for e in stored}
        out["duplicated"] += [cid for cid, n in count.items() if n > 1]
        for row in acks[w]:
            out["acknowledged"] += len(row["ids"])
            out["lost"] += [cid for cid in row["ids"] if count[cid] == 0]
            out["wrong_memory_id"] += [cid for cid, mid in zip(row["ids"], row["mids"])
                                       if count[cid] and event_of[cid] != mid]
        for row in intents[w]:
            present = sum(1 for cid in row["ids"] if count[cid])
            if 0 < present < len(row["ids"]):
                out["half_batches"].append(f"w{w}-b{row['b']}")
    started = time.perf_counter()
    reports = mem.replay()
    out["replay_seconds"] = round(time.perf_counter() - started, 3)
    out["replay_equal"] = all(r.equal for r in reports)
    out["replay_unequal"] = [r.shard for r in reports if not r.equal]
    out["events"] = sum(r.events for r in reports)
    shards = mem.stats()["shards"]
    # LanceDB holds exactly the folded vectors: one row per message (replay compared their digests too).
    out["lancedb_rows_equal"] = all(s["vectors_indexed"] == s["messages"] for s in shards)
    out["ok"] = (not out["lost"] and not out["duplicated"] and not out["half_batches"]
                 and not out["wrong_memory_id"] and out["replay_equal"] and out["lancedb_rows_equal"])
    return out


def write_json(path: Path, obj: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(obj, ensure_ascii=False))
    os.replace(tmp, path)


def write_status(work: Path, status: dict) -> None:
    write_json(work / f"driver-{os.getpid()}.json", status)


class Writer(threading.Thread):
    def __init__(self, mem, work: Path, w: int, stop: threading.Event, pause: float) -> None:
        super().__init__(daemon=True, name=f"writer-{w}")
        self.mem, self.work, self.w, self.stop, self.pause = mem, work, w, stop, pause
        self.errors: list[str] = []

    def run(self) -> None:
        tenant, user = WRITERS[self.w]
        for name in (f"intent-{self.w}.jsonl", f"ack-{self.w}.jsonl"):  # a torn last line: end it
            path = self.work / name
            if path.exists() and path.stat().st_size and not path.read_bytes().endswith(b"\n"):
                with path.open("ab") as fh:
                    fh.write(b"\n")
        intents = read_rows(self.work / f"intent-{self.w}.jsonl")
        acked = {row["b"] for row in read_rows(self.work / f"ack-{self.w}.jsonl")}
        b = intents[-1]["b"] if intents else 0
        if not intents or b in acked:
            b += 1  # the last batch was acknowledged: start a new one
        resend = bool(intents) and b == intents[-1]["b"]
        while not self.stop.is_set():
            messages = batch_messages(self.w, b)
            ids = [m["client_message_id"] for m in messages]
            if not resend:
                append_synced(self.work / f"intent-{self.w}.jsonl", {"b": b, "ids": ids, "t": time.time()})
            sent = time.time()
            try:
                report = self.mem.add_messages(messages, tenant=tenant, user_id=user, extract_graph=False)
            except Exception as exc:  # noqa: BLE001 - recorded; the same batch is sent again (idempotent ids)
                self.errors.append(f"{type(exc).__name__}: {str(exc)[:200]}")
                resend = True
                time.sleep(0.2)
                continue
            append_synced(self.work / f"ack-{self.w}.jsonl",
                          {"b": b, "ids": ids, "mids": report.memory_ids, "t_sent": sent, "t_ack": time.time(),
                           "pid": os.getpid()})
            b, resend = b + 1, False
            self.stop.wait(self.pause)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--work", required=True, help="the run's directory (histories, driver files, stop file)")
    p.add_argument("--store", required=True)
    p.add_argument("--address", required=True, help="the Ray cluster to join")
    p.add_argument("--num-shards", type=int, default=2)
    p.add_argument("--pause", type=float, default=0.1, help="seconds a writer waits between its batches")
    p.add_argument("--verify-only", action="store_true", help="check the store and exit")
    args = p.parse_args(argv)
    work = Path(args.work)
    import ray

    from palimpsest import Memory

    from actors.ray_init import ensure_ray

    started = time.time()
    ensure_ray(args.address)
    connected = time.time()
    mem = Memory.open(args.store, num_shards=args.num_shards, embedder="hash", address=args.address)
    opened = time.time()
    check = verify(mem, work)
    status = {"pid": os.getpid(), "started": started, "connected": connected, "opened": opened, "verified": time.time(), "verify": check,
              "shards": ray.get([s.where.remote() for s in mem.cluster.shards]),
              "directory": ray.get(mem.cluster.directory.pid.remote()),
              "routes": mem.cluster.lookup(list(WRITERS))}
    write_status(work, status)
    if args.verify_only:
        mem.close()
        return 0 if check["ok"] else 1
    stop = threading.Event()
    writers = [Writer(mem, work, w, stop, args.pause) for w in range(len(WRITERS))]
    for writer in writers:
        writer.start()
    searches = search_errors = 0
    while not (work / "stop").exists():
        try:  # the actors' pids change as they restart: the killer reads them here
            status["shards"] = ray.get([s.where.remote() for s in mem.cluster.shards], timeout=5)
            status["directory"] = ray.get(mem.cluster.directory.pid.remote(), timeout=5)
            write_status(work, status)
        except Exception:  # noqa: BLE001 - an actor restarting: the next round reads it
            pass
        tenant, user = WRITERS[searches % len(WRITERS)]
        for request in sorted(work.glob("check-*.req")):  # the harness asks for a check after a fault
            write_json(request.with_suffix(".json"), verify(mem, work))
            request.unlink()
        try:  # reads during the faults: answered (Ray retries them), their touches group-committed
            mem.search(tenant, user, "how many steps to the harbour?", k=3)
        except Exception:  # noqa: BLE001 - counted in the driver's final file
            search_errors += 1
        searches += 1
        time.sleep(0.25)
        time.sleep(0.25)
    stop.set()
    for writer in writers:
        writer.join(120)
    mem.close()
    done = {"searches": searches, "search_errors": search_errors,
            "writer_errors": [e for writer in writers for e in writer.errors]}
    (work / f"driver-{os.getpid()}.done.json").write_text(json.dumps(done, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
