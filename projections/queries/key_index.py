"""Derived lexical keys of each turn, ranked by BM25 as extra lists of the fusion (each behind its weight).

The turn's own lexical document (the lexical projection) holds only what was
said. A question is often worded like what was *derived* from the turn, or
like the turns around it. Three derived keys, each a BM25 index with one
document per turn:

- **facts** (``FusionConfig.fact_weight``): the turn's index text followed by
  what was recorded from it as events — the text of every note read from it,
  its graph memories' subject (when not the speaker), topic, object and
  attribute values — with every resolved ISO date also written with its
  month's name ("2023-05-07" → "2023-05-07 May 7 2023"), so "yesterday" in a
  turn matches "in May 2023" in a question (LongMemEval's fact-augmented keys).
- **context** (``FusionConfig.context_weight``): the turn with its previous and
  next turn of the same conversation (``context_window`` "both"), or with the
  previous one only ("prev": the turn and the question it answers).
- **subwords** (``FusionConfig.subword_weight``, Chinese queries only): the
  turn's index text tokenized with :func:`projections.rules.text.search_tokens`
  (jieba search-mode sub-words and the character bigrams of words jieba does
  not know), so "斯凯奇GoWalk5运动鞋" and "运动鞋" share terms.

Pure: every key is read from the folded projections (messages, notes, graph),
never re-derived by rules at query time, so a replayed shard ranks the same.
The indexes are a derived cache per user, rebuilt when the user's message,
note or graph-memory count changes (like the conversation documents of
:mod:`projections.queries.session_docs`).
"""

from __future__ import annotations

import re
import weakref

from projections.folds.lexical import BM25Params, LexicalIndex
from projections.folds.state import UserMemory
from projections.rules.text import search_tokens, tokenize

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})(?:-(\d{2}))?\b")
KINDS = ("facts", "context", "context_prev", "subwords")


def spelled_dates(text: str) -> str:
    """``text`` with each ISO date (or year-month) followed by its month's name, day and year."""
    def spell(m: re.Match) -> str:
        month = int(m.group(2))
        if not 1 <= month <= 12:
            return m.group(0)
        day = f" {int(m.group(3))}" if m.group(3) else ""
        return f"{m.group(0)} {MONTHS[month - 1]}{day} {m.group(1)}"
    return ISO_DATE.sub(spell, text)


def turn_facts(memory: UserMemory) -> dict[str, list[str]]:
    """Per turn, the distinct texts recorded from it: its notes' text and its graph memories' words."""
    facts: dict[str, dict[str, None]] = {}
    by_id = memory.messages.by_id
    for note in memory.notes.notes.values():
        for memory_id in note.source_message_ids:
            facts.setdefault(memory_id, {})[note.text] = None
    for g in memory.graph.memories.values():
        for memory_id in g.source_message_ids:
            msg = by_id.get(memory_id)
            words = [g.subject] if msg is None or g.subject != msg.speaker else []
            words += [g.topic, g.object or ""] + [value for _, value in g.attributes]
            facts.setdefault(memory_id, {})[" ".join(w for w in words if w)] = None
    return {k: list(v) for k, v in facts.items()}


def build(memory: UserMemory, kind: str) -> LexicalIndex:
    """One user's ``kind`` index: a document per turn, in log order."""
    by_id = memory.messages.by_id
    index = LexicalIndex()
    order = memory.messages.order
    if kind == "facts":
        facts = turn_facts(memory)
        for memory_id in order:
            extra = spelled_dates(" ".join(facts.get(memory_id, ())))
            index.add(memory_id, f"{by_id[memory_id].index_text} {extra}" if extra else by_id[memory_id].index_text)
    elif kind in ("context", "context_prev"):
        last: dict[str, str] = {}
        nxt: dict[str, str] = {}
        prev: dict[str, str] = {}
        for memory_id in order:
            before = last.get(by_id[memory_id].conversation_id)
            if before is not None:
                prev[memory_id], nxt[before] = before, memory_id
            last[by_id[memory_id].conversation_id] = memory_id
        for memory_id in order:
            around = [prev.get(memory_id), memory_id] + ([nxt.get(memory_id)] if kind == "context" else [])
            index.add(memory_id, " ".join(by_id[m].index_text for m in around if m is not None))
    elif kind == "subwords":
        for memory_id in order:
            index.add_terms(memory_id, search_tokens(by_id[memory_id].index_text))
    else:
        raise ValueError(f"key index kind {kind!r}: expected one of {', '.join(KINDS)}")
    return index


class _Cache:
    def __init__(self) -> None:
        self._cache: dict[tuple[int, str], tuple[weakref.ref, tuple[int, int, int], LexicalIndex]] = {}

    def get(self, memory: UserMemory, kind: str) -> LexicalIndex:
        version = (len(memory.messages.order), len(memory.notes.notes), len(memory.graph.memories))
        cached = self._cache.get((id(memory), kind))
        if cached is not None and cached[0]() is memory and cached[1] == version:
            return cached[2]
        built = build(memory, kind)
        if len(self._cache) > 1024:
            self._cache = {k: v for k, v in self._cache.items() if v[0]() is not None}
        self._cache[(id(memory), kind)] = (weakref.ref(memory), version, built)
        return built


INDEXES = _Cache()


def search(memory: UserMemory, kind: str, query: str, k: int, params: BM25Params) -> list[tuple[str, float]]:
    """The ``k`` turns whose ``kind`` key matches ``query`` best, with their BM25 scores (ties: log order)."""
    index = INDEXES.get(memory, kind)
    terms = search_tokens(query) if kind == "subwords" else tokenize(query)
    return index.search_terms(terms, k, params)
