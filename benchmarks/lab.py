"""Fast in-process experiments on a store the benchmark kept: rank variants without Ray and without re-encoding.

    python -m benchmarks.locomo --data FILE --out X.json --store /tmp/pal/store_x     # once: builds the store
    python -m benchmarks.lab --data FILE --store /tmp/pal/store_x [--variants NAME,...] [--out R.json]

Folds every shard's DuckDB log into projections in this process (the pure
``projections.folds.state.fold``: the same state the shards hold), reads the
turn vectors from the folded vector projection (so turns are never
re-encoded) and the question vectors from a cache file under /tmp keyed by a
hash of the model and the text, then scores each named fusion variant
(:data:`VARIANTS`) and the baselines with the benchmark's own metrics,
whole file and leave-conversations-out. Read-only: it never writes to the
store. Figures are those of ``fuse`` and ``assemble`` directly; the
benchmark proper goes through the public API and Ray.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks import dataset as ds
from benchmarks.baselines import baseline_systems, build_corpora
from benchmarks.leaveout import leave_out
from benchmarks.metrics import aggregate, metric_keys, score
from benchmarks.systems import BudgetContext, Retrieval, provenance_turns
from benchmarks.variants import ALL as VARIANTS
from benchmarks.variants import EXPERIMENTS, for_encoder
from actors.reads import note_entries
from events.crypto import PayloadCipher
from events.duckdb_log import DuckDBEventLog
from events.keystore import KeyStore
from palimpsest import config as store_config
from palimpsest.locomo import TENANT
from projections.adapters.embedding import encode_whole_queries, query_tokens
from projections.adapters.encoder_kinds import LEGACY as DEFAULT_ENCODER  # a store.json naming no encoder
from projections.adapters.encoder_kinds import make_embedder, spec_of
from projections.adapters.tokens import default_counter
from projections.folds.policy import DEFAULT_POLICY
from projections.folds.state import ShardState, fold
from projections.queries.context import assemble
from projections.queries.retrieval import FusionConfig, fuse

K_VALUES = (5, 10)
BUDGETS = (500, 1000, 2000)
CACHE = Path("/tmp/palimpsest-lab/query_vectors.npz")


def load_state(store: Path) -> ShardState:
    """The store's folded state; kept in a pickle under /tmp keyed by the logs' paths, sizes and times."""
    logs = sorted((store / "log").glob("*.duckdb"))
    stamp = hashlib.sha1(repr([(str(p.resolve()), p.stat().st_size, p.stat().st_mtime_ns) for p in logs]).encode())
    cached = CACHE.parent / f"state-{stamp.hexdigest()[:16]}.pkl"
    if cached.exists():
        try:
            return pickle.loads(cached.read_bytes())
        except (pickle.UnpicklingError, AttributeError, ImportError, TypeError, ValueError):
            pass  # written by other code (a class changed since): fold again and overwrite it
    state = fold_logs(logs, store)
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_bytes(pickle.dumps(state))
    return state


def fold_logs(logs: list[Path], store: Path) -> ShardState:
    """The logs folded in this process; an encrypted store's payloads are opened with its key stores."""
    cfg = store_config.StoreConfig.load(store)
    master = store_config.master_key(store, cfg)
    state = ShardState()
    for i, path in enumerate(logs):
        cipher = PayloadCipher(KeyStore(store_config.key_store(store, i), master)) if cfg.encrypted else None
        log = DuckDBEventLog(path, cipher=cipher)
        try:
            state = fold(state, log.scan())
        finally:
            log.close()
    return state


def store_encoder(store: Path) -> tuple[str, str]:
    """``(spec, model id)`` of the encoder a store's vectors were made by (its store.json)."""
    cfg = json.loads((store / "store.json").read_text())
    model = cfg["model_id"]
    return cfg.get("embedder") or spec_of(model) or DEFAULT_ENCODER, model


