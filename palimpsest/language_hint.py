"""A warning when a store's encoder reads English only and the store is given Chinese to remember.

The default encoder (``minilm``) is English-only: a Chinese turn it stores is
found by its words (the BM25 lists, jieba-segmented) but hardly by its
meaning, and never by a question in another language. ``multilingual-e5-small``
reads both; ``reembed`` moves a store to it. The warning is logged once per
open store, the first time a batch is mostly Chinese enough to matter.
"""

from __future__ import annotations

from collections.abc import Iterable

from projections.adapters import encoder_kinds
from projections.rules.text import mainly_chinese

CHINESE_SHARE = 0.1  # a batch at least this share of whose messages are mainly Chinese gets the warning


def chinese_share(texts: Iterable[str]) -> tuple[int, int]:
    """``(mainly Chinese, all)``: how many of ``texts`` are mostly Chinese, of how many."""
    count = total = 0
    for text in texts:
        total += 1
        count += mainly_chinese(text)
    return count, total


def english_only_warning(embedder: str, texts: Iterable[str]) -> dict | None:
    """The fields of the warning when ``embedder`` (a store's encoder spec) reads English only and at least
    :data:`CHINESE_SHARE` of ``texts`` are mostly Chinese; None otherwise (other encoders cost nothing here)."""
    if embedder not in encoder_kinds.ENGLISH_ONLY:
        return None
    chinese, total = chinese_share(texts)
    if not total or chinese < CHINESE_SHARE * total:
        return None
    return {"encoder": embedder, "chinese": chinese, "messages": total,
            "fix": f"move the store to {encoder_kinds.E5}, which reads Chinese by meaning too: palimpsest --store "
                   f"PATH reembed --embedder {encoder_kinds.E5} (Memory.reembed), or create a store with it"}
