"""Ingest cost of the shards and of the driver's graph rules, in process (no Ray), with real vectors cached.

    python -m benchmarks.ingest_speed --data ../shared/data/locomo/locomo10_dev.json [--repeat 3] [--profile 30]

What ``Memory.add_messages`` costs besides the encoder, measured without Ray so a busy shared machine does
not skew it (CPU seconds of this process, ``time.process_time``, so the threads DuckDB and LanceDB start
count too):

- ``graph_of``: the driver's graph rules (:meth:`palimpsest.memory_graph.GraphApiMixin._graph_memories`)
  over the file's messages in ``--batch-size`` chunks, as :func:`palimpsest.ingest.send_batches` calls them
  (the memories are staged without label vectors);
- ``label_encode_cpu_s``: what :meth:`palimpsest.memory_graph.GraphApiMixin.embed_labels` pays later, before
  the first consolidation or graph read: every distinct label encoded in one pass (``encode_labels``),
  measured once, when its cache is built; not part of the ingest;
- ``shard``: a fresh encrypted store of ``--num-shards`` shards (:class:`actors.core.ShardCore` each, the
  store's own spec), fed the same ``RecordMessages`` commands ``send_batches`` sends (one per shard per
  chunk, users routed as the directory routes them); ``shard_cpu_per_message_ms`` is the CPU of every
  ``handle`` (and a final touch flush) over the messages. Each run is a fresh process and the graph rules
  run in another one, so caches start cold as in new actors; the shards share this process, though, so a
  one-off load (jieba's dictionary) is paid once here where Ray's shard processes pay it once each.

The message vectors and label vectors are the real encoder's (all-MiniLM-L6-v2), computed once and kept
under ``--cache`` (``.npy``/``.npz`` named by a hash of the texts), so repeated runs never re-encode.
Each run checks that replaying every shard's log gives the live digests. ``--seed`` makes event ids
deterministic, and ``events_sha`` then fingerprints the events written (stream, kind, ids, payload but the
follow-ups' ``at``, which is the clock's, and heat to 2 decimals; as a sorted set of lines),
so two versions of the code can be shown to write the same events.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import io
import json
import os
import pstats
import pickle
import random
import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np

from actors import commands as c
from actors.core import ShardCore
from actors.routing import RoutingTable
from actors.spec import ShardSpec
from benchmarks import dataset as ds
from events.commands import RecordMessage, validate_messages
from events.log import ScanFilter
from palimpsest import config as store_config
from palimpsest.locomo import TENANT
from palimpsest.memory_graph import GraphApiMixin
from projections.decisions.graph_staging import candidates_for, labels_of
from projections.rules.extraction import forget_text_caches

CACHE = Path("/tmp/s6/ing")
# A follow-up (eviction, distillation) is dated by its stream's latest event, whose time is the append's clock.
WALL_CLOCK = re.compile(r'"at":"[^"]*"')
HEAT = re.compile(r'"heat":([0-9.e-]+)')  # decays with that clock too (by a few millionths over a run)


def _key(texts: list[str]) -> str:
    return hashlib.sha1("\x1f".join(texts).encode()).hexdigest()[:16]


def _embedder():
    from projections.adapters.encoder_kinds import make_embedder

    return make_embedder("minilm")


def message_vectors(commands: list[RecordMessage], cache: Path) -> np.ndarray:
    texts = [m.index_text() for m in commands]
    file = cache / f"messages-{_key(texts)}.npy"
    if not file.exists():
        embedder = _embedder()
        vectors = np.concatenate([embedder.encode(texts[i:i + 256]) for i in range(0, len(texts), 256)])
        cache.mkdir(parents=True, exist_ok=True)
        np.save(file, vectors)
    return np.load(file)


def label_pass(commands: list[RecordMessage], cache: Path, batch_size: int) -> tuple[list[str], float]:
    """Every distinct graph label, and the CPU of encoding them in one pass, as ``embed_labels`` does."""
    from projections.adapters.embedding import encode_labels

    chunks = [commands[i:i + batch_size] for i in range(0, len(commands), batch_size)]
    labels = list(dict.fromkeys(label for chunk in chunks for label in labels_of(candidates_for(chunk))))
    file = cache / f"labels-pass-{_key(labels)}.json"
    if file.exists():
        return labels, json.loads(file.read_text())["cpu_s"]
    embedder = _embedder()
    cpu = time.process_time()
    encode_labels(embedder, labels)
    cpu = time.process_time() - cpu
    cache.mkdir(parents=True, exist_ok=True)
    file.write_text(json.dumps({"labels": len(labels), "cpu_s": cpu}))
    return labels, cpu


class Driver(GraphApiMixin):
    """The part of :class:`palimpsest.Memory` that reads graph memories from a chunk (it embeds nothing)."""

    def __init__(self) -> None:
        self._labels_clean: set[tuple[str, str]] = set()
        self.embedder = None


def graph_chunks(commands: list[RecordMessage], batch_size: int) -> tuple[list, float]:
    driver = Driver()
    out = []
    cpu = time.process_time()
    for start in range(0, len(commands), batch_size):
        out.append(driver._graph_memories(commands[start:start + batch_size]))
    return out, time.process_time() - cpu


def open_store(path: Path, num_shards: int) -> tuple[list[ShardCore], RoutingTable]:
    cfg = store_config.StoreConfig.create(path, num_shards, "minilm", encrypted=True)
    key = store_config.master_key(path, cfg)
    snapshots = store_config.snapshot_dir(path).resolve()
    specs = [ShardSpec(index=i, log_path=store_config.log_path(path, i).resolve(),
                       lance_dir=store_config.lance_dir(path).resolve(), model_id=cfg.model_id, dim=cfg.dim,
                       snapshot_dir=snapshots, key_store=store_config.key_store(path, i).resolve(), master_key=key)
             for i in range(num_shards)]
    return [ShardCore(spec) for spec in specs], RoutingTable(store_config.routing_table(path), num_shards)


def feed(cores: list[ShardCore], routes: RoutingTable, commands: list[RecordMessage], vectors: np.ndarray,
         graphs: list, batch_size: int, model_id: str) -> tuple[float, list[float]]:
    """``send_batches``' commands, handled in order; CPU seconds in all ``handle`` calls and per shard."""
    shard_of = routes.route([(m.tenant, m.user_id) for m in commands])
    per_shard = [0.0] * len(cores)
    for n, start in enumerate(range(0, len(commands), batch_size)):
        chunk = list(range(start, min(start + batch_size, len(commands))))
        graph, readings = graphs[n]
        by_shard: dict[int, list[int]] = {}
        for pos, i in enumerate(chunk):
            by_shard.setdefault(shard_of[i], []).append(pos)
        for shard, positions in by_shard.items():
            command = c.RecordMessages(
                messages=tuple(commands[chunk[p]] for p in positions), vectors=vectors[[chunk[p] for p in positions]],
                model_id=model_id, graph=tuple(graph[p] for p in positions),
                readings=tuple(readings[p] for p in positions))
            cpu = time.process_time()
            outcomes = cores[shard].handle([command])
            per_shard[shard] += time.process_time() - cpu
            if not all(o["created"] for o in outcomes[0]):
                raise SystemExit("ingest_speed: a message of the file was taken for a duplicate")
    for core in cores:
        cpu = time.process_time()
        core.flush_touches()
        per_shard[core.spec.index] += time.process_time() - cpu
    return sum(per_shard), per_shard


