"""A shard's read indexes, built while it is idle rather than inside the next query.

A user's first search after a load or an ingest builds the derived indexes
the fusion reads (the key indexes, the conversation index, the stage
tables, the dense matrix, the context's token counts): measured on the
MemDaily dev store through ``Memory.search`` on a quiet machine, each of
the 15 users' first searches took 73–135 ms where the others took p50 8 ms,
enough to set the search p95 of a benchmark that asks 40 questions a user.
Once a shard has had no call for :data:`IDLE_S` (5 s), :class:`Warmer` answers
throwaway queries (search and context, with the fusion the last real query
used: an English one, and a Chinese one for a user whose turns hold Chinese
terms) for each resident user whose
turns, graph memories or notes changed since it was last warmed, one user at
a time, stopping as soon as a call arrives. Nothing is written: the touches
those answers would record are dropped. Users a residency cap keeps on disk
are not loaded for it. ``PALIMPSEST_WARM=0`` turns it off.

An ingest of several chunks keeps every shard of the store quiet while it
runs (:meth:`Warmer.quiet`, a lease the driver renews at each chunk and
lets go at the end): a shard that holds none of the chunk's users is idle,
but the machine is not, and its warm-ups and snapshots would take cores from
the encoder. They run once the ingest is over.
"""

from __future__ import annotations

import os
import time

import numpy as np

from actors.commands import BuildContext, Search
from actors.reads import context, search
from projections.queries.retrieval import DEFAULT_FUSION
from projections.rules.text import CJK_RUN

# No command or query for this long: the shard may warm. Longer than the gaps between an ingest's batches: warmed
# between two of them, a user still being written is warmed again after each (measured at 0.5 s on the first
# LoCoMo dev conversation, same machine, one run each: ingest 44.9 msg/s with the warm-up, 63.7 without).
IDLE_S = 5.0
QUERIES = ("what did we talk about last time", "我们上次聊了什么")  # English, Chinese
BUDGET = 1000
# The Chinese query only for a user with Chinese terms: segmenting it loads jieba's dictionary (1-2 s of CPU in a
# process that had no Chinese yet), and an English user's Chinese indexes are empty. Measured with py-spy on both
# shards during a LoCoMo dev ingest: the warm-ups of users whose conversation had ended took 1.9 and 3.0 s of CPU
# from the encoder, 1.2 and 2.3 s of them jieba's start.


def _version(memory) -> tuple:
    return id(memory), len(memory.messages.order), len(memory.graph.memories), len(memory.notes.notes)


class Warmer:
    def __init__(self, dim: int) -> None:
        self.fusion = DEFAULT_FUSION
        self.vector = np.full(dim, 1.0 / np.sqrt(dim), dtype=np.float32)  # any unit vector builds the same caches
        self.last_call = time.monotonic()
        self.quiet_until = 0.0  # no idle work before this (monotonic): an ingest of the store is under way
        self.warmed = 0  # users warmed by this process
        self.enabled = os.environ.get("PALIMPSEST_WARM", "1").strip().lower() not in ("0", "false", "no", "off")
        self._seen: dict[tuple[str, str], tuple] = {}

    def saw(self, queries=()) -> None:
        """A call arrived (a command batch, or these queries): not idle; remember the fusion a query used."""
        self.last_call = time.monotonic()
        for q in queries:
            fusion = getattr(q, "fusion", None)
            if fusion is not None:
                self.fusion = fusion

    def quiet(self, seconds: float) -> None:
        """No idle work for ``seconds`` from now (a lease: renewed by each call, ended by ``quiet(0)``); a call."""
        self.saw()
        self.quiet_until = self.last_call + max(0.0, seconds)

    def idle(self) -> bool:
        now = time.monotonic()
        return self.enabled and now - self.last_call >= IDLE_S and now >= self.quiet_until

    def due(self, core) -> list[tuple[str, str]]:
        """Resident users whose indexes may be behind (call with the projections to yourself)."""
        resident = core.state.users.resident
        for stream in [s for s in self._seen if s not in resident]:
            del self._seen[stream]
        return [s for s, m in resident.items() if self._seen.get(s) != _version(m)]

    def warm(self, core, stream: tuple[str, str]) -> None:
        """Answer the throwaway queries for one user (call with the projections to yourself)."""
        memory = core.state.users.resident.get(stream)
        if memory is None:
            return
        tenant, user_id = stream
        for text in QUERIES if has_chinese(memory) else QUERIES[:1]:
            search(core, Search(tenant=tenant, user_id=user_id, query=text, query_vector=self.vector,
                                fusion=self.fusion, touch_reason=None))
            context(core, BuildContext(tenant=tenant, user_id=user_id, query=text, query_vector=self.vector,
                                       token_budget=BUDGET, fusion=self.fusion))
        self._seen[stream] = _version(memory)
        self.warmed += 1


def has_chinese(memory) -> bool:
    """Whether a user's lexical index holds a Chinese term (a term is a jieba word or a Latin token)."""
    search = CJK_RUN.search
    return any(search(term) for term in memory.lexical.postings)
