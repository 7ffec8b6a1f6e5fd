"""Lexical projection: an incremental BM25 index over one user's messages.

Postings are built by the fold; scores are computed at query time from the
current statistics, so adding a document never rewrites earlier ones.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from weakref import finalize

import numpy as np

from events.envelope import Envelope
from events.model import MessageRecorded
from projections.rules.text import query_tokens, text_tokens, tokenize


@dataclass(frozen=True, slots=True)
class BM25Params:
    k1: float = 1.2
    b: float = 0.75


@dataclass
class LexicalIndex:
    doc_ids: list[str] = field(default_factory=list)
    doc_len: list[int] = field(default_factory=list)
    postings: dict[str, dict[int, int]] = field(default_factory=dict)
    total_len: int = 0

    def canonical(self) -> list:
        return [self.doc_ids, self.doc_len, sorted((t, sorted(p.items())) for t, p in self.postings.items())]

    def add(self, doc_id: str, text: str) -> None:
        """Index one more document (earlier postings are never rewritten)."""
        self.add_terms(doc_id, tokenize(text))

    def add_parts(self, doc_id: str, parts: tuple[str, ...]) -> None:
        """:meth:`add` of the parts joined by spaces, or by ``": "`` (:func:`~events.model.index_text`): a space
        or a colon ends every token, so the tokens are the parts' own, taken from :func:`text_tokens`, which the
        rules that read the same texts at ingest have filled (the classification's key terms read a message's
        text, the note decider a note's)."""
        self.add_terms(doc_id, [token for part in parts for token in text_tokens(part)])

    def add_terms(self, doc_id: str, tokens: list[str]) -> None:
        """:meth:`add` for a document already tokenized."""
        doc = len(self.doc_ids)
        self.doc_ids.append(doc_id)
        self.doc_len.append(len(tokens))
        self.total_len += len(tokens)
        for term, tf in Counter(tokens).items():
            self.postings.setdefault(term, {})[doc] = tf

    def replace_terms(self, doc: int, old: Counter, tokens: list[str]) -> Counter:
        """Re-index document number ``doc`` (its terms were ``old``) as ``tokens``; returns the new term counts.

        For a derived index kept up to date in place (a document's text changed):
        the postings, lengths and the search's array cache end as if the index had
        been built from scratch with the new text in that position.
        """
        new = Counter(tokens)
        touched = [term for term in old.keys() | new.keys() if old.get(term) != new.get(term)]
        for term in touched:
            posting = self.postings.setdefault(term, {})
            if term in new:
                posting[doc] = new[term]
            else:
                posting.pop(doc, None)
                if not posting:
                    del self.postings[term]
        self.total_len += len(tokens) - self.doc_len[doc]
        self.doc_len[doc] = len(tokens)
        cache = _ARRAYS.get(id(self))
        if cache is not None:
            for term in touched:  # a posting may keep its length and still change: drop its arrays
                cache.postings.pop(term, None)
            cache.weights.clear()  # a length changed: every weight may differ (the stamp may not)
            if len(cache.doc_len) == len(self.doc_len):
                cache.doc_len[doc] = len(tokens)
        return new

    def search(self, query: str, k: int, params: BM25Params = BM25Params()) -> list[tuple[str, float]]:
        """Top-``k`` (event id, BM25 score) pairs, best first; ties broken by log order."""
        return self.search_terms(query_tokens(query), k, params)

    def search_terms(self, query_terms: list[str] | tuple[str, ...], k: int,
                     params: BM25Params = BM25Params()) -> list[tuple[str, float]]:
        """:meth:`search` for a query already tokenized (an index whose documents were tokenized otherwise).

        Vectorised per query term over the term's postings (kept as arrays in
        :data:`_ARRAYS`, rebuilt when a posting grows, with each term's weights
        while the index and the parameters stay the same); each document's score
        adds the terms' contributions in the same order and with the same
        arithmetic as the scalar formula, so the figures are the same floats.
        """
        n = len(self.doc_ids)
        if n == 0:
            return []
        avgdl = self.total_len / n or 1.0
        cache = _arrays(self)
        lengths = cache.lengths(self.doc_len)
        scores = np.zeros(n)
        touched = np.zeros(n, dtype=bool)
        k1, b = params.k1, params.b
        stamp = (n, self.total_len, k1, b)
        for term in sorted(set(query_terms)):  # a fixed order: float sums must not follow the per-process str hash
            posting = self.postings.get(term)
            if not posting:
                continue
            docs, tf = cache.posting(term, posting)
            weighed = cache.weights.get(term)
            if weighed is None or weighed[0] != stamp or weighed[1] is not docs:
                df = len(posting)
                idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
                norm = tf + k1 * (1 - b + b * lengths[docs] / avgdl)
                weighed = cache.weights[term] = (stamp, docs, idf * tf * (k1 + 1) / norm)
            scores[docs] += weighed[2]
            touched[docs] = True
        docs = np.flatnonzero(touched)
        if len(docs) > k:  # the k best, then exact order among them (ties: the earlier document)
            cut = np.partition(scores[docs], len(docs) - k)[len(docs) - k]
            docs = docs[scores[docs] >= cut]
        order = docs[np.lexsort((docs, -scores[docs]))][:k]
        doc_ids = self.doc_ids
        return [(doc_ids[doc], score) for doc, score in zip(order.tolist(), scores[order].tolist())]


class _Arrays:
    """A derived cache of one index: its postings and document lengths as arrays (never folded or saved)."""

    __slots__ = ("postings", "doc_len", "weights")

    def __init__(self) -> None:
        self.postings: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        # term -> ((documents, total length, k1, b), its docs array, each doc's BM25 term weight): reused while the
        # index and the parameters stay the same
        self.weights: dict[str, tuple[tuple, np.ndarray, np.ndarray]] = {}
        self.doc_len = np.zeros(0)

    def posting(self, term: str, posting: dict[int, int]) -> tuple[np.ndarray, np.ndarray]:
        cached = self.postings.get(term)
        if cached is None or len(cached[0]) != len(posting):  # postings only grow
            cached = (np.fromiter(posting.keys(), np.int64, len(posting)),
                      np.fromiter(posting.values(), np.float64, len(posting)))
            self.postings[term] = cached
        return cached

    def lengths(self, doc_len: list[int]) -> np.ndarray:
        if len(self.doc_len) != len(doc_len):
            self.doc_len = np.asarray(doc_len, dtype=np.float64)
        return self.doc_len


_ARRAYS: dict[int, _Arrays] = {}  # id of a live index → its arrays (dropped with the index)


def _arrays(index: LexicalIndex) -> _Arrays:
    cache = _ARRAYS.get(id(index))
    if cache is None:
        cache = _ARRAYS[id(index)] = _Arrays()
        finalize(index, _ARRAYS.pop, id(index), None)
    return cache


# The events evolve reads; the shard fold (projections.folds.state) does not call it for any other.
HANDLES = (MessageRecorded,)


def evolve(state: LexicalIndex, env: Envelope) -> LexicalIndex:
    event = env.event
    if isinstance(event, MessageRecorded):
        state.add_parts(env.event_id, (event.speaker, event.text) if event.speaker else (event.text,))
    return state