def events_sha(core: ShardCore, dump: Path | None = None) -> tuple[str, int]:
    h, n = hashlib.sha1(), 0
    lines = []
    for e in core.log.scan(ScanFilter()):
        payload = HEAT.sub(lambda m: f'"heat":{float(m.group(1)):.2f}', WALL_CLOCK.sub('"at":-', e.event.model_dump_json()))
        lines.append(f"{e.tenant}|{e.user_id}|{e.kind}|{e.event_id}|{e.causation_id}|{e.correlation_id}|{payload}\n")
        n += 1
    lines.sort()  # the follow-ups one append calls for may come in another order (their heat is the clock's)
    for line in lines:
        h.update(line.encode())
    if dump is not None:
        dump.mkdir(parents=True, exist_ok=True)
        (dump / f"shard-{core.spec.index}.txt").write_text("".join(lines))
    return h.hexdigest()[:16], n


def seed_ids(seed: int) -> None:
    """Event (and command) ids from a seeded generator: two runs of the same code write the same ids."""
    rng = random.Random(seed)
    uuid.uuid4 = lambda: uuid.UUID(int=rng.getrandbits(128), version=4)


def run_once(work: Path, commands, vectors, graphs, args, profile: cProfile.Profile | None) -> dict:
    if args.seed is not None:
        seed_ids(args.seed)
    store = work / "store"
    shutil.rmtree(store, ignore_errors=True)
    cores, routes = open_store(store, args.num_shards)
    try:
        if profile is not None:
            profile.enable()
        total, per_shard = feed(cores, routes, commands, vectors, graphs, args.batch_size, cores[0].spec.model_id)
        if profile is not None:
            profile.disable()
        out = {"shard_cpu_s": round(total, 3), "per_shard_cpu_s": [round(x, 3) for x in per_shard],
               "shard_cpu_per_message_ms": round(1000 * total / len(commands), 4),
               "events": sum(core.log.count() for core in cores)}
        if args.seed is not None:
            shas = [events_sha(core, args.dump) for core in cores]
            out["events_sha"] = [s for s, _ in shas]
        live = [core.digest() for core in cores]
        replays = [core.replay() for core in cores]
        if not all(r.equal for r in replays):
            raise SystemExit("ingest_speed: replay of a shard's log gave other digests than the live ones")
        out["digests"] = [d.get("combined") for d in live]
    finally:
        for core in cores:
            core.close()
    return out


