"""Memory.warm_up: the one-off loads (encoder, jieba's dictionary in every shard and the driver) happen there,
once, and not again in the first Chinese ingest."""

from __future__ import annotations

import pytest

from events.errors import InvalidInputError
from palimpsest import Memory
from palimpsest.remote import get


@pytest.fixture(scope="module")
def refusing(ray_cluster, tmp_path_factory):
    """One store for the refusals: languages are checked before any shard is asked, so a refused call changes
    nothing a later one could see, and each case need not start a store's actors of its own."""
    mem = Memory.open(tmp_path_factory.mktemp("refusals") / "store", num_shards=2, embedder="hash")
    yield mem
    mem.close()


def test_warm_up_loads_the_chinese_dictionary_in_every_shard_once(memory):
    first = memory.warm_up(("en", "zh"))
    assert len(first["shard_dictionaries_s"]) == 2
    # fresh shard processes: each really read jieba's dictionary (hundreds of ms), then keeps it
    assert all(s > 0.05 for s in first["shard_dictionaries_s"])
    again = memory.warm_up("zh")
    assert all(s < 0.05 for s in again["shard_dictionaries_s"]) and again["driver_dictionaries_s"] < 0.05
    loads = get([a.load_dictionaries.remote(("zh",)) for a in memory.shards.live()])
    assert all(s < 0.05 for s in loads)
    result = memory.add_messages([{"tenant": "acme", "user_id": "li", "role": "user", "text": "我昨天去了瑜伽课。",
                                   "occurred_at": "2026-11-01T10:00:00+00:00"}])
    assert result.created == 1
    assert "瑜伽课" in memory.search("acme", "li", "瑜伽课", k=1)[0].text


def test_english_only_warm_up_leaves_the_shards_dictionaries_alone(memory):
    out = memory.warm_up(("en",))
    assert all(s < 0.05 for s in out["shard_dictionaries_s"]) and out["encoder_s"] >= 0


@pytest.mark.parametrize("bad", [("fr",), ("en", "klingon"), "de", 5, None, [["zh"]]])
def test_an_unknown_language_is_refused_by_name(refusing, bad):
    with pytest.raises(InvalidInputError, match="languages.*(unknown language|not a list of language codes)"):
        refusing.warm_up(bad)
    assert refusing.warm_up(("en",))["encoder_s"] >= 0  # the store still warms up once the languages are right
