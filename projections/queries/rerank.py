"""Ranking stages applied after the fusion, each behind its own weight in :class:`FusionConfig`.

Rows are the fusion's ``[score, -seq, memory_id, breakdown]`` lists; every
stage reads the folded projections of one user and the scores so far, adds
its term (and its entry in the breakdown) and may add candidates; the caller
re-sorts. Pure: no I/O, no clock, nothing written. The per-user tables they
need (turn neighbours, speakers, turns that state a time) are derived from
the projections and cached by :class:`UserTables`, extended in place when
the user's turns or graph memories are added.

- **neighbours**: the turns just before and after each of the best rows, in
  the same conversation, get ``neighbour_weight`` times that row's score
  (the best such row counts): an answer is often the reply to the turn that
  matched the question, or the next part of a story told over several turns.
- **sessions**: conversations (LoCoMo sessions) ranked by their best row;
  the members of the top ``session_candidates`` get
  ``session_weight / (rrf_k + session rank)``: a topical prior.
- **speaker**: a question that names some but not all of the user's
  speakers ("What pets does Nate have?") lifts the turns those speakers said
  by ``speaker_weight / (rrf_k + 1)``.
- **clauses**: a question made of several parts ("A与B相比，哪个…？另外…",
  "Which cities have both Kate and Elise been to?") is split by rules into
  clauses; each clause's own BM25 ranking adds
  ``clause_weight / (rrf_k + rank)`` (its best clause), so every part of
  the question reaches the candidates and not only the part with the
  rarest words.
- **time**: a question that asks when something happened ("When did…",
  "What year…", 什么时候) lifts the turns that state a time (a graph memory
  read from the turn resolved one) by ``time_weight / (rrf_k + 1)``.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import islice

from projections.folds.state import UserMemory
from projections.queries.candidates import epoch_micros
from projections.rules.text import mainly_chinese, query_tokens

WHEN_INTENT = re.compile(
    r"^\s*when\b|\bwhat (?:year|month|day|date|time)\b|\bhow long ago\b|\bwhich (?:year|month|day)\b"
    r"|什么时候|哪一?天|哪一?年|几月|几号|哪个月|多久以前",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Tables:
    prev_next: dict[str, tuple[str | None, str | None]]  # turn -> (previous, next) in its conversation
    speakers: dict[str, str]  # lower-cased speaker name -> speaker as written
    timed: frozenset[str]  # turns a graph memory with a resolved time was read from
    terms: dict[str, frozenset[str]]  # turn -> its lexical terms, filled on first use (a derived cache)
    last: dict[str, str]  # conversation -> its last turn so far (where the next new turn links)
    times: dict[str, int]  # turn -> when it was recorded, in candidates.epoch_micros
    log_words: dict[str, float]  # turn -> log1p of its number of words (a rank feature), filled on first use
    newest: int | None  # the latest of ``times`` (None: no turn yet, or one recorded with a naive time)
    chinese: dict[str, bool] = field(default_factory=dict)  # turn -> mainly Chinese (text.mainly_chinese), on first use


class UserTables:
    """Derived per-user tables, brought up to date in place when the user's turns or graph memories are added.

    A new turn extends ``prev_next`` (and its previous turn's next) and ``speakers``; a new graph memory with a
    resolved time extends ``timed``; ``terms`` are kept (a turn's terms never change). Anything it cannot follow
    (the message or graph dicts replaced, fewer turns than before) rebuilds them with :func:`build_tables`.
    """

    def __init__(self) -> None:
        self._cache: dict[int, tuple[weakref.ref, tuple, Tables]] = {}

    def get(self, memory: UserMemory) -> Tables:
        order, graph = memory.messages.order, memory.graph.memories
        version = (len(order), len(graph))
        cached = self._cache.get(id(memory))
        if cached is not None and cached[0]() is memory:
            (seen, seen_graph, by_id, memories), tables = cached[1], cached[2]
            if (seen, seen_graph) == version and by_id is memory.messages.by_id and memories is graph:
                return tables
            if by_id is memory.messages.by_id and memories is graph and seen <= len(order) and seen_graph <= len(graph):
                tables = _extend(memory, tables, seen, seen_graph)
                self._cache[id(memory)] = (cached[0], (*version, by_id, graph), tables)
                return tables
        tables = build_tables(memory)
        if len(self._cache) > 1024:
            self._cache = {k: v for k, v in self._cache.items() if v[0]() is not None}
        self._cache[id(memory)] = (weakref.ref(memory), (*version, memory.messages.by_id, graph), tables)
        return tables


def _extend(memory: UserMemory, tables: Tables, seen: int, seen_graph: int) -> Tables:
    """``tables`` with the turns after the first ``seen`` and the graph memories after the first ``seen_graph``."""
    by_id, prev_next, speakers = memory.messages.by_id, tables.prev_next, tables.speakers
    order = memory.messages.order
    last = dict(tables.last)
    for memory_id in order[seen:]:
        msg = by_id[memory_id]
        prev = last.get(msg.conversation_id)
        prev_next[memory_id] = (prev, None)
        if prev is not None:
            prev_next[prev] = (prev_next[prev][0], memory_id)
        last[msg.conversation_id] = memory_id
        if msg.speaker:
            speakers.setdefault(msg.speaker.lower(), msg.speaker)
    timed = tables.timed | _timed(islice(memory.graph.memories.values(), seen_graph, None))
    newest = _note_times(by_id, order[seen:], tables.times, tables.newest if seen else -1)
    return Tables(prev_next, speakers, timed, tables.terms, last, tables.times, tables.log_words, newest,
                  tables.chinese)


def build_tables(memory: UserMemory) -> Tables:
    """The tables built from scratch (what :class:`UserTables` keeps up to date)."""
    by_id = memory.messages.by_id
    last: dict[str, str] = {}
    prev_next: dict[str, list] = {}
    speakers: dict[str, str] = {}
    for memory_id in memory.messages.order:
        msg = by_id[memory_id]
        prev = last.get(msg.conversation_id)
        prev_next[memory_id] = [prev, None]
        if prev is not None:
            prev_next[prev][1] = memory_id
        last[msg.conversation_id] = memory_id
        if msg.speaker:
            speakers.setdefault(msg.speaker.lower(), msg.speaker)
    times: dict[str, int] = {}
    newest = _note_times(by_id, memory.messages.order, times, -1)
    return Tables({k: (v[0], v[1]) for k, v in prev_next.items()}, speakers, _timed(memory.graph.memories.values()),
                  {}, last, times, {}, newest)


def _note_times(by_id: dict, memory_ids, times: dict[str, int], newest: int | None) -> int | None:
    """Record the turns' times in ``times``; the latest of them and ``newest`` (-1: none yet; None: unknown)."""
    for memory_id in memory_ids:
        at = by_id[memory_id].occurred_at
        if at.tzinfo is None:
            newest = None
            continue
        times[memory_id] = micros = epoch_micros(at)
        if newest is not None and micros > newest:
            newest = micros
    return None if newest == -1 else newest


def _timed(graph_memories) -> frozenset[str]:
    return frozenset(m for g in graph_memories if any(k == "time" for k, _ in g.attributes)
                     for m in g.source_message_ids)


TABLES = UserTables()


def named_speakers(query: str, speakers: dict[str, str]) -> set[str]:
    """The user's speakers the query names (whole words, case-insensitive)."""
    lowered = query.lower()
    return {written for name, written in speakers.items()
            if re.search(rf"(?<!\w){re.escape(name)}(?!\w)", lowered)}


def neighbours(memory: UserMemory, rows: list[list], tables: Tables, weight: float, top: int,
               allowed: Callable[[str], bool]) -> list[list]:
    """Rows with the neighbour term added; ``allowed`` neighbours that were not candidates join as new rows."""
    by_id = {row[2]: row for row in rows}
    lift: dict[str, tuple[float, str]] = {}
    for row in rows[:top]:
        for other in tables.prev_next.get(row[2], (None, None)):
            if other is not None and weight * row[0] > lift.get(other, (0.0, ""))[0] and allowed(other):
                lift[other] = (weight * row[0], row[2])
    for memory_id, (term, source) in lift.items():
        row = by_id.get(memory_id)
        if row is None:
            row = by_id[memory_id] = [0.0, -memory.messages.by_id[memory_id].seq, memory_id, {}]
            rows.append(row)
        row[0] += term
        row[3].update(neighbour_of=source, neighbour_term=round(term, 8))
    return rows


def sessions(memory: UserMemory, rows: list[list], weight: float, rrf_k: int, limit: int) -> None:
    by_id = memory.messages.by_id
    best: dict[str, float] = {}
    for row in rows:
        conversation = by_id[row[2]].conversation_id
        best[conversation] = max(best.get(conversation, 0.0), row[0])
    ranked = sorted(best, key=lambda c: -best[c])[:limit]
    rank = {c: i for i, c in enumerate(ranked, start=1)}
    for row in rows:
        r = rank.get(by_id[row[2]].conversation_id)
        if r is not None:
            row[0] += weight / (rrf_k + r)
            row[3]["session_rank"] = r


def speaker(memory: UserMemory, query: str, rows: list[list], tables: Tables, weight: float, rrf_k: int) -> None:
    named = named_speakers(query, tables.speakers)
    if not named or len(named) == len(tables.speakers):
        return
    by_id = memory.messages.by_id
    for row in rows:
        if by_id[row[2]].speaker in named:
            row[0] += weight / (rrf_k + 1)
            row[3]["speaker_named"] = True


CLAUSE_SPLIT = re.compile(
    r"[，,；;？?。!！]|另外|以及|并且|而且|与(?=[^，。？]*相比)|和(?=[^，。？]*相比)|\band\b|\bbesides\b|\bas well as\b"
    r"|\bboth\b|\bor\b",
    re.IGNORECASE,
)


def clauses(query: str) -> list[str]:
    """The parts of a compound question (each with at least one lexical term); one part: not compound."""
    parts = [p.strip() for p in CLAUSE_SPLIT.split(query)]
    return [p for p in parts if query_tokens(p)]


def clause_term(memory: UserMemory, query: str, rows: list[list], weight: float, rrf_k: int, candidates: int,
                params, allowed: Callable[[str], bool]) -> None:
    parts = clauses(query)
    if len(parts) < 2:
        return
    best: dict[str, int] = {}
    for part in parts:
        for rank, (memory_id, _) in enumerate(memory.lexical.search(part, candidates, params), start=1):
            if rank < best.get(memory_id, candidates + 1):
                best[memory_id] = rank
    by_id = {row[2]: row for row in rows}
    for memory_id, rank in best.items():
        row = by_id.get(memory_id)
        if row is None:
            if memory_id not in memory.messages.by_id or not allowed(memory_id):
                continue
            row = by_id[memory_id] = [0.0, -memory.messages.by_id[memory_id].seq, memory_id, {}]
            rows.append(row)
        row[0] += weight / (rrf_k + rank)
        row[3]["clause_rank"] = rank


def time_intent(query: str) -> bool:
    return WHEN_INTENT.search(query) is not None


def timed(query: str, rows: list[list], tables: Tables, weight: float, rrf_k: int) -> None:
    if not time_intent(query):
        return
    for row in rows:
        if row[2] in tables.timed:
            row[0] += weight / (rrf_k + 1)
            row[3]["states_time"] = True


def chinese_flags(memory: UserMemory, memory_ids) -> list[bool]:
    """For each turn, whether it is mainly Chinese (:func:`~projections.rules.text.mainly_chinese`), each
    turn's flag computed once (``Tables.chinese``)."""
    chinese, by_id = TABLES.get(memory).chinese, memory.messages.by_id
    out = []
    for memory_id in memory_ids:
        if (zh := chinese.get(memory_id)) is None:
            msg = by_id.get(memory_id)
            zh = chinese[memory_id] = msg is not None and mainly_chinese(msg.text)
        out.append(zh)
    return out


def other_script(memory: UserMemory, query: str, memory_ids) -> list[bool]:
    """For each turn, whether its main script differs from the query's: a turn in another language than the
    question's."""
    asked = mainly_chinese(query)
    return [zh != asked for zh in chinese_flags(memory, memory_ids)]