def query_vectors(texts: list[str], model_id: str, *, query_graph: bool = False,
                  spec: str | None = None) -> dict[str, np.ndarray]:
    """Vectors of ``texts`` (as given, not cut), encoded once per (model, text) and kept in :data:`CACHE`.

    The encoder is ``spec`` (default: the one whose model id is ``model_id``). ``query_graph``: through the
    encoder's query path, as ``Memory.search`` encodes (its graphs and which queries run on int8 weights,
    ``PALIMPSEST_QUERY_INT8``, join the cache key: the encoder's ``query_tag``), else through the float32 graph
    that embeds turns (an encoder with a query side of its own, e5's ``query:`` prefix, still uses that side).
    """
    embedder = make_embedder(spec or spec_of(model_id) or DEFAULT_ENCODER)
    if embedder.model_id != model_id:
        raise ValueError(f"query_vectors: encoder {spec!r} makes {embedder.model_id!r} vectors, not {model_id!r}; "
                         "pass the store's own encoder (store_encoder)")
    graph = getattr(getattr(embedder, "_onnx", None), "query_tag", None) if query_graph else None
    tag = f"{model_id}\0{graph}" if graph else model_id
    key = {t: hashlib.sha1(f"{tag}\0{t}".encode()).hexdigest() for t in texts}
    cached: dict[str, np.ndarray] = dict(np.load(CACHE)) if CACHE.exists() else {}
    missing = sorted({t for t in texts if key[t] not in cached})
    if missing:
        vecs = embedder.encode_queries(missing) if graph is not None else encode_whole_queries(embedder, missing)
        cached.update({key[t]: v for t, v in zip(missing, vecs)})
        CACHE.parent.mkdir(parents=True, exist_ok=True)
        np.savez(CACHE, **cached)
    return {t: cached[key[t]] for t in texts}


class Lab:
    """One store's folded users, their dense matrices and a token cache: evaluates fusion variants."""

    def __init__(self, state: ShardState) -> None:
        self.state = state
        self.counter = default_counter()
        self._tokens: dict[str, int] = {}
        self._dense: dict[str, tuple[list[str], np.ndarray]] = {}
        self.fuse_ms: list[float] = []  # wall time of each fuse call (dense neighbours given, no encoding)

    def count(self, lines: list[str]) -> list[int]:
        todo = [line for line in dict.fromkeys(lines) if line not in self._tokens]
        if todo:
            self._tokens.update(zip(todo, self.counter.count_many(todo)))
        return [self._tokens[line] for line in lines]

    def dense(self, user: str, vec: np.ndarray, k: int) -> list[tuple[str, float]]:
        if user not in self._dense:
            rows = self.state.user(TENANT, user).vectors.rows
            ids = list(rows)
            m = np.stack([np.asarray(rows[i].vector, dtype=np.float32) for i in ids])
            self._dense[user] = ids, m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)
        ids, m = self._dense[user]
        sims = m @ (vec / max(float(np.linalg.norm(vec)), 1e-12))
        top = np.lexsort((np.arange(len(ids)), -sims))[:k]
        return [(ids[i], float(sims[i])) for i in top]

    def retrieve(self, q: ds.Question, vec: np.ndarray, fusion: FusionConfig) -> Retrieval:
        memory = self.state.user(TENANT, q.user_id)
        dense = self.dense(q.user_id, vec, fusion.candidates)
        started = time.perf_counter()
        hits = fuse(memory, q.question, dense, fusion.candidates, fusion, vec, now=q.asked_at,
                    policy=DEFAULT_POLICY)
        self.fuse_ms.append(1000 * (time.perf_counter() - started))
        notes = note_entries(memory, hits, fusion) if fusion.note_tokens else []
        contexts = {}
        for budget in BUDGETS:
            ctx = assemble(q.question, hits, budget, self.count, notes, fusion.note_tokens, fusion.note_share)
            contexts[budget] = BudgetContext(
                frozenset().union(*(provenance_turns(i.turn_id, i.provenance) for i in ctx.items)), ctx.tokens)
        ranked = tuple(provenance_turns(h.turn_id, h.provenance) for h in hits[: max(K_VALUES)])
        return Retrieval(ranked, contexts)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.lab", description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, type=Path)
    p.add_argument("--store", required=True, type=Path, help="a store benchmarks.locomo kept (--store)")
    p.add_argument("--variants", help=f"comma-separated, default all: {', '.join(VARIANTS)}")
    p.add_argument("--baselines", action="store_true", help="also score bm25, dense and rrf")
    p.add_argument("--out", type=Path, help="write the per-variant aggregates as JSON")
    p.add_argument("--query-tokens", type=int,
                   help="encode each question cut after this many model tokens (default: the store's encoder's "
                        "own limit, as Memory cuts; 0: whole)")
    p.add_argument("--query-encoder", choices=("query", "float32"), default="query",
                   help="query: the encoder's query path, as Memory encodes a search (on int8 weights; "
                        "PALIMPSEST_QUERY_INT8=long|off changes it); float32: the graph that embeds turns")
    args = p.parse_args(argv)
    names = args.variants.split(",") if args.variants else list(VARIANTS)
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        p.error(f"--variants: unknown {unknown}; choose from {', '.join(VARIANTS)}")
    data = ds.load(args.data)
    started = time.perf_counter()
    lab = Lab(load_state(args.store))
    spec, model_id = store_encoder(args.store)
    configs = {**for_encoder(model_id), **EXPERIMENTS}  # the ablations around the store's encoder's default
    embedder = make_embedder(spec)
    limit = query_tokens(embedder) if args.query_tokens is None else args.query_tokens
    cutter = getattr(embedder, "query_prefix", None) if limit else None
    texts = {q.question: cutter(q.question, limit) if cutter else q.question for q in data.questions}
    cut = query_vectors(sorted(set(texts.values())), model_id, query_graph=args.query_encoder == "query", spec=spec)
    vecs = {t: cut[texts[t]] for t in texts}
    print(f"folded {args.store} and vectors in {time.perf_counter() - started:.1f}s", file=sys.stderr)
    keys = metric_keys(K_VALUES, BUDGETS)
    rows: dict[str, list] = {}
    ms: dict[str, float] = {}
    fuse_ms: dict[str, tuple[float, float]] = {}
    for name in names:
        t0 = time.perf_counter()
        lab.fuse_ms = []
        rows[name] = [score(q, lab.retrieve(q, vecs[q.question], configs[name]), K_VALUES, BUDGETS, max(BUDGETS))
                      for q in data.questions]
        ms[name] = 1000 * (time.perf_counter() - t0) / max(1, len(data.questions))
        fuse_ms[name] = (float(np.percentile(lab.fuse_ms, 50)), float(np.percentile(lab.fuse_ms, 95)))
    if args.baselines:
        messages = data.messages
        turn_vecs = np.stack([vecs_for_turns(lab, m) for m in messages])
        corpora = build_corpora(messages, turn_vecs, lambda m: m["user_id"], lab.counter)
        qv = {(q.sample_id, q.index): vecs[q.question] for q in data.questions}
        for system in baseline_systems(corpora, qv, max(K_VALUES), BUDGETS):
            rows[system.name] = [score(q, system.retrieve(q), K_VALUES, BUDGETS, max(BUDGETS)) for q in data.questions]
    results = {name: aggregate(r, keys) for name, r in rows.items()}
    held = leave_out(rows, names, keys)
    print_table(data, results, held, ms)
    for name, (p50, p95) in fuse_ms.items():
        print(f"fuse ms {name}: p50 {p50:.2f} p95 {p95:.2f}")
    if args.out:
        args.out.write_text(json.dumps({"systems": results, "leave_out": held, "ms_per_question": ms,
                                              "fuse_ms_p50_p95": fuse_ms}, indent=1))
    return 0


