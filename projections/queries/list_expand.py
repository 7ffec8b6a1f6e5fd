"""A second pass for list and aggregation questions: the best hits' own words find the question's other items.

"What books has Tim read?", "What recipes has Joanna made?", "有几个活动的规模超过了五百人？" have
many evidence turns. The first pass finds some (the turns that share the question's words) while the rest
name other items ("I saw you had The Alchemist on there") and rank deep or not at all. They share words with
each other more than with the question: the found turns' distinctive terms (a title's genre, the dish's
ingredients, the trip's place) are the expansion. For a question that asks for several items
(:func:`list_question`: coverage's list cues, or a plural asked for with what/which) this stage

1. takes the best ``seeds`` rows (after the fusion, its stages and the graph term: before the learned ranker,
   which then places what this stage brings in),
2. picks the ``terms`` non-query terms that most of those seeds share (seed count × IDF; a term in one seed
   only counts when ``min_seeds`` is 1),
3. ranks the user's turns by BM25 on the question's terms plus those terms, keeps the turns of the speakers the
   question names (when it names some, not all: "Tim's books" are Tim's turns; their names leave the search, every
   turn of theirs has them), and
4. gives the best ``candidates`` of them ``weight / (rrf_k + rank)``; turns that were not candidates join as
   new rows (when ``allowed``).

Pure: reads the lexical projection and the per-turn term sets of :mod:`projections.queries.rerank`; nothing
is written. A question without list intent, or whose seeds share no term, is left as it was.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from projections.folds.lexical import BM25Params
from projections.folds.state import UserMemory
from projections.queries import coverage, rerank
from projections.rules.text import EN_STOP, has_cjk, query_tokens, tokenize

# Words too common in chat to carry an item: the tokenizer's stop words plus chat words it keeps (IDF alone lets a
# few through in short chats).
STOP = EN_STOP | frozenset("awesome cool get good got great like love nice thank thanks yes".split())


# "What books has Tim read?", "Which cities did Elise visit?": a plural asked for with what/which (the list cues of
# coverage.LIST_INTENT miss these).
PLURAL_QUESTION = re.compile(
    r"^\s*(?:what|which)\s+(?:\w+\s+){0,2}?\w+s\s+(?:has|have|had|did|does|do|is|are|was|were|would|can|could)\b",
    re.IGNORECASE,
)


def list_question(query: str) -> bool:
    """Whether the question asks for several items: coverage's list cues, or a plural after what/which."""
    return coverage.list_intent(query) or PLURAL_QUESTION.search(query) is not None


@dataclass(frozen=True, slots=True)
class ListExpandConfig:
    """The stage's parameters; ``weight`` 0 turns it off (the ``palimpsest_no_list_expand`` ablation)."""

    weight: float = 1.0
    seeds: int = 3
    terms: int = 10
    min_seeds: int = 1
    candidates: int = 20
    speaker_only: bool = True
    lists_only: bool = True
    cjk: bool = True  # Chinese questions too


# Chosen leave-conversations-out on the LoCoMo and REALTALK dev files (benchmarks/variants.py, benchmarks/lab.py).
DEFAULT = ListExpandConfig()


def _terms(memory: UserMemory, tables: rerank.Tables, memory_id: str) -> frozenset[str]:
    terms = tables.terms.get(memory_id)
    if terms is None:
        terms = tables.terms[memory_id] = frozenset(tokenize(memory.messages.by_id[memory_id].index_text))
    return terms


def expansion_terms(memory: UserMemory, query_terms: set[str], seeds: list[str], tables: rerank.Tables,
                    limit: int, min_seeds: int) -> list[str]:
    """The ``limit`` best non-query terms of the seed turns: seeds holding it × its IDF (ties: the term)."""
    counts = Counter(t for m in seeds for t in _terms(memory, tables, m)
                     if t not in query_terms and t not in STOP and len(t) > 1 and not t.isdigit())
    n = max(1, len(memory.lexical.doc_ids))
    scored = []
    for term, count in counts.items():
        if count < min_seeds:
            continue
        df = len(memory.lexical.postings.get(term, ()))
        if df < 2:  # a word only the seed itself says finds nothing new
            continue
        scored.append((-count * math.log(1.0 + (n - df + 0.5) / (df + 0.5)), term))
    return [term for _, term in sorted(scored)[:limit]]


def term(memory: UserMemory, query: str, rows: list[list], config: ListExpandConfig, rrf_k: int, params: BM25Params,
         allowed: Callable[[str], bool]) -> None:
    """Add the stage's term to ``rows`` (``[score, -seq, id, breakdown]``, best first) and re-sort them."""
    if config.weight <= 0 or not rows or (config.lists_only and not list_question(query)) or (
            not config.cjk and has_cjk(query)):
        return
    tables = rerank.TABLES.get(memory)
    query_terms = set(query_tokens(query))
    seeds = [row[2] for row in rows[: config.seeds]]
    extra = expansion_terms(memory, query_terms, seeds, tables, config.terms, config.min_seeds)
    if not extra:
        return
    named = rerank.named_speakers(query, tables.speakers) if config.speaker_only else set()
    if len(named) == len(tables.speakers):
        named = set()
    by_msg = memory.messages.by_id
    seeded = set(seeds)
    names = {t for speaker in named for t in tokenize(speaker)}  # every turn of theirs says them: the filter's job
    ranked = []
    wanted = [*(query_terms - names), *extra]
    for memory_id, _ in memory.lexical.search_terms(wanted, 4 * config.candidates + len(seeds), params):
        if memory_id in seeded or memory_id not in by_msg or not allowed(memory_id):
            continue
        if named and by_msg[memory_id].speaker not in named:
            continue
        ranked.append(memory_id)
        if len(ranked) == config.candidates:
            break
    by_id = {row[2]: row for row in rows}
    for rank, memory_id in enumerate(ranked, start=1):
        row = by_id.get(memory_id)
        if row is None:
            row = by_id[memory_id] = [0.0, -by_msg[memory_id].seq, memory_id, {}]
            rows.append(row)
        row[0] += config.weight / (rrf_k + rank)
        row[3]["list_expand_rank"] = rank
    rows.sort(key=lambda s: (-s[0], s[1]))
