"""The memory-graph benchmark's memory figures: the graph's own size (tracemalloc) and the RSS of a fresh
process that folds its log, builds the search caches and searches once (``benchmarks.graph`` calls
:func:`graph_memory`; the child process runs :func:`fold_rss`)."""

from __future__ import annotations

import ctypes
import gc
import json
import pickle
import subprocess
import sys
import tracemalloc
from datetime import datetime
from pathlib import Path

from projections.adapters.embedding import HashEmbedder
from projections.folds.graph import GraphState, apply

SEED_RSS_MB, TARGET_RSS_MB = 500.0, 200.0  # seed 001 §10.3 for 10k memories; ours, without the model


def release_free_memory() -> None:
    """Hand freed heap back to the OS (glibc), so RSS shows what is held rather than what was once used."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass  # not glibc: RSS keeps the high-water heap, an overestimate


def rss_mb(field: str = "VmRSS") -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def fold_rss(path: str) -> dict:
    """In a fresh process: fold the log at ``path`` chunk by chunk (as a restarted shard does), build the views,
    search once; the RSS held after each step (freed heap returned first) and the peak. Run by :func:`graph_memory`
    through ``python -c``."""
    from projections.queries.graph_search import search_graph

    out = {"rss_imports_mb": rss_mb()}
    state, seq = GraphState(), 0
    with open(path, "rb") as f:
        while True:
            try:
                chunk = pickle.load(f)
            except EOFError:
                break
            for event_id, event, at in chunk:
                seq += 1
                apply(state, event_id, event, seq, at)
            del chunk
    gc.collect()
    release_free_memory()
    out["rss_folded_mb"] = rss_mb()
    _, matrix = state.node_matrix(HashEmbedder.dim)  # also builds the merged view
    release_free_memory()
    out["rss_views_mb"] = rss_mb()
    now = max(m.created_at for m in state.memories.values())
    search_graph(state, matrix[0], now=now, depth=2)
    release_free_memory()
    out["rss_searched_mb"] = rss_mb()
    out["rss_peak_mb"] = rss_mb("VmHWM")
    out["memories"] = len(state.memories)
    return out


def graph_memory(s, tmp: Path, now: datetime) -> dict:
    """The graph's own size (tracemalloc) and the RSS of a fresh process holding it, against the targets."""
    from projections.queries.graph_search import search_graph

    tracemalloc.start()  # the events exist already: what is traced is the state's records and dicts
    base = tracemalloc.get_traced_memory()[0]
    refold = GraphState()
    for seq, (event_id, event, at) in enumerate(s.log, start=1):
        apply(refold, event_id, event, seq, at)
    state_mb = (tracemalloc.get_traced_memory()[0] - base) / 2**20
    query = next(n.vector for n in refold.nodes.values() if n.vector is not None)
    search_graph(refold, query, now=now, depth=1)  # what it keeps is the caches: view, node matrix, links
    views_mb = (tracemalloc.get_traced_memory()[0] - base) / 2**20 - state_mb
    tracemalloc.stop()
    replay_equal = refold.canonical() == s.state.canonical()
    del refold

    path = tmp / "graph-log.pickle"
    with path.open("wb") as f:
        for lo in range(0, len(s.log), 1000):
            pickle.dump(s.log[lo: lo + 1000], f, protocol=pickle.HIGHEST_PROTOCOL)
    code = "import json, sys; from benchmarks.graph_memory import fold_rss; print(json.dumps(fold_rss(sys.argv[1])))"
    child = json.loads(subprocess.run([sys.executable, "-c", code, str(path)], check=True, capture_output=True,
                                      text=True).stdout.strip().splitlines()[-1])
    path.unlink()
    held = child["rss_searched_mb"]
    return {
        "graph_state_mb": state_mb, "graph_views_mb": views_mb,
        "graph_state_per_memory_kb": 1024 * state_mb / max(1, len(s.state.memories)), "replay_equal": replay_equal,
        "process_rss_mb": held, "process_rss_imports_mb": child["rss_imports_mb"],
        "process_rss_graph_mb": held - child["rss_imports_mb"], "process_rss_peak_mb": child["rss_peak_mb"],
        "process_rss_steps_mb": {k: child[k] for k in ("rss_folded_mb", "rss_views_mb", "rss_searched_mb")},
        "seed_target_mb": SEED_RSS_MB, "our_target_mb": TARGET_RSS_MB,
        "meets_seed": held < SEED_RSS_MB, "meets_ours": held < TARGET_RSS_MB,
        "covers": "graph_state_mb: tracemalloc of folding the graph's events into an empty state (records and "
                  "dicts, not the events); graph_views_mb: the derived caches a search keeps (merged view, node "
                  "matrix, links). process_rss_mb: "
                  "VmRSS of a fresh Python process (no embedder, no DuckDB, LanceDB or Ray) that folded the log "
                  "chunk by chunk, built the views and ran one depth-2 search, freed heap returned (malloc_trim) "
                  "before each reading; _imports_mb is its RSS before the fold, _peak_mb its VmHWM",
    }
