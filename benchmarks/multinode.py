"""Ingest throughput on a Ray cluster of 1, 2 and 3 nodes on this machine: ``python -m benchmarks.multinode``.

Each run starts a fresh ``ray.cluster_utils.Cluster`` whose nodes have one CPU each (Ray's logical CPU;
with ``--pin`` the node's raylet and every worker it starts are also pinned to one core of this machine,
node i to core i mod cores, so a node really has one core), opens a new store of ``--shards`` shards
(hash embedder; the shard actors are spread over the nodes), and ingests the same messages from
``--writers`` client threads in the driver. Reports messages/s per node count and where the shards ran.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tqdm import tqdm

from benchmarks.provenance import stamp
from benchmarks.ray_local import start_cluster

START = datetime(2024, 1, 1, tzinfo=UTC)


def messages(writer: int, count: int) -> list[dict]:
    return [{"text": (f"writer {writer} note {i}: walked {i} steps to the harbour" if i % 2 else
                      f"第{i}条：今天走了{i}步，去了图书馆"),
             "occurred_at": (START + timedelta(minutes=i)).isoformat(), "client_message_id": f"w{writer}-{i}"}
            for i in range(count)]


def ingest(mem, writers: int, per_writer: int, batch: int, progress: bool) -> float:
    """Messages/s of ``writers`` threads, each ingesting its own user's messages in ``batch``-sized calls."""
    bar = tqdm(total=writers * per_writer, unit="msg", desc="ingest", disable=not progress)
    errors: list[BaseException] = []

    def run(w: int) -> None:
        items = messages(w, per_writer)
        for start in range(0, len(items), batch):
            try:
                mem.add_messages(items[start:start + batch], tenant=f"t{w % 2}", user_id=f"user-{w}",
                                 extract_graph=False)
            except BaseException as exc:  # noqa: BLE001 - raised below
                errors.append(exc)
                return
            bar.update(len(items[start:start + batch]))

    threads = [threading.Thread(target=run, args=(w,)) for w in range(writers)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - started
    bar.close()
    if errors:
        raise errors[0]
    return writers * per_writer / seconds


def run(nodes: int, args) -> dict:
    import ray

    from palimpsest import Memory

    cluster = start_cluster(nodes, pin=args.pin)
    store = Path(tempfile.mkdtemp(prefix="palimpsest-multinode-"))
    try:
        with Memory.open(store / "s", num_shards=args.shards, embedder="hash") as mem:
            where = ray.get([s.where.remote() for s in mem.cluster.shards])
            mem.add_messages(messages(99, 20), tenant="warm", user_id="up", extract_graph=False)  # first calls
            rate = ingest(mem, args.writers, args.messages // args.writers, args.batch, progress=True)
            stored = mem.stats()["messages"]
        node_ids = [n.node_id for n in [cluster.head_node, *cluster.worker_nodes]]
        return {"nodes": nodes, "messages_per_s": round(rate, 1), "messages_stored": stored,
                "shards_per_node": [sum(w["node_id"] == n for w in where) for n in node_ids]}
    finally:
        ray.shutdown()
        cluster.shutdown()
        shutil.rmtree(store, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="ingest throughput on 1, 2 and 3 local Ray nodes of one CPU each")
    p.add_argument("--nodes", default="1,2,3")
    p.add_argument("--shards", type=int, default=3)
    p.add_argument("--writers", type=int, default=6)
    p.add_argument("--messages", type=int, default=6000, help="messages per run, over all writers")
    p.add_argument("--batch", type=int, default=50, help="messages per add_messages call")
    p.add_argument("--pin", action=argparse.BooleanOptionalAction, default=True,
                   help="pin each node's processes to one core (default: on)")
    p.add_argument("--out", default="bench/multinode.json")
    args = p.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    rows = [run(int(n), args) for n in args.nodes.split(",")]
    base = rows[0]["messages_per_s"]
    for row in rows:
        row["speedup"] = round(row["messages_per_s"] / base, 2) if base else None
    load = os.getloadavg()
    report = {"cores": os.cpu_count(), "load_average_at_end": [round(x, 1) for x in load],
              "shards": args.shards, "writers": args.writers, "messages": args.messages, "batch": args.batch,
              "pinned": args.pin, "runs": rows, "provenance": stamp("benchmarks.multinode", argv)}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print("| nodes | msg/s | speed-up | shards per node |\n|---|---|---|---|")
    for row in rows:
        print(f"| {row['nodes']} | {row['messages_per_s']} | {row['speedup']} | {row['shards_per_node']} |")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
