"""Features of the best fused rows for the learned ranking stage (:mod:`projections.queries.ranker`).

One row of numbers per candidate, computed from the fusion's breakdown, the
user's projections and the query: how each list ranked it, its cosine and
BM25 against the query relative to the best candidate's, how its neighbours
matched, whether its speaker is named, whether it states a time for a
"when" question, how much of the query it covers, how long it is. Pure and
cheap: a few hundred arithmetic operations per candidate.
"""

from __future__ import annotations

import math
import re

import numpy as np

from projections.folds.state import UserMemory
from projections.queries import rerank
from projections.rules.text import QUERY_STOP, query_tokens, tokenize

_CAPITALISED = re.compile(r"\b[A-Z][A-Za-z'-]+")

FEATURES: tuple[str, ...] = (
    "fused_share", "fused_rank_inv", "cosine", "cosine_gap", "bm25_share", "lexical_term", "dense_term",
    "episode_term", "note_term", "graph_term", "neighbour_cosine", "neighbour_bm25_share", "neighbour_lifted",
    "speaker_named", "named_other_speaker", "states_time_when", "coverage", "log_words", "retention",
    # added with the derived keys (a model may use any subset of FEATURES, by name)
    "context_term", "conversation_term", "clause_term", "same_conversation_as_top", "neighbour_of_top3",
    "conversation_density",
    # added with the second pass for list questions (projections.queries.list_expand)
    "list_expand_term",
    # added with e5's tree rankers (issue 35): what a turn is in its exchange, the question's own shape, and the
    # names it asks about
    "is_question", "after_question", "name_coverage", "query_log_words",
)


def _terms(tables: rerank.Tables, memory: UserMemory, memory_id: str) -> frozenset[str]:
    terms = tables.terms.get(memory_id)
    if terms is None:
        terms = tables.terms[memory_id] = frozenset(tokenize(memory.messages.by_id[memory_id].index_text))
    return terms


def _asks(text: str) -> bool:
    """Whether a turn is a question (its text ends with a question mark): it rarely holds an answer itself."""
    end = text.rstrip()
    return end.endswith("?") or end.endswith("？")


def _names(query: str, speakers: dict[str, str]) -> set[str]:
    """The lexical terms of the capitalised words inside the query (not its first word), the speakers' names
    left out: the people, places and things it asks about."""
    words = _CAPITALISED.findall(query)[1:] if query[:1].isupper() else _CAPITALISED.findall(query)
    spoken = {name.lower() for name in speakers}
    return {t for t in tokenize(" ".join(w for w in words if w.lower() not in spoken)) if t not in QUERY_STOP}


