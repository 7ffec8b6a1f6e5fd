"""Derived lexical keys of each turn, ranked by BM25 as extra lists of the fusion (each behind its weight).

The turn's own lexical document (the lexical projection) holds only what was
said. A question is often worded like what was *derived* from the turn, or
like the turns around it. Three derived keys, each a BM25 index with one
document per turn:

- **facts** (``FusionConfig.fact_weight``): the turn's index text followed by
  what was recorded from it as events — the text of every note read from it
  (with the words of what it is about, :func:`projections.rules.note_words.about_words`:
  "allergy allergic food" for "Tom is allergic to kiwi", "live city" for "Tom
  moved to Denver", "hate dislike" for "Tom can't stand olives"),
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
  not know), so "斯凯奇GoWalk5运动鞋" and "运动鞋" share terms; followed by the
  words of what its notes are about (:func:`note_about`: "住 城市" for
  "我搬到青岛了"), not their text.

Pure: every key is read from the folded projections (messages, notes, graph),
never re-derived by rules at query time, so a replayed shard ranks the same.
The indexes are a derived cache per user (:class:`KeyIndex`), brought up to
date in place on the first search after the user's projections moved: a new
turn adds its document, a note or graph memory replaces its source turns'
fact documents; :func:`build` is the same index built from scratch.
"""

from __future__ import annotations

import re
import weakref
from collections import Counter
from itertools import islice

from projections.folds.lexical import BM25Params, LexicalIndex
from projections.folds.state import UserMemory
from projections.rules.note_words import about_words
from projections.rules.text import query_tokens, search_tokens, text_tokens

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


def note_key(note) -> str:
    """A note's part of its turns' fact key: its text and the words of what it is about (:func:`about_words`)."""
    words = about_words(note.language, note.slot, note.category, note.polarity, note.key_terms)
    return f"{note.text} {words}" if words else note.text


def turn_facts(memory: UserMemory) -> dict[str, list[str]]:
    """Per turn, the distinct texts recorded from it: its notes' text and its graph memories' words."""
    facts: dict[str, dict[str, None]] = {}
    by_id = memory.messages.by_id
    for note in memory.notes.notes.values():
        for memory_id in note.source_message_ids:
            facts.setdefault(memory_id, {})[note_key(note)] = None
    for g in memory.graph.memories.values():
        for memory_id in g.source_message_ids:
            msg = by_id.get(memory_id)
            words = [g.subject] if msg is None or g.subject != msg.speaker else []
            words += [g.topic, g.object or ""] + [value for _, value in g.attributes]
            facts.setdefault(memory_id, {})[" ".join(w for w in words if w)] = None
    return {k: list(v) for k, v in facts.items()}


def note_about(note) -> str:
    """A note's part of its turns' subword key: the words of what it is about (:func:`about_words`)."""
    return about_words(note.language, note.slot, note.category, note.polarity, note.key_terms)


def turn_about(memory: UserMemory) -> dict[str, str]:
    """Per turn, the words of what its notes are about (turns whose notes have none are left out)."""
    about: dict[str, dict[str, None]] = {}
    for note in memory.notes.notes.values():
        if words := note_about(note):
            for memory_id in note.source_message_ids:
                about.setdefault(memory_id, {})[words] = None
    return {k: " ".join(v) for k, v in about.items()}


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
        about = turn_about(memory)
        for memory_id in order:
            words = about.get(memory_id)
            text = by_id[memory_id].index_text
            index.add_terms(memory_id, search_tokens(f"{text} {words}" if words else text))
    else:
        raise ValueError(f"key index kind {kind!r}: expected one of {', '.join(KINDS)}")
    return index


def _graph_words(g, msg) -> str:
    """A graph memory's words in the fact key of its source turn ``msg`` (the subject unless it is the speaker)."""
    words = [g.subject] if msg is None or g.subject != msg.speaker else []
    words += [g.topic, g.object or ""] + [value for _, value in g.attributes]
    return " ".join(w for w in words if w)


