"""Baselines over the same turns and the same embedder: BM25, dense cosine, and their RRF.

Each user's turns form one corpus. The indexed text is the system's own index
text, ``"speaker: text [image: caption]"``. BM25 tokens: lower-cased ``\w+``
runs for every script but Chinese, whose runs are segmented into words with
jieba exactly as the system's own lexical index does
(:func:`projections.rules.text.chinese_words`); a ``\w+`` split would keep a
whole Chinese sentence as one token and make the baseline unfairly weak. Context for a budget: lines
formatted exactly like the system's (``projections.queries.context.format_line``),
taken in rank order and skipped when they do not fit, tokens counted with the
embedding model's tokenizer (``TokenCounter``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import numpy as np

import events.model
from rank_bm25 import BM25Okapi

from benchmarks.dataset import Question
from benchmarks.systems import BudgetContext, Retrieval, System
from projections.adapters.tokens import TokenCounter
from projections.queries.context import format_line
from projections.queries.retrieval import Hit
from projections.rules.text import CJK_RUN, chinese_words

WORD = re.compile(r"\w+")
RRF_K = 60


def bm25_tokens(text: str) -> list[str]:
    """``\w+`` words, lower-cased, with every run of Chinese characters segmented by jieba."""
    lowered = text.lower()
    tokens: list[str] = []
    pos = 0
    for match in CJK_RUN.finditer(lowered):
        tokens.extend(WORD.findall(lowered[pos : match.start()]))
        tokens.extend(chinese_words(match.group()))
        pos = match.end()
    tokens.extend(WORD.findall(lowered[pos:]))
    return tokens


def index_text(message: dict) -> str:
    """Same as ``RecordMessage.index_text``: what the system embeds and indexes."""
    return events.model.index_text(message.get("speaker"), message["text"])


def context_line(message: dict) -> str:
    hit = Hit(
        memory_id=message.get("client_message_id") or "",
        rank=0,
        score=0.0,
        text=message["text"],
        speaker=message.get("speaker"),
        role=message.get("role", "user"),
        occurred_at=datetime.fromisoformat(message["occurred_at"]),
        conversation_id=message.get("conversation_id", "default"),
        turn_id=message.get("turn_id"),
        breakdown={},
        provenance={},
    )
    return format_line(hit)


@dataclass
class TurnCorpus:
    """One user's turns: ids, BM25 index, unit vectors, formatted context lines and their token counts."""

    turn_ids: list[str]
    bm25: BM25Okapi
    vectors: np.ndarray
    line_tokens: np.ndarray

    @classmethod
    def build(cls, messages: list[dict], vectors: np.ndarray, counter: TokenCounter) -> TurnCorpus:
        texts = [index_text(m) for m in messages]
        lines = [context_line(m) for m in messages]
        return cls(
            turn_ids=[m.get("turn_id") or "" for m in messages],
            bm25=BM25Okapi([bm25_tokens(t) for t in texts]),
            vectors=vectors,
            line_tokens=np.asarray(counter.count_many(lines), dtype=np.int64),
        )

    @property
    def total_tokens(self) -> int:
        return int(self.line_tokens.sum())


def build_corpora(
    messages: list[dict], vectors: np.ndarray, user_of: Callable[[dict], str], counter: TokenCounter
) -> dict[str, TurnCorpus]:
    """Split the (message, vector) rows by user; ``vectors`` is aligned with ``messages``."""
    rows: dict[str, list[int]] = {}
    for i, m in enumerate(messages):
        rows.setdefault(user_of(m), []).append(i)
    return {
        user: TurnCorpus.build([messages[i] for i in idx], vectors[idx], counter) for user, idx in rows.items()
    }


# -- rankers: corpus, question, query vector -> every turn index, best first ------------------
def rank_bm25(corpus: TurnCorpus, question: str, _vec: np.ndarray) -> np.ndarray:
    scores = corpus.bm25.get_scores(bm25_tokens(question))
    return np.argsort(-scores, kind="stable")


def rank_dense(corpus: TurnCorpus, _question: str, vec: np.ndarray) -> np.ndarray:
    return np.argsort(-(corpus.vectors @ vec), kind="stable")


def rrf(rankings: list[np.ndarray], k: int = RRF_K) -> np.ndarray:
    """Reciprocal rank fusion of full rankings (rank 1 = best); ties keep turn order."""
    n = len(rankings[0])
    scores = np.zeros(n, dtype=np.float64)
    for order in rankings:
        ranks = np.empty(n, dtype=np.float64)
        ranks[order] = np.arange(1, n + 1)
        scores += 1.0 / (k + ranks)
    return np.argsort(-scores, kind="stable")


def rank_rrf(corpus: TurnCorpus, question: str, vec: np.ndarray) -> np.ndarray:
    return rrf([rank_bm25(corpus, question, vec), rank_dense(corpus, question, vec)])


RANKERS = {"bm25": rank_bm25, "dense": rank_dense, "rrf": rank_rrf}


def pack(corpus: TurnCorpus, order: np.ndarray, budget: int) -> BudgetContext:
    """Greedy fill in rank order; a line that does not fit is skipped and smaller ones may follow."""
    used = 0
    turns: list[str] = []
    smallest = int(corpus.line_tokens.min()) if len(order) else 0
    for i in order:
        size = int(corpus.line_tokens[i])
        if used + size > budget:
            if budget - used < smallest:
                break
            continue
        used += size
        turns.append(corpus.turn_ids[i])
    return BudgetContext(frozenset(turns), used)


@dataclass
class BaselineSystem:
    name: str
    ranker: Callable[[TurnCorpus, str, np.ndarray], np.ndarray]
    corpora: dict[str, TurnCorpus]
    query_vectors: dict[tuple[str, int], np.ndarray]  # (sample_id, qa index) -> unit vector
    k: int
    budgets: tuple[int, ...]

    def retrieve(self, q: Question) -> Retrieval:
        corpus = self.corpora.get(q.user_id)
        if corpus is None:
            return Retrieval((), {b: BudgetContext(frozenset(), 0) for b in self.budgets})
        order = self.ranker(corpus, q.question, self.query_vectors[(q.sample_id, q.index)])
        ranked = tuple(frozenset({corpus.turn_ids[i]}) for i in order[: self.k])
        return Retrieval(ranked, {b: pack(corpus, order, b) for b in self.budgets})

    def as_system(self) -> System:
        return System(self.name, self.retrieve)


def baseline_systems(
    corpora: dict[str, TurnCorpus],
    query_vectors: dict[tuple[str, int], np.ndarray],
    k: int,
    budgets: tuple[int, ...],
) -> list[System]:
    return [BaselineSystem(name, fn, corpora, query_vectors, k, budgets).as_system() for name, fn in RANKERS.items()]
