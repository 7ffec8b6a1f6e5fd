"""The conversation-document stage: whole conversations (sessions) ranked by BM25 as single documents.

A question is often about one conversation as a whole: "A与B相比，哪个活动的
规模更大？", "有几个人在下半年过生日？另外，有几个活动在青岛？" name terms
that no single turn holds together but one conversation does. Each
conversation of the user is indexed as one BM25 document (the index text of
its turns, concatenated); the members of the ``candidates`` best-matching
conversations get ``weight / (rrf_k + conversation rank)``, scaled by
``min(1, fit / conversation length)`` when ``fit`` is set: a short
conversation, whose turns can all sit in the first results, is lifted whole,
while a long one (a LoCoMo session of 20-40 turns) only gets a share, since
lifting forty turns equally would push the one that answers down.

Pure: the per-user conversation index is derived from the message
projection and cached, brought up to date in place when turns are added.
"""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Callable

from projections.folds.lexical import BM25Params, LexicalIndex
from projections.folds.state import UserMemory
from projections.rules.text import tokenize


class ConversationIndex:
    """One user's conversations as BM25 documents, with their members in log order.

    Kept up to date in place (:meth:`sync`): a new turn is appended to its
    conversation's document (the concatenated text's terms are the sum of its
    turns' terms, so the document is the one a rebuild would give) or starts one.
    """

    def __init__(self, memory: UserMemory | None = None) -> None:
        self.members: dict[str, list[str]] = {}
        self.index = LexicalIndex()
        self._slot: dict[str, int] = {}
        self._counts: list[Counter] = []
        self._by_id: dict | None = None
        self._seen = 0
        if memory is not None:
            self.sync(memory)

    def sync(self, memory: UserMemory) -> bool:
        """Add the turns recorded since the last sync; False when it cannot follow (the caller rebuilds)."""
        order, by_id = memory.messages.order, memory.messages.by_id
        if self._by_id is not None and (by_id is not self._by_id or len(order) < self._seen):
            return False
        self._by_id = by_id
        new: dict[str, list[str]] = {}
        for memory_id in order[self._seen:]:
            new.setdefault(by_id[memory_id].conversation_id, []).append(memory_id)
        self._seen = len(order)
        for conversation, ids in new.items():
            tokens = tokenize(" ".join(by_id[m].index_text for m in ids))
            self.members.setdefault(conversation, []).extend(ids)
            doc = self._slot.get(conversation)
            if doc is None:
                self._slot[conversation] = len(self._counts)
                self._counts.append(Counter(tokens))
                self.index.add_terms(conversation, tokens)
            else:
                old = self._counts[doc]
                self._counts[doc] = self.index.replace_terms(doc, old, list((old + Counter(tokens)).elements()))
        return True


def build(memory: UserMemory) -> LexicalIndex:
    """The conversation index built from scratch (what :class:`ConversationIndex` keeps up to date)."""
    members: dict[str, list[str]] = {}
    by_id = memory.messages.by_id
    for memory_id in memory.messages.order:
        members.setdefault(by_id[memory_id].conversation_id, []).append(memory_id)
    index = LexicalIndex()
    for conversation, ids in members.items():
        index.add(conversation, " ".join(by_id[m].index_text for m in ids))
    return index


class _Cache:
    def __init__(self) -> None:
        self._cache: dict[int, tuple[weakref.ref, ConversationIndex]] = {}

    def get(self, memory: UserMemory) -> ConversationIndex:
        cached = self._cache.get(id(memory))
        if cached is not None and cached[0]() is memory and cached[1].sync(memory):
            return cached[1]
        built = ConversationIndex(memory)
        if len(self._cache) > 1024:
            self._cache = {k: v for k, v in self._cache.items() if v[0]() is not None}
        self._cache[id(memory)] = (weakref.ref(memory), built)
        return built


CONVERSATIONS = _Cache()


def conversation_term(memory: UserMemory, query: str, rows: list[list], weight: float, rrf_k: int,
                      candidates: int, fit: int, params: BM25Params, allowed: Callable[[str], bool]) -> None:
    """Add the conversation term to ``rows`` (``[score, -seq, id, breakdown]``); members not yet rows join."""
    conversations = CONVERSATIONS.get(memory)
    ranked = conversations.index.search(query, candidates, params)
    if not ranked:
        return
    by_id = {row[2]: row for row in rows}
    for rank, (conversation, _) in enumerate(ranked, start=1):
        members = conversations.members[conversation]
        term = weight / (rrf_k + rank) * (min(1.0, fit / len(members)) if fit > 0 else 1.0)
        shown = round(term, 8)
        for memory_id in members:
            row = by_id.get(memory_id)
            if row is None:
                if not allowed(memory_id):
                    continue
                row = by_id[memory_id] = [0.0, -memory.messages.by_id[memory_id].seq, memory_id, {}]
                rows.append(row)
            row[0] += term
            # the term itself is recorded: it depends on the conversation's length, which the breakdown does not hold
            row[3].update(conversation_rank=rank, conversation_term=shown)
