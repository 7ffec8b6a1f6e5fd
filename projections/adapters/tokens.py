"""Token counting for context budgets, with the embedding model's own tokenizer."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from tokenizers import Tokenizer

from projections.adapters.embedding import packaged_model_path


class TokenCounter:
    """Counts WordPiece tokens (no special tokens, no truncation)."""

    def __init__(self, tokenizer_file: str | Path | None = None) -> None:
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # no fork warning from a process that later forks
        path = Path(tokenizer_file) if tokenizer_file else Path(packaged_model_path()) / "tokenizer.json"
        self._tok = Tokenizer.from_file(str(path))
        self._tok.no_padding()
        self._tok.no_truncation()

    def count(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False).ids)

    def count_many(self, texts: list[str]) -> list[int]:
        return [len(e.ids) for e in self._tok.encode_batch(texts, add_special_tokens=False)]


@lru_cache(maxsize=1)
def default_counter() -> TokenCounter:
    return TokenCounter()
