"""What a benchmarked system is: a name plus a function question -> Retrieval.

A :class:`Retrieval` holds the turn ids of each ranked result (a note or an
episode may stand for several turns: its provenance) and, per token budget,
the turn ids and token count of the context that would be handed to the LLM.
Ablations ("palimpsest_no_episodes", other fusion weights, ...) are more
``System`` instances; the driver and the metrics do not change.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from actors import commands as c
from benchmarks.dataset import Question
from palimpsest.locomo import TENANT
from projections.queries.retrieval import FusionConfig


@dataclass(frozen=True, slots=True)
class BudgetContext:
    turn_ids: frozenset[str]
    tokens: int


@dataclass(frozen=True, slots=True)
class Retrieval:
    ranked: tuple[frozenset[str], ...]  # turn ids of each result, best first
    contexts: dict[int, BudgetContext]  # token budget -> assembled context

    def top_turns(self, k: int) -> set[str]:
        out: set[str] = set()
        for turns in self.ranked[:k]:
            out |= turns
        return out


@dataclass
class System:
    name: str
    retrieve: Callable[[Question], Retrieval]


def provenance_turns(turn_id: str | None, provenance: dict | None) -> frozenset[str]:
    """The turns a result stands for: its own turn id plus any ``turn_ids`` its provenance records."""
    turns = {turn_id} if turn_id else set()
    extra = (provenance or {}).get("turn_ids") or ()
    turns.update(t for t in extra if t)
    return frozenset(turns)


@dataclass
class PalimpsestSystem:
    """The real system through the public API: ``Memory.search`` and ``Memory.build_context``.

    Latencies are wall time of the API calls (query encoding included):
    ``search_ms`` for the top-k search, ``context_ms`` for the largest budget.
    """

    mem: object  # palimpsest.Memory
    k: int
    budgets: tuple[int, ...]
    name: str = "palimpsest"
    tenant: str = TENANT
    # None: the store's own fusion, its encoder's default unless the store chose one (what ``Memory.search`` uses
    # when it is given none); a store re-embedded to another encoder is then searched with that encoder's fusion
    fusion: FusionConfig | None = None
    search_ms: list[float] = field(default_factory=list)
    context_ms: list[float] = field(default_factory=list)
    # Ablations only: question -> its vector, encoded once for every configuration. The queries then go to the
    # shards as the same commands ``Memory.search``/``build_context`` send, minus the encoding (and a search's
    # touch record); latencies are measured on the system that goes through the public API (``query_vectors`` None).
    query_vectors: dict[str, object] | None = None

    def _search(self, q: Question):
        if self.query_vectors is None:
            return self.mem.search(self.tenant, q.user_id, q.question, k=self.k, fusion=self.fusion, now=q.asked_at)
        return self.mem.shards.ask(self.tenant, q.user_id, c.Search(
            tenant=self.tenant, user_id=q.user_id, query=q.question, query_vector=self.query_vectors[q.question],
            k=self.k, now=q.asked_at, scope="active", fusion=self._fusion(), touch_reason=None))

    def _context(self, q: Question, budget: int):
        if self.query_vectors is None:
            return self.mem.build_context(
                self.tenant, q.user_id, q.question, token_budget=budget, fusion=self.fusion, now=q.asked_at)
        return self.mem.shards.ask(self.tenant, q.user_id, c.BuildContext(
            tenant=self.tenant, user_id=q.user_id, query=q.question, query_vector=self.query_vectors[q.question],
            now=q.asked_at, token_budget=budget, fusion=self._fusion()))

    def _fusion(self) -> FusionConfig:
        return self.fusion if self.fusion is not None else self.mem.settings.fusion

    def retrieve(self, q: Question) -> Retrieval:
        started = time.perf_counter()
        # Asked right after the conversation (``asked_at``): retention is computed then, and the touches the
        # benchmark itself records (later, in wall-clock time) do not count, so questions do not influence each other.
        hits = self._search(q)
        self.search_ms.append((time.perf_counter() - started) * 1000)
        contexts = {}
        timed = max(self.budgets)
        for budget in self.budgets:
            started = time.perf_counter()
            ctx = self._context(q, budget)
            if budget == timed:
                self.context_ms.append((time.perf_counter() - started) * 1000)
            contexts[budget] = BudgetContext(
                frozenset().union(*(provenance_turns(i.turn_id, i.provenance) for i in ctx.items)), ctx.tokens
            )
        ranked = tuple(provenance_turns(h.turn_id, h.provenance) for h in hits)
        return Retrieval(ranked, contexts)

    def as_system(self) -> System:
        return System(self.name, self.retrieve)


def select(systems: Iterable[System], names: list[str] | None) -> list[System]:
    systems = list(systems)
    if not names:
        return systems
    known = {s.name: s for s in systems}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"--systems: unknown {', '.join(unknown)}; choose from {', '.join(known)}")
    return [known[n] for n in names]
