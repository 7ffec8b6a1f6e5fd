"""The query encoder: every query on int8 weights, one query per run; one thread up to 20 tokens, two above.

A search encodes one short text while the shards and the rest of the
process want the same two cores. Measured through ``benchmarks.locomo`` on
the first LoCoMo dev conversation, every system and ablation interleaved (so
the shards fold touches and answer other queries between two searches),
query encode p50/p95 in ms and the search's:

- float32 graph, two threads (the batch session): encode 7.8/12.2, search 15.5/22.3
- float32, one thread: encode 7.7/9.9, search 13.5/17.7
- int8 weights, two threads: encode 4.9/7.6, search 12.6/18.7
- int8 weights, one thread: encode 4.3/6.0, search 10.0/14.4

A two-thread run waits for its slower thread whenever a shard holds the other core, and after it the shards'
own answers were slower too (p50 6.3 → 4.2 ms for the same query with its vector given). So a query of up to
:data:`ONE_THREAD_TOKENS` tokens runs on one thread; a longer one (a MemDaily question: MiniLM reads each Chinese
character as one token) on two: on MemDaily's 600 questions, alone and quiet, p50/p95 9.3/11.0 ms on the float32
two-thread session, 6.3/7.9 on int8 with two threads, 8.0/10.5 on int8 with one. An int8 run quantizes its
activations over the whole batch, so int8 queries run one at a time: a query's vector never depends on the
other queries encoded with it.

Recall through ``python -m benchmarks.lab --variants palimpsest --query-encoder float32|query`` (R@10 / budget
recall@1000; whole file and leave-out alike): with every query on int8, LoCoMo dev 80.55/88.22 → 80.82/88.33,
REALTALK dev 66.44/73.52 → 66.21/73.70, MemDaily dev 76.9/92.6 → 77.2/92.4. The LoCoMo dev questions through
``Memory.search`` under a benchmark-like load (2026-11-25, two alternating runs each): encode p50/p95
10.4–11.2/14.3–15.9 ms on float32 with one thread (``PALIMPSEST_QUERY_INT8=long``: int8 only past
:data:`ONE_THREAD_TOKENS` tokens) against 6.0–6.6/9.0–10.0 on int8. ``off`` (``0``) keeps every query on the
float32 graph.

The int8 weights are quantized per output channel (``onnxruntime.quantization.quantize_dynamic``), once per
machine, from the float32 graph into the same cache directory, and checked on the probes: each int8 vector (each
probe encoded alone, as a query is) must have cosine at least :data:`MIN_COSINE` with the float32 one, a guard
against a broken quantization (LoCoMo and REALTALK dev questions: mean 0.993, least 0.981; "ok" 0.964). Turns,
labels and everything recorded in the log are always encoded by the float32 graph.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import numpy as np
import structlog

from projections.adapters import onnx_layernorm
from projections.adapters.cache import made_once

log = structlog.get_logger("palimpsest.encoder")

MIN_COSINE = 0.95  # least accepted cosine between a probe's int8 and float32 vectors
QUERY_THREADS = 1
# Longer queries run on two threads (int8, or with PALIMPSEST_QUERY_INT8=off the float32 batch session): one query
# of 32 tokens (a long MemDaily question, cut) took p50 14.1 ms on one thread and 8.1 on two (float32, quiet); one
# of 12 tokens 7.3 and 4.7, but under a benchmark's load the one-thread run of the short LoCoMo questions (p95 20
# tokens) won (above).
ONE_THREAD_TOKENS = 20

MODES = {"all": ("all", "1", "true", "yes", "on", "", "default"), "long": ("long",), "off": ("off", "0", "false", "no")}


def int8_mode() -> str:
    """Which queries run on int8 weights (``PALIMPSEST_QUERY_INT8``): ``all`` (the default, ``1``), ``long`` (only
    those over :data:`ONE_THREAD_TOKENS` tokens), or ``off`` (``0``: every query on the float32 graph)."""
    value = os.environ.get("PALIMPSEST_QUERY_INT8", "").strip().lower()
    for mode, spellings in MODES.items():
        if value in spellings:
            return mode
    log.warning("query_int8_setting_unknown", value=value, using="all",
                fix="set PALIMPSEST_QUERY_INT8 to all (1), long or off (0)")
    return "all"


def int8_enabled() -> bool:
    return int8_mode() != "off"


def int8_path(graph: Path) -> Path:
    """The int8 graph made from the float32 graph at ``graph`` (named after it: a new export, a new file)."""
    return graph.with_name(f"{graph.stem}-int8{graph.suffix}")


def session(path: Path, threads: int = QUERY_THREADS, spin: bool = False):
    """An ONNX Runtime session on ``threads`` threads (a query's: one). Its pool's threads sleep while they wait for
    work, or with ``spin`` (a long e5 query's two threads: :mod:`projections.adapters.e5_onnx`) spin within a run
    and sleep once it ends (``session.force_spinning_stop``): a pool left spinning goes on after each run (a
    two-thread e5 session: 47 ms of CPU after each 129-token query, a core the shards want then)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    options.intra_op_num_threads = threads
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
    if spin:
        options.add_session_config_entry("session.force_spinning_stop", "1")
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"],
                                disabled_optimizers=onnx_layernorm.DISABLED_FUSIONS)


def query_graph(graph: Path, check, source=None) -> Path:
    """The int8 graph made from ``graph`` (made and checked first if this machine has none), or ``graph`` itself
    with ``PALIMPSEST_QUERY_INT8=off``.

    ``check(path)`` returns the least probe cosine of the graph at ``path``
    against the encoder of ``graph``. ``source(path)``, when given, writes the
    float32 graph to quantize (``graph`` holds no float32 matrix products: e5's
    are 4-bit); it is removed once quantized. Any failure (no quantizer, a graph
    it cannot read, probes below :data:`MIN_COSINE`) is logged and answered with ``graph``.
    """
    if not int8_enabled():
        return graph
    target = int8_path(graph)
    with made_once(target):  # another process quantizing it: wait for its file
        return _quantized(graph, target, check, source)


def _quantized(graph: Path, target: Path, check, source) -> Path:
    float_source = target.with_name(f"{target.stem}.{os.getpid()}.{uuid.uuid4().hex[:8]}.float32.onnx")
    try:
        if target.exists():
            return target
        if source is None:
            _quantize(graph, target)
        else:
            source(float_source)
            _quantize(float_source, target)
        cosine = check(target)
        if cosine < MIN_COSINE:
            target.unlink(missing_ok=True)
            log.warning("onnx_int8_rejected", least_cosine=round(cosine, 4))
            return graph
        log.info("onnx_int8_quantized", path=str(target), least_cosine=round(cosine, 4))
        return target
    except Exception as exc:  # noqa: BLE001 - a speed-up only: the float32 graph encodes queries instead
        target.unlink(missing_ok=True)
        log.warning("onnx_int8_failed", error=f"{type(exc).__name__}: {exc}")
        return graph
    finally:
        float_source.unlink(missing_ok=True)


def attach(encoder, check, source=None):
    """``encoder`` with its queries' graph (:func:`query_graph`; the encoder's ``use_query_graph(path)`` opens its
    sessions). An int8 file that does not load (hand-edited, truncated) is made again; should that fail too, queries
    run on the encoder's own graph."""
    for _ in range(2):
        path = query_graph(encoder.path, check, source)
        try:
            encoder.use_query_graph(path)
            return encoder
        except Exception as exc:  # noqa: BLE001 - see the docstring
            log.warning("onnx_query_graph_unreadable", path=str(path), error=f"{type(exc).__name__}: {exc}")
            if path == encoder.path:
                break
            path.unlink(missing_ok=True)
    encoder.use_query_graph(encoder.path)
    return encoder


def _quantize(graph: Path, target: Path) -> None:
    """Per-channel int8 weights of ``graph``'s matrix products; written to a temporary name, then renamed."""
    import logging

    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    partial = target.with_name(f"{target.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.part")
    try:
        # The fused graph's Attention outputs have no inferred type; they are float32.
        logging.disable(logging.WARNING)  # the quantizer's advice on the root logger ("consider pre-processing")
        quantize_dynamic(str(graph), str(partial), per_channel=True, weight_type=QuantType.QInt8,
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
        os.replace(partial, target)
    finally:
        logging.disable(logging.NOTSET)
        partial.unlink(missing_ok=True)


def least_cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.min(np.sum(a * b, axis=1)))
