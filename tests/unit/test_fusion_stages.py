"""The fusion as a list of stages (projections.queries.stages): each stage's ablation switches it off, and only it."""

from __future__ import annotations

from dataclasses import fields

import pytest

from actors import commands as c
from actors.core import ShardCore
from actors.spec import ShardSpec
from projections.queries import stages
from projections.queries.retrieval import DEFAULT_FUSION, FusionConfig, list_weights
from tests.builders import command
from tests.shard_helpers import EMBED, record

TURNS = [
    ("Caroline", "I went to the LGBTQ support group yesterday and it was so powerful."),
    ("Melanie", "That sounds wonderful! I took my kids camping at the lake last weekend."),
    ("Caroline", "I prefer green tea in the morning, never coffee."),
    ("Melanie", "We decided to paint a sunrise together, the kids loved it."),
    ("Caroline", "My favourite book is Becoming Nicole, it inspired me a lot."),
    ("Melanie", "I started pottery classes on Tuesday evenings."),
    ("Caroline", "I am researching adoption agencies because I want to build a family."),
    ("Melanie", "Our dog Luna ran off at the lake, but we found her by the dock."),
]
# A breakdown key each stage writes when it fires on this small store (the stage's name: the key).
WRITES = {"lexical": "facts_rank", "episodes": "episode_rank", "notes": "note_rank",
          "conversations": "conversation_rank", "speakers": "speaker_named", "neighbours": "neighbour_of",
          "ranker": "ranker_probability"}


@pytest.fixture(scope="module")
def core(tmp_path_factory):
    path = tmp_path_factory.mktemp("stages")
    core = ShardCore(ShardSpec(index=0, log_path=path / "shard-000.duckdb", lance_dir=path / "vectors",
                               model_id=EMBED.model_id, dim=384))
    record(core, [command(text, i, speaker=speaker, conversation_id="c1" if i < 4 else "c2")
                  for i, (speaker, text) in enumerate(TURNS)])
    yield core
    core.close()


def search(core, query: str, fusion: FusionConfig):
    return core.query(c.Search(tenant="acme", user_id="alice", query=query, query_vector=EMBED.encode([query])[0],
                               k=8, fusion=fusion, touch_reason=None))


def keys_of(hits) -> set[str]:
    return {key for hit in hits for key in hit.breakdown}


QUERIES = ("What does Caroline drink in the morning?", "Where did Melanie go camping with her kids?")


@pytest.mark.parametrize("name", sorted(WRITES))
def test_a_stage_ablation_removes_its_term_and_only_its_term(core, name):
    key = WRITES[name]
    with_it = [search(core, q, DEFAULT_FUSION) for q in QUERIES]
    assert any(key in keys_of(hits) for hits in with_it), f"{name} never fired: the test proves nothing"
    without = [search(core, q, stages.without(DEFAULT_FUSION, name)) for q in QUERIES]
    assert not any(key in keys_of(hits) for hits in without)
    others = {k for stage, k in WRITES.items() if stage not in (name, "ranker", "neighbours")}
    assert others - {k for hits in without for k in keys_of(hits)} <= others - {k for h in with_it for k in keys_of(h)}


def test_the_dense_list_ablated_weighs_nothing_in_any_language():
    # its ranks stay in the breakdown (the learned ranker reads them), its term is 0
    for query in QUERIES + ("卡罗琳早上喝什么？",):
        assert list_weights(stages.without(DEFAULT_FUSION, "dense"), query)["dense"] == 0


def test_every_stage_switched_off_by_its_ablation_is_not_run():
    for stage in stages.STAGES:
        config = stages.without(DEFAULT_FUSION, stage.name)
        if stage.name in ("list_expansion", "ranker"):  # always run; off, they change nothing
            continue
        probe = type("S", (), {"config": config, "query": "a list of the books?", "memory": None})()
        if stage.name == "graph":
            assert config.graph_weight == 0
        else:
            assert not stage.on(probe), stage.name


def test_the_ablations_name_real_fields_and_unknown_stages_are_refused():
    names = {f.name for f in fields(FusionConfig)}
    for stage in (*stages.LISTS, *stages.STAGES):
        assert set(stage.off) <= names, stage.name
    with pytest.raises(ValueError, match="no fusion stage named 'graphs'.*graph"):
        stages.without(DEFAULT_FUSION, "graphs")
    assert [s.name for s in stages.STAGES] == ["conversations", "cross_lingual", "clauses", "speakers", "times", "sessions",
                                               "neighbours", "graph", "prf", "list_expansion", "ranker", "feedback",
                                               "supersession", "coverage"]
