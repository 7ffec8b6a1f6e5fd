"""Load the text rules' dictionaries now instead of on the first text that needs them.

jieba reads its word dictionary (~350k words, ~0.2 s of CPU here from the
cache of :mod:`projections.adapters.jieba_dict`) the first time a Chinese text
is segmented, and its part-of-speech tagger (~0.3 s more) the first time a
Chinese clause is tagged. Each process pays that once: the
shards segment (BM25 terms, notes, classification), the driver also tags (the
graph rules). Lazily, the first Chinese message of a process pays it inside
an ingest or a search; a server, or a benchmark that times steady-state
throughput, loads them at start-up instead (:meth:`palimpsest.Memory.warm_up`).
"""

from __future__ import annotations

import time

LANGUAGES = ("en", "zh")


def check_languages(languages) -> tuple[str, ...]:
    """``languages`` as a tuple of known codes; a ``ValueError`` naming the unknown ones otherwise."""
    if isinstance(languages, str):
        languages = (languages,)
    try:
        out = tuple(dict.fromkeys(languages))
    except TypeError:  # not iterable, or an unhashable item
        raise ValueError(f"{languages!r} is not a list of language codes; give any of {list(LANGUAGES)}") from None
    unknown = [x for x in out if x not in LANGUAGES]
    if unknown:
        raise ValueError(f"unknown language(s) {unknown}; give any of {list(LANGUAGES)}")
    return out


def load(languages=LANGUAGES, *, tagger: bool = False) -> float:
    """Load what the rules of ``languages`` read (Chinese: jieba's dictionary; with ``tagger`` its
    part-of-speech tagger too); the seconds it took (0 when already loaded). English needs nothing loaded."""
    started = time.perf_counter()
    if "zh" in check_languages(languages):
        from projections.adapters import jieba_dict

        jieba_dict.load()  # a no-op once loaded
        if tagger:
            from projections.rules.graph_chinese import load_tagger

            load_tagger()
    return time.perf_counter() - started