def features(memory: UserMemory, query: str, query_vector: np.ndarray | None, rows: list[list],
             tables: rerank.Tables, rrf_k: int, lexical_kind: str = "lexical") -> np.ndarray:
    """A ``(len(rows), len(FEATURES))`` matrix for the rows (``[score, -seq, id, breakdown]``, best first).

    ``lexical_kind`` is the list that carried the lexical weight (``lexical``: the turn's own text; ``facts`` or
    ``subwords``: a derived key of :mod:`projections.queries.key_index`): ``bm25_share`` and ``lexical_term`` read
    its rank and score.
    """
    n = len(rows)
    if n == 0:
        return np.zeros((0, len(FEATURES)), dtype=np.float64)
    ids = [row[2] for row in rows]
    neighbour_ids = [tables.prev_next.get(m, (None, None)) for m in ids]
    cos: dict[str, float] = {}
    if query_vector is not None:
        wanted = [m for m in dict.fromkeys(ids + [x for pair in neighbour_ids for x in pair if x]) if
                  m in memory.vectors.rows]
        if wanted:
            q = np.asarray(query_vector, dtype=np.float64).ravel()
            q = q / (np.linalg.norm(q) or 1.0)
            mat = np.array([memory.vectors.rows[m].vector for m in wanted], dtype=np.float64)
            sims = mat @ q / np.maximum(np.linalg.norm(mat, axis=1), 1e-12)
            cos = dict(zip(wanted, sims.tolist()))
    rank_key, score_key = ("lexical_rank", "bm25") if lexical_kind == "lexical" else (f"{lexical_kind}_rank",
                                                                                        f"{lexical_kind}_bm25")
    bm25 = {row[2]: round(row[3].get(score_key, 0.0), 6) for row in rows}  # as a hit shows it (retrieval.ROUNDED)
    top_bm25 = max(bm25.values()) or 1.0
    top_cos = max((cos.get(m, 0.0) for m in ids), default=0.0)
    top_score = rows[0][0] or 1.0
    query_terms = set(query_tokens(query))
    named = rerank.named_speakers(query, tables.speakers)
    partial = bool(named) and len(named) < len(tables.speakers)
    when = rerank.time_intent(query)
    by_id = memory.messages.by_id
    conversations = [by_id[m].conversation_id for m in ids]
    per_conversation: dict[str, int] = {}
    for c in conversations:
        per_conversation[c] = per_conversation.get(c, 0) + 1
    near_top = {x for pair in neighbour_ids[:3] for x in pair if x is not None}
    names = _names(query, tables.speakers)
    query_words = math.log1p(len(query.split()))
    table, cos_of, bm25_of, log_words = [], cos.get, bm25.get, tables.log_words
    for i, (row, (prev, nxt)) in enumerate(zip(rows, neighbour_ids)):
        memory_id, b = row[2], row[3]
        msg = by_id[memory_id]
        terms = _terms(tables, memory, memory_id)
        if (words := log_words.get(memory_id)) is None:
            words = log_words[memory_id] = math.log1p(len(msg.text.split()))
        if prev is not None and nxt is not None:  # the best neighbour: max over (prev, next), as max() picks
            near_cos, near_bm25 = max(cos_of(prev, 0.0), cos_of(nxt, 0.0)), max(bm25_of(prev, 0.0), bm25_of(nxt, 0.0))
        elif (only := prev if prev is not None else nxt) is not None:
            near_cos, near_bm25 = cos_of(only, 0.0), bm25_of(only, 0.0)
        else:
            near_cos = near_bm25 = 0.0
        table.append((
            row[0] / top_score,
            1.0 / (i + 1),
            cos.get(memory_id, 0.0),
            cos.get(memory_id, 0.0) - top_cos,
            bm25[memory_id] / top_bm25,
            1.0 / (rrf_k + b[rank_key]) if rank_key in b else 0.0,
            1.0 / (rrf_k + b["dense_rank"]) if "dense_rank" in b else 0.0,
            1.0 / (rrf_k + b["episode_rank"]) if "episode_rank" in b else 0.0,
            1.0 / (rrf_k + b["note_rank"]) if "note_rank" in b else 0.0,
            1.0 / (rrf_k + b["graph_rank"]) if "graph_rank" in b else 0.0,
            near_cos,
            near_bm25 / top_bm25,
            1.0 if "neighbour_of" in b else 0.0,
            1.0 if partial and msg.speaker in named else 0.0,
            1.0 if partial and msg.speaker not in named else 0.0,
            1.0 if when and memory_id in tables.timed else 0.0,
            len(query_terms & terms) / len(query_terms) if query_terms else 0.0,
            words,
            min(round(b.get("retention", 0.0), 6), 2.0),
            1.0 / (rrf_k + b.get("context_rank", b.get("context_prev_rank", 0))) if (
                "context_rank" in b or "context_prev_rank" in b) else 0.0,
            b.get("conversation_term", 0.0),
            1.0 / (rrf_k + b["clause_rank"]) if "clause_rank" in b else 0.0,
            1.0 if conversations[i] == conversations[0] else 0.0,
            1.0 if memory_id in near_top else 0.0,
            per_conversation[conversations[i]] / n,
            1.0 / (rrf_k + b["list_expand_rank"]) if "list_expand_rank" in b else 0.0,
            1.0 if _asks(msg.text) else 0.0,
            1.0 if prev is not None and _asks(by_id[prev].text) else 0.0,
            len(names & terms) / len(names) if names else 0.0,
            query_words,
        ))
    return np.array(table, dtype=np.float64)
