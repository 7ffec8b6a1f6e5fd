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
projection and cached like the other stage tables (rebuilt when the
message count changes).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

from projections.folds.lexical import BM25Params, LexicalIndex
from projections.folds.state import UserMemory


class ConversationIndex:
    """One user's conversations as BM25 documents, with their members in log order."""

    def __init__(self, memory: UserMemory) -> None:
        members: dict[str, list[str]] = {}
        by_id = memory.messages.by_id
        for memory_id in memory.messages.order:
            members.setdefault(by_id[memory_id].conversation_id, []).append(memory_id)
        self.members = members
        self.index = LexicalIndex()
        for conversation, ids in members.items():
            self.index.add(conversation, " ".join(by_id[m].index_text for m in ids))


class _Cache:
    def __init__(self) -> None:
        self._cache: dict[int, tuple[weakref.ref, int, ConversationIndex]] = {}

    def get(self, memory: UserMemory) -> ConversationIndex:
        version = len(memory.messages.order)
        cached = self._cache.get(id(memory))
        if cached is not None and cached[0]() is memory and cached[1] == version:
            return cached[2]
        built = ConversationIndex(memory)
        if len(self._cache) > 1024:
            self._cache = {k: v for k, v in self._cache.items() if v[0]() is not None}
        self._cache[id(memory)] = (weakref.ref(memory), version, built)
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
        for memory_id in members:
            row = by_id.get(memory_id)
            if row is None:
                if not allowed(memory_id):
                    continue
                row = by_id[memory_id] = [0.0, -memory.messages.by_id[memory_id].seq, memory_id, {}]
                rows.append(row)
            row[0] += term
            # the term itself is recorded: it depends on the conversation's length, which the breakdown does not hold
            row[3].update(conversation_rank=rank, conversation_term=round(term, 8))
