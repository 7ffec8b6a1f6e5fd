"""How two notes' key terms match: exactly, or (Chinese terms of two or more characters) one inside the other.

jieba may glue a word into a longer one (喝咖啡 ⊃ 咖啡), so Chinese terms match by containment. Used by
:mod:`projections.rules.contradiction`.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from projections.rules.text import has_cjk


@lru_cache(maxsize=262_144)
def cjk(term: str) -> bool:
    return has_cjk(term)


@lru_cache(maxsize=65_536)
def index(terms: tuple[str, ...]) -> tuple[frozenset[str], tuple[str, ...], frozenset[str]]:
    """The terms as a set, those that can match by containment (Chinese, longer than one character), and the
    character bigrams of the latter.

    One term of two or more characters inside another shares every bigram of its own with it, so two sets of
    such terms without a common bigram hold no containment pair (most pairs of Chinese notes): the bigrams rule
    them out before any substring test.
    """
    nested = tuple(t for t in terms if len(t) > 1 and cjk(t))
    return frozenset(terms), nested, frozenset().union(*map(bigrams, nested))


@lru_cache(maxsize=65_536)
def bigrams(term: str) -> frozenset[str]:
    return frozenset(term[i:i + 2] for i in range(len(term) - 1))


def hit(x: str, y: str) -> bool:
    # jieba may glue a word into a longer one (喝咖啡 ⊃ 咖啡); Chinese terms match by containment.
    return x == y or (cjk(x) and cjk(y) and min(len(x), len(y)) > 1 and (x in y or y in x))


@lru_cache(maxsize=65_536)
def probes(terms: tuple[str, ...]) -> tuple[tuple[str, frozenset[str] | None], ...]:
    """Each term with its bigrams when it can match by containment (Chinese, two or more characters), else None.

    A statement's terms are matched against note after note: read once, not per pair (MemDaily dev ingest:
    136,588 terms tested in 57,188 calls, each through the memos of ``cjk`` and ``bigrams``)."""
    return tuple((t, bigrams(t) if len(t) > 1 and cjk(t) else None) for t in terms)


def matches(a: Sequence[str], b: Sequence[str]) -> tuple[str, ...]:
    """The terms of ``a`` found in ``b`` (by :func:`hit`, with ``b`` read once)."""
    same, nested, grams = index(tuple(b))
    if not nested:  # nothing in b to contain or be contained: exact matches only
        return tuple(x for x in a if x in same)
    return tuple(x for x, x_grams in probes(tuple(a)) if x in same or (
        x_grams is not None and not grams.isdisjoint(x_grams) and any(x in y or y in x for y in nested)))


def cache_clear() -> None:
    """Empty this module's memos (they hold key terms, words of what was said)."""
    for memo in (cjk, index, bigrams, probes):
        memo.cache_clear()


def covers(a: Sequence[str], b: Sequence[str]) -> bool:
    """Every term of a non-empty ``a`` is in ``b`` ("Paris" is covered by "Paris with my wife")."""
    return bool(a) and len(matches(a, b)) == len(a)


def jaccard(a: Sequence[str], b: Sequence[str]) -> float:
    shared = len(matches(a, b))
    union = len(set(a)) + len(set(b)) - shared
    return shared / union if union else 0.0
