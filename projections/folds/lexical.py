"""Lexical projection: an incremental BM25 index over one user's messages.

Postings are built by the fold; scores are computed at query time from the
current statistics, so adding a document never rewrites earlier ones.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

from events.envelope import Envelope
from events.model import MessageRecorded, index_text
from projections.rules.text import tokenize


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
        tokens = tokenize(text)
        doc = len(self.doc_ids)
        self.doc_ids.append(doc_id)
        self.doc_len.append(len(tokens))
        self.total_len += len(tokens)
        for term, tf in Counter(tokens).items():
            self.postings.setdefault(term, {})[doc] = tf

    def search(self, query: str, k: int, params: BM25Params = BM25Params()) -> list[tuple[str, float]]:
        """Top-``k`` (event id, BM25 score) pairs, best first; ties broken by log order."""
        n = len(self.doc_ids)
        if n == 0:
            return []
        avgdl = self.total_len / n or 1.0
        scores: dict[int, float] = {}
        for term in set(tokenize(query)):
            posting = self.postings.get(term)
            if not posting:
                continue
            df = len(posting)
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            for doc, tf in posting.items():
                norm = tf + params.k1 * (1 - params.b + params.b * self.doc_len[doc] / avgdl)
                scores[doc] = scores.get(doc, 0.0) + idf * tf * (params.k1 + 1) / norm
        best = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:k]
        return [(self.doc_ids[doc], score) for doc, score in best]


# The events evolve reads; the shard fold (projections.folds.state) does not call it for any other.
HANDLES = (MessageRecorded,)


def evolve(state: LexicalIndex, env: Envelope) -> LexicalIndex:
    event = env.event
    if isinstance(event, MessageRecorded):
        state.add(env.event_id, index_text(event.speaker, event.text))
    return state
