"""Lexical seeds for graph search: the query's words matched against each memory's labels.

A node vector is the embedding of a short label ("read", "camping trip"); a
whole question ("What books has Melanie read?") is rarely close to it, so
vector seeds alone miss the memories a question names word for word. This
index gives every memory the tokens of its subject, topic, object and
attribute values (:func:`projections.rules.text.tokenize`: light English stemming,
jieba for Chinese), and scores a query by idf-weighted coverage::

    lexical(m) = Σ_{t ∈ Q ∩ T(m)} idf(t) / Σ_{t ∈ Q} idf(t),   idf(t) = ln(1 + N / df(t))

with Q the query's tokens, T(m) the memory's, N the memories indexed and a
word no memory has weighing ln(1 + N), so a question about something the graph
does not hold scores low everywhere. The index grows with the graph (a
memory's labels never change) and is kept beside the state's other caches.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from projections.folds.graph import GraphMemory
from projections.rules.text import tokenize


def memory_tokens(m: GraphMemory) -> frozenset[str]:
    labels = [m.subject, m.topic, m.object or "", *(value for _, value in m.attributes)]
    return frozenset(tokenize(" ".join(labels)))


class LabelIndex:
    """memory id → label tokens, and token → memory ids; :meth:`sync` adds the memories not yet indexed."""

    def __init__(self) -> None:
        self.tokens: dict[str, frozenset[str]] = {}
        self.postings: dict[str, set[str]] = {}

    def sync(self, memories: Mapping[str, GraphMemory]) -> LabelIndex:
        if len(memories) != len(self.tokens):
            for mid, m in memories.items():
                if mid not in self.tokens:
                    toks = self.tokens[mid] = memory_tokens(m)
                    for t in toks:
                        self.postings.setdefault(t, set()).add(mid)
        return self

    def scores(self, query: str, among: Iterable[str] | None = None) -> dict[str, float]:
        """lexical(m) > 0 for every memory (of ``among``, if given) sharing a token with ``query``."""
        q = set(tokenize(query))
        n = len(self.tokens)
        if not q or not n:
            return {}
        idf = {t: math.log1p(n / len(self.postings[t])) if t in self.postings else math.log1p(n) for t in q}
        total = sum(idf.values())
        keep = None if among is None else set(among)
        out: dict[str, float] = {}
        for t in q:
            for mid in self.postings.get(t, ()):
                if keep is None or mid in keep:
                    out[mid] = out.get(mid, 0.0) + idf[t] / total
        return out
