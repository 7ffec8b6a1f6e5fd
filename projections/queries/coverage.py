"""Coverage-aware selection: the best rows re-ordered by maximal marginal relevance (MMR) over their terms.

A list or aggregate question ("What foods has Melanie cooked?", "有几个活动的
规模超过了五百人？") has several evidence turns that each name a different
item; ranked by relevance alone, the first results can all tell the same
item (the turn that matched best, its reply, its repetition in a later
session) while the turns naming the other items sit just below the cut.
This stage re-orders the best ``depth`` rows greedily: each next row is the
one with the best

    relevance − weight × redundancy

where relevance is the row's score min-max normalised over the window (so it
works on fused RRF scores and on the ranker's ``base + p`` alike) and
redundancy is the IDF-weighted share of the row's own terms (its lexical
terms minus the query's) that the rows already chosen cover (``mode``
"terms"), or its highest cosine to a row already chosen (``mode`` "dense",
the stored turn vectors: classic MMR). A row that adds
new content (another item, another person) moves up; a row that repeats what
is already there moves down. Rows below the window keep their order; a
context assembled from the hits sees the same order, so the budgeted context
covers more items too.

Pure: the terms come from the user's lexical projection (the cached per-turn
term sets of :mod:`projections.queries.rerank`), nothing is written.
"""

from __future__ import annotations

import math
import re

import numpy as np

from projections.folds.state import UserMemory
from projections.queries.rerank import Tables
from projections.rules.text import tokenize


# Questions that ask for several items (a list, a count, what two people share), English and Chinese.
LIST_INTENT = re.compile(
    r"\b(?:both|all|any|each|every|some|several|list|kinds? of|types? of|ways?|things|activities|hobbies|places|"
    r"events|what are|what were|which \w+s\b|how many|in common)\b"
    r"|几个|几位|几家|几次|多少|哪些|分别|都有|一共|总共|共同",
    re.IGNORECASE,
)


def list_intent(query: str) -> bool:
    """Whether the question asks for several items (rules; the ``coverage_lists_only`` gate)."""
    return bool(LIST_INTENT.search(query))


def _terms(memory: UserMemory, tables: Tables, memory_id: str) -> frozenset[str]:
    terms = tables.terms.get(memory_id)
    if terms is None:
        terms = tables.terms[memory_id] = frozenset(tokenize(memory.messages.by_id[memory_id].index_text))
    return terms


def _idf(memory: UserMemory, term: str) -> float:
    lexical = memory.lexical
    n = len(lexical.doc_ids)
    df = len(lexical.postings.get(term, ()))
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


def _dense_redundancy(memory: UserMemory, window: list[list]) -> np.ndarray | None:
    """Pairwise cosine of the window's stored vectors (0 where a row has none); None when none has one."""
    rows = memory.vectors.rows
    vectors = [rows[r[2]].vector if r[2] in rows else None for r in window]
    dim = next((len(v) for v in vectors if v is not None), 0)
    if not dim:
        return None
    m = np.stack([np.asarray(v, dtype=np.float32) if v is not None else np.zeros(dim, np.float32) for v in vectors])
    m /= np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)
    return np.clip(m @ m.T, 0.0, 1.0)


def select(memory: UserMemory, query: str, rows: list[list], tables: Tables, weight: float, depth: int,
           mode: str = "terms") -> None:
    """Re-order ``rows[:depth]`` (``[score, -seq, id, breakdown]``, sorted) by MMR over their non-query terms.

    The window keeps its set of scores, handed out in the new order so that
    scores still sort the list; a moved row's breakdown records its
    ``coverage_redundancy`` and the rank it came from (``coverage_from``). A
    window of fewer than three rows, or ``weight`` 0, changes nothing.
    """
    window = rows[:depth]
    if weight <= 0 or len(window) < 3:
        return
    similar = _dense_redundancy(memory, window) if mode == "dense" else None
    asked = set(tokenize(query)) if similar is None else set()
    idf: dict[str, float] = {}
    own: list[dict[str, float]] = []
    for row in window:
        terms = {}
        for term in (_terms(memory, tables, row[2]) - asked if similar is None else ()):
            if term not in idf:
                idf[term] = _idf(memory, term)
            terms[term] = idf[term]
        own.append(terms)
    top, low = window[0][0], window[-1][0]
    span = top - low
    relevance = [(row[0] - low) / span if span > 0 else 1.0 for row in window]
    covered: set[str] = set()
    remaining = list(range(len(window)))
    order: list[int] = []
    redundancy = [0.0] * len(window)
    while remaining:
        best, best_value = remaining[0], float("-inf")
        for i in remaining:
            if similar is not None:
                red = float(similar[i, order].max()) if order else 0.0
            else:
                total = sum(own[i].values())
                red = sum(w for t, w in own[i].items() if t in covered) / total if total > 0 else 0.0
            redundancy[i] = red
            value = relevance[i] - weight * red
            if value > best_value:  # ties: the earlier row (strictly greater)
                best, best_value = i, value
        order.append(best)
        remaining.remove(best)
        covered.update(own[best])
    scores = [row[0] for row in window]
    for position, i in enumerate(order):
        if position != i:
            window[i][3].update(coverage_redundancy=round(redundancy[i], 6), coverage_from=i + 1)
            window[i][0] = scores[position]  # the window's scores, in order: scores still sort the list
    rows[: len(window)] = [window[i] for i in order]
