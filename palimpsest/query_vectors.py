"""The vectors of recent query texts: an agent searches and then builds a context for the same question.

The encoder is a pure function of the text, so a text asked again reuses its
vector (read-only, shared by the calls). At most ``limit`` texts are kept, the
oldest leaving first; thread-safe (the server calls from several threads).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

QUERY_VECTORS = 1024


class QueryVectors:
    def __init__(self, limit: int = QUERY_VECTORS) -> None:
        self.limit = limit
        self._vectors: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    def get(self, text: str, encode: Callable[[list[str]], np.ndarray]) -> np.ndarray:
        with self._lock:
            vec = self._vectors.get(text)
        if vec is None:
            vec = encode([text])[0]
            vec.setflags(write=False)
            with self._lock:
                if len(self._vectors) >= self.limit:
                    self._vectors.pop(next(iter(self._vectors)))
                self._vectors[text] = vec
        return vec

    def clear(self) -> None:
        """Forget every text (an erasure: a forgotten user's questions leave the process)."""
        with self._lock:
            self._vectors.clear()
