"""The benchmarks' Palimpsest system searches a store with the store's own fusion unless it is given one: a store of
another encoder (or one re-embedded to it) is scored with that encoder's fusion, as ``Memory.search`` would."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from types import SimpleNamespace

from actors import commands as c
from benchmarks.dataset import Question
from benchmarks.systems import PalimpsestSystem
from projections.queries.results import Context
from projections.queries.retrieval import DEFAULT_FUSION

STORES_OWN = replace(DEFAULT_FUSION, dense_weight=DEFAULT_FUSION.dense_weight + 0.5)  # e.g. another encoder's
ASKED = datetime(2024, 5, 1, tzinfo=UTC)


class Recorded:
    """What the system asks of a memory: the ``fusion`` of each public call, and the commands sent to the shards."""

    def __init__(self) -> None:
        self.settings = SimpleNamespace(fusion=STORES_OWN)
        self.fusions: list = []
        self.commands: list = []
        self.shards = SimpleNamespace(ask=self._ask)

    def search(self, tenant, user_id, query, *, k, fusion, now):
        self.fusions.append(fusion)
        return []

    def build_context(self, tenant, user_id, query, *, token_budget, fusion, now):
        self.fusions.append(fusion)
        return Context(query=query, budget=token_budget, tokens=0, items=())

    def _ask(self, tenant, user_id, command):
        self.commands.append(command)
        return [] if isinstance(command, c.Search) else Context(query=command.query, budget=command.token_budget,
                                                                tokens=0, items=())


def question() -> Question:
    return Question(sample_id="s", index=0, question="Where does Lena live?", category="1", evidence=frozenset(),
                    answer="Oslo", adversarial=False, asked_at=ASKED)


def test_without_a_fusion_of_its_own_the_system_leaves_the_choice_to_the_store():
    mem = Recorded()
    PalimpsestSystem(mem, k=10, budgets=(500, 1000)).retrieve(question())
    assert mem.fusions == [None, None, None]  # Memory.search / build_context then use the store's settings


def test_queries_sent_to_the_shards_directly_carry_the_stores_fusion_or_the_one_given():
    mem = Recorded()
    vectors = {"Where does Lena live?": [0.0] * 4}
    PalimpsestSystem(mem, k=10, budgets=(500,), query_vectors=vectors).retrieve(question())
    assert [type(cmd) for cmd in mem.commands] == [c.Search, c.BuildContext]
    assert all(cmd.fusion == STORES_OWN for cmd in mem.commands)
    mem.commands.clear()
    PalimpsestSystem(mem, k=10, budgets=(500,), fusion=DEFAULT_FUSION, query_vectors=vectors).retrieve(question())
    assert all(cmd.fusion == DEFAULT_FUSION for cmd in mem.commands)
