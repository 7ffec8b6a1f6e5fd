"""Any sentence-transformers model a user has on disk (or can download): ``sentence-transformers:<name-or-path>``.

The vectors are normalised to unit length (the stores compare them by cosine);
the dimension is the model's own. A model given by path must exist; a name is
looked up by sentence-transformers (this needs network access unless it is in
the local cache; ``HF_HUB_OFFLINE=1`` forbids the download).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from events.errors import EncoderError

BATCH_SIZE = 64


class SentenceTransformerEmbedder:
    def __init__(self, name_or_path: str, batch_size: int = BATCH_SIZE) -> None:
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        self.model_id = f"sentence-transformers:{name_or_path}"
        self.batch_size = batch_size
        local = Path(name_or_path).expanduser()
        if not local.is_dir() and name_or_path.startswith((".", "/", "~")):
            raise EncoderError(f"embedder sentence-transformers:{name_or_path}: no model directory at that path; "
                               "give the directory that holds the model's config (modules.json)")
        try:
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(str(local) if local.is_dir() else name_or_path, device="cpu")
        except Exception as exc:  # the library raises OSError, ValueError, HTTP errors… for a model it cannot load
            first = str(exc).splitlines()[0][:200] if str(exc) else ""
            raise EncoderError(f"embedder sentence-transformers:{name_or_path} could not be loaded "
                               f"({type(exc).__name__}: {first}); give a local model directory or a model name "
                               "this machine can download") from None
        size = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        dim = size()
        if not isinstance(dim, int) or dim < 1:
            raise EncoderError(f"embedder sentence-transformers:{name_or_path} does not say its vector size")
        self.dim = dim
        self.backend = "sentence-transformers"

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = self._model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                                  show_progress_bar=False, convert_to_numpy=True)
        return np.ascontiguousarray(vecs, dtype=np.float32)