def vecs_for_turns(lab: Lab, message: dict) -> np.ndarray:
    """A turn's stored vector (the system embedded the same index text the baselines index)."""
    memory = lab.state.user(TENANT, message["user_id"])
    by_turn = getattr(lab, "_by_turn", {})
    if message["user_id"] not in by_turn:
        by_turn[message["user_id"]] = {m.turn_id: memory.vectors.rows[mid].vector
                                       for mid, m in memory.messages.by_id.items() if mid in memory.vectors.rows}
        lab._by_turn = by_turn
    return np.asarray(by_turn[message["user_id"]][message["turn_id"]], dtype=np.float32)


def print_table(data: ds.Dataset, results: dict, held: dict | None, ms: dict) -> None:
    cats = [c for c, r in next(iter(results.values()))["per_category"].items() if r["questions"]]
    print(f"{data.name}: " + "  ".join(f"{c}={data.category_names.get(c, c)}" for c in cats))
    print(f"{'system':34s} {'R@10':>6s} {'B1000':>6s} {'B2000':>6s}  " + " ".join(f"c{c:>4s}" for c in cats) + "   ms")
    for name, r in results.items():
        per = " ".join(f"{100 * r['per_category'][c]['recall@10']:5.1f}" for c in cats)
        print(f"{name:34s} {100 * r['recall@10']:6.1f} {100 * r['budget_recall@1000']:6.1f} "
              f"{100 * r['budget_recall@2000']:6.1f}  {per}   {ms.get(name, 0):.1f}")
    if held:
        s = held["selected"]
        per = " ".join(f"{100 * s['per_category'][c]['recall@10']:5.1f}" for c in cats)
        print(f"{'leave-out (chosen per fold)':34s} {100 * s['recall@10']:6.1f} {100 * s['budget_recall@1000']:6.1f} "
              f"{100 * s['budget_recall@2000']:6.1f}  {per}   " + ",".join(f["chosen"] for f in held["folds"]))


if __name__ == "__main__":
    raise SystemExit(main())