class KeyIndex:
    """One user's ``kind`` index kept up to date in place: the same postings :func:`build` would give.

    :meth:`sync` brings it to the user's current projections: a new turn adds its
    document (and, for the context key, replaces its previous turn's document, which
    gains a next turn); a new note or graph memory, or a note that gained a source
    turn (a boost), replaces its source turns' fact documents. No document is
    re-tokenized unless its text changed. Anything it cannot follow (the message,
    note or graph dicts replaced, the log order rewritten) rebuilds it.
    """

    def __init__(self, kind: str) -> None:
        if kind not in KINDS:
            raise ValueError(f"key index kind {kind!r}: expected one of {', '.join(KINDS)}")
        self.kind = kind
        self.index = LexicalIndex()
        self.slot: dict[str, int] = {}  # turn id -> document number
        self.counts: list[Counter] = []  # each document's term counts (what a replacement removes)
        self.texts: list[str] = []
        self.version: tuple = ()
        self.owners: tuple = ()
        self.last: dict[str, str] = {}  # conversation -> its last turn so far (context keys)
        self.prev: dict[str, str] = {}
        self.nxt: dict[str, str] = {}
        self.notes: dict = {}  # note id -> the note object last seen (facts key)
        self.note_pos: dict[str, int] = {}
        self.graph_seen = 0
        self.turn_notes: dict[str, list[str]] = {}  # turn -> note ids naming it, in the notes' dict order
        self.turn_graph: dict[str, list] = {}  # turn -> its graph memories, in the graph's dict order

    def sync(self, memory: UserMemory) -> bool:
        """Apply what changed since the last sync; False when it cannot follow (the caller rebuilds)."""
        version = (memory.head, len(memory.messages.order), len(memory.notes.notes), len(memory.graph.memories))
        if version == self.version:
            return True
        owners = (memory.messages.by_id, memory.notes.notes, memory.graph.memories)
        order = memory.messages.order
        seen = len(self.slot)
        if self.owners and (any(a is not b for a, b in zip(owners, self.owners)) or len(order) < seen
                            or (seen and order[seen - 1] != self.index.doc_ids[seen - 1])):
            return False
        self.owners = owners
        dirty = self._fact_changes(memory) if self.kind in ("facts", "subwords") else set()
        by_id = memory.messages.by_id
        for memory_id in order[seen:]:
            msg = by_id[memory_id]
            before = self.last.get(msg.conversation_id)
            if before is not None:
                self.prev[memory_id], self.nxt[before] = before, memory_id
                if self.kind == "context":
                    dirty.add(before)
            self.last[msg.conversation_id] = memory_id
            self._put(memory_id, self._parts(memory, memory_id))
        for memory_id in dirty:
            if memory_id in self.slot:
                parts = self._parts(memory, memory_id)
                if " ".join(parts) != self.texts[self.slot[memory_id]]:
                    self._put(memory_id, parts)
        self.version = version
        return True

    def _fact_changes(self, memory: UserMemory) -> set[str]:
        """Record new notes, boosted notes and new graph memories; the turns whose fact text may have changed."""
        dirty: set[str] = set()
        for note_id, note in memory.notes.notes.items():
            old = self.notes.get(note_id)
            if old is note:
                continue
            self.notes[note_id] = note
            if old is None:
                self.note_pos[note_id] = len(self.note_pos)
            elif old.source_message_ids == note.source_message_ids and note_key(old) == note_key(note):
                continue
            gained = [m for m in note.source_message_ids if old is None or m not in old.source_message_ids]
            for memory_id in gained:
                ids = self.turn_notes.setdefault(memory_id, [])
                ids.append(note_id)
                ids.sort(key=self.note_pos.__getitem__)
            dirty.update(note.source_message_ids)
        graph = memory.graph.memories
        for g in islice(graph.values(), self.graph_seen, None):  # graph memories are only ever added
            for memory_id in g.source_message_ids:
                self.turn_graph.setdefault(memory_id, []).append(g)
                dirty.add(memory_id)
        self.graph_seen = len(graph)
        return dirty

    def _parts(self, memory: UserMemory, memory_id: str) -> list[str]:
        """The texts whose join (by a space) is the turn's document: its index text and its facts, or the turns
        around it."""
        by_id = memory.messages.by_id
        if self.kind == "facts":
            notes = memory.notes.notes
            msg = by_id[memory_id]
            facts = dict.fromkeys([note_key(notes[n]) for n in self.turn_notes.get(memory_id, ())]
                                  + [_graph_words(g, msg) for g in self.turn_graph.get(memory_id, ())])
            extra = spelled_dates(" ".join(facts))
            return [msg.index_text, extra] if extra else [msg.index_text]
        if self.kind == "subwords":
            notes = memory.notes.notes
            about = " ".join(dict.fromkeys(w for w in (note_about(notes[n]) for n in self.turn_notes.get(memory_id, ()))
                                           if w))
            return [by_id[memory_id].index_text, about] if about else [by_id[memory_id].index_text]
        around = [self.prev.get(memory_id), memory_id] + ([self.nxt.get(memory_id)] if self.kind == "context" else [])
        return [by_id[m].index_text for m in around if m is not None]

    def _put(self, memory_id: str, parts: list[str]) -> None:
        text = " ".join(parts)  # tokenized part by part: a turn's tokens are shared by the keys that hold it
        tokens = search_tokens(text) if self.kind == "subwords" else [t for part in parts for t in text_tokens(part)]
        doc = self.slot.get(memory_id)
        if doc is None:
            self.slot[memory_id] = len(self.counts)
            self.counts.append(Counter(tokens))
            self.texts.append(text)
            self.index.add_terms(memory_id, tokens)
        else:
            self.counts[doc] = self.index.replace_terms(doc, self.counts[doc], tokens)
            self.texts[doc] = text


class _Cache:
    def __init__(self) -> None:
        self._cache: dict[tuple[int, str], tuple[weakref.ref, KeyIndex]] = {}

    def get(self, memory: UserMemory, kind: str) -> LexicalIndex:
        cached = self._cache.get((id(memory), kind))
        if cached is not None and cached[0]() is memory and cached[1].sync(memory):
            return cached[1].index
        fresh = KeyIndex(kind)
        fresh.sync(memory)
        if len(self._cache) > 1024:
            self._cache = {k: v for k, v in self._cache.items() if v[0]() is not None}
        self._cache[(id(memory), kind)] = (weakref.ref(memory), fresh)
        return fresh.index


INDEXES = _Cache()


def search(memory: UserMemory, kind: str, query: str, k: int, params: BM25Params) -> list[tuple[str, float]]:
    """The ``k`` turns whose ``kind`` key matches ``query`` best, with their BM25 scores (ties: log order)."""
    index = INDEXES.get(memory, kind)
    terms = query_tokens(query, kind == "subwords")
    return index.search_terms(terms, k, params)