def top(profile: cProfile.Profile, key: str, n: int) -> list[str]:
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats(key).print_stats(n)
    lines = text.getvalue().splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls"))
    return [line.rstrip() for line in lines[start: start + 1 + n] if line.strip()]


def _without(argv: list[str], flags: tuple[str, ...]) -> list[str]:
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a in flags:
            skip = True
        elif not a.startswith(tuple(f + "=" for f in flags)):
            out.append(a)
    return out


def graph_in_child(argv: list[str], work: Path) -> tuple[list, float]:
    """``graph_chunks`` in a fresh process, as the driver runs it (its caches and jieba are not the shards')."""
    out = work / "graphs.pkl"
    subprocess.run([sys.executable, "-m", "benchmarks.ingest_speed", *argv, "--graph-only", str(out)], check=True)
    with out.open("rb") as fh:
        return pickle.load(fh)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(prog="python -m benchmarks.ingest_speed", description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, type=Path)
    p.add_argument("--num-shards", type=int, default=2, help="shards of the store (the benchmark's default on "
                                                                 "this 2-core machine)")
    p.add_argument("--batch-size", type=int, default=256, help="messages per chunk, as benchmarks.locomo sends")
    p.add_argument("--repeat", type=int, default=1, help="runs, each in a fresh process (cold caches, as a new "
                                                         "shard actor has); every run is reported")
    p.add_argument("--profile", type=int, default=0, metavar="N",
                   help="profile the shards' handle calls: top N by own and by cumulative time")
    p.add_argument("--profile-file", type=Path, help="also write the profile's raw statistics here (pstats)")
    p.add_argument("--seed", type=int, help="deterministic event ids (and events_sha, a fingerprint of the log)")
    p.add_argument("--dump", type=Path, help="with --seed: write every event as a line, per shard, here")
    p.add_argument("--limit", type=int, help="only the first N messages")
    p.add_argument("--cache", type=Path, default=CACHE, help="where the vectors are kept between runs")
    p.add_argument("--work", type=Path, default=CACHE / "work", help="where the stores are built (removed after)")
    p.add_argument("--out", type=Path, help="write the JSON here too")
    p.add_argument("--graph-only", type=Path, help=argparse.SUPPRESS)  # the child that runs graph_chunks
    p.add_argument("--run-only", type=Path, help=argparse.SUPPRESS)  # the child that runs one store
    args = p.parse_args(argv)
    data = ds.load(args.data, None)
    commands = validate_messages([{"tenant": TENANT, **m} for m in data.messages])[:args.limit]
    labels, label_cpu = label_pass(commands, args.cache, args.batch_size)
    if args.graph_only:
        # Finding the labels ran the graph rules over the file: their memos start empty again, as a driver's do.
        forget_text_caches()
        with args.graph_only.open("wb") as fh:
            pickle.dump(graph_chunks(commands, args.batch_size), fh)
        return 0
    vectors = message_vectors(commands, args.cache)
    work = args.work / f"{os.getpid()}"
    if args.run_only:
        try:
            work.mkdir(parents=True, exist_ok=True)
            graphs, graph_cpu = graph_in_child(argv[:argv.index("--run-only")], work)
            profile = cProfile.Profile(time.process_time) if args.profile else None
            run = run_once(work, commands, vectors, graphs, args, profile)
            run["graph_of_cpu_s"] = round(graph_cpu, 3)
            if profile is not None:
                run["profile_own"] = top(profile, "tottime", args.profile)
                run["profile_cumulative"] = top(profile, "cumulative", args.profile)
                if args.profile_file:
                    profile.dump_stats(args.profile_file)
            args.run_only.write_text(json.dumps(run))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return 0
    report = {"data": str(args.data), "messages": len(commands), "num_shards": args.num_shards,
              "batch_size": args.batch_size, "labels": len(labels), "label_encode_cpu_s": round(label_cpu, 3),
              "load_1min": os.getloadavg()[0], "runs": []}
    work.mkdir(parents=True, exist_ok=True)
    try:
        for i in range(max(1, args.repeat)):
            out = work / f"run-{i}.json"
            child = _without(argv, ("--repeat", "--out"))
            subprocess.run([sys.executable, "-m", "benchmarks.ingest_speed", *child, "--run-only", str(out)], check=True)
            report["runs"].append(json.loads(out.read_text()))
            print(json.dumps({k: v for k, v in report["runs"][-1].items() if not k.startswith("profile")}),
                  file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    runs = report["runs"]
    report["shard_cpu_per_message_ms_min"] = min(r["shard_cpu_per_message_ms"] for r in runs)
    report["graph_of_cpu_s_min"] = min(r["graph_of_cpu_s"] for r in runs)
    report["load_1min_end"] = os.getloadavg()[0]
    text = json.dumps(report, indent=2)
    if args.out:
        args.out.write_text(text + "\n")
    sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
