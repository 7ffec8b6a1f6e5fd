"""Every question of a dev file through ``ShardCore.query`` (Search and BuildContext), in process: results or CPU.

    python -m benchmarks.query_equivalence dump --data FILE --store DIR --out RESULTS.pkl
    python -m benchmarks.query_equivalence compare BEFORE.pkl AFTER.pkl
    python -m benchmarks.query_equivalence time --data FILE --store DIR [--shards 0]

``dump`` copies a store ``benchmarks.locomo --store`` kept into a temporary directory (the store is never written),
opens each shard's core with no Ray and asks every question of the users it holds: a Search (k 10, scope active),
a Search over scope ``all`` and a BuildContext (2000 tokens), with the default fusion and the question's
``asked_at`` as ``now``; the touches are dropped, never folded, so every question sees the same state. It pickles
each hit in full (``Hit.to_dict``) and each context (``Context.to_dict``). Run it once per code version (e.g. with
``PYTHONPATH`` on another worktree), then ``compare``: hit ids, order, scores, breakdowns and provenance, and the
context text and items, must be equal; it prints the questions compared and every difference found (exit 1 if
any). Results do not depend on the string hash seed (BM25 adds its query terms in sorted order; two dumps of the
LoCoMo dev file under ``PYTHONHASHSEED`` 0 and 1 compare equal). ``time`` asks every question once to warm the per-user caches, then times each query with the thread's CPU
clock and prints p50/p95 ms for search and context.
"""

from __future__ import annotations

import argparse
import pickle
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from actors import commands as c
from actors.core import ShardCore
from actors.spec import ShardSpec
from benchmarks import dataset as ds
from benchmarks.lab import query_vectors
from palimpsest import config as store_config
from palimpsest.locomo import TENANT
from projections.queries.retrieval import DEFAULT_FUSION


def _cores(store: Path, shards: list[int] | None) -> Iterator[tuple[int, ShardCore]]:
    """Each shard's core on a temporary copy of ``store`` (closed after use)."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "store"
        shutil.copytree(store, work)
        cfg = store_config.StoreConfig.load(work)
        for index in shards if shards is not None else range(cfg.num_shards):
            spec = ShardSpec(index=index, log_path=store_config.log_path(work, index),
                             lance_dir=store_config.lance_dir(work), model_id=cfg.model_id, dim=cfg.dim,
                             snapshot_dir=store_config.snapshot_dir(work), key_store=store_config.key_store(work, index),
                             master_key=store_config.master_key(work, cfg))
            core = ShardCore(spec)
            try:
                yield index, core
            finally:
                core._touches = []  # never fold the benchmark's touches into the copy
                core.close()


def _queries(core: ShardCore, data: ds.Dataset, model_id: str) -> list[tuple[int, c.Search, c.Search, c.BuildContext]]:
    users = {user for _, user in core.state.users}
    asked = [(i, q) for i, q in enumerate(data.questions) if q.user_id in users]
    vecs = query_vectors([q.question for _, q in asked], model_id)
    out = []
    for i, q in asked:
        common = dict(tenant=TENANT, user_id=q.user_id, query=q.question, query_vector=vecs[q.question], now=q.asked_at,
                      fusion=DEFAULT_FUSION)
        out.append((i, c.Search(k=10, scope="active", **common), c.Search(k=10, scope="all", **common),
                    c.BuildContext(token_budget=2000, **common)))
    return out


def _ask(core: ShardCore, query: c.Query):
    answer = core.query(query)
    core._touches = []
    return answer


def dump(data_path: Path, store: Path, out: Path) -> int:
    data = ds.load(data_path)
    cfg = store_config.StoreConfig.load(store)
    results: dict[int, dict] = {}
    for _, core in _cores(store, None):
        for i, active, everything, ctx in _queries(core, data, cfg.model_id):
            results[i] = {"search": [h.to_dict() for h in _ask(core, active)],
                          "search_all": [h.to_dict() for h in _ask(core, everything)],
                          "context": _ask(core, ctx).to_dict()}
    out.write_bytes(pickle.dumps(results))
    print(f"{len(results)} questions of {len(data.questions)} dumped to {out}")
    return 0


def _diff(path: str, a, b, found: list[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            found.append(f"{path}: keys {list(a)} != {list(b)}")
        for key in a.keys() & b.keys():
            _diff(f"{path}.{key}", a[key], b[key], found)
    elif isinstance(a, list | tuple) and isinstance(b, list | tuple) and type(a) is type(b):
        if len(a) != len(b):
            found.append(f"{path}: length {len(a)} != {len(b)}")
        for n, (x, y) in enumerate(zip(a, b)):
            _diff(f"{path}[{n}]", x, y, found)
    elif type(a) is not type(b) or a != b:
        found.append(f"{path}: {a!r} != {b!r}")


def compare(before: Path, after: Path) -> int:
    a, b = pickle.loads(before.read_bytes()), pickle.loads(after.read_bytes())
    found: list[str] = []
    if a.keys() != b.keys():
        found.append(f"questions differ: {len(a.keys() - b.keys())} only before, {len(b.keys() - a.keys())} only after")
    hits = 0
    for i in sorted(a.keys() & b.keys()):
        hits += len(a[i]["search"]) + len(a[i]["search_all"]) + len(a[i]["context"]["items"])
        _diff(f"q{i}", a[i], b[i], found)
    for line in found[:20]:
        print(line)
    print(f"{len(a.keys() & b.keys())} questions compared (search, search scope all, context; {hits} hits/items): "
          f"{len(found)} differences")
    return 1 if found else 0


def timing(data_path: Path, store: Path, shards: list[int] | None) -> int:
    data = ds.load(data_path)
    cfg = store_config.StoreConfig.load(store)
    cpu: dict[str, list[float]] = {"search": [], "context": []}
    for _, core in _cores(store, shards):
        asked = _queries(core, data, cfg.model_id)
        for _, active, _, ctx in asked:  # warm the per-user derived caches
            _ask(core, active), _ask(core, ctx)
        for kind, pick in (("search", 1), ("context", 3)):
            for row in asked:
                t = time.thread_time()
                core.query(row[pick])
                cpu[kind].append((time.thread_time() - t) * 1e3)
                core._touches = []
    for kind, ms in cpu.items():
        print(f"{data_path.name} {kind} thread cpu ms p50 {np.percentile(ms, 50):.2f} p95 {np.percentile(ms, 95):.2f} "
              f"mean {np.mean(ms):.2f} n={len(ms)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.query_equivalence", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("--data", required=True, type=Path)
    d.add_argument("--store", required=True, type=Path)
    d.add_argument("--out", required=True, type=Path)
    cmp = sub.add_parser("compare")
    cmp.add_argument("before", type=Path)
    cmp.add_argument("after", type=Path)
    t = sub.add_parser("time")
    t.add_argument("--data", required=True, type=Path)
    t.add_argument("--store", required=True, type=Path)
    t.add_argument("--shards", type=int, nargs="*", help="shard indexes (default: every shard)")
    args = p.parse_args(argv)
    if args.cmd == "dump":
        return dump(args.data, args.store, args.out)
    if args.cmd == "compare":
        return compare(args.before, args.after)
    return timing(args.data, args.store, args.shards)


if __name__ == "__main__":
    sys.exit(main())
