"""Items (projections.queries.items): keyed records kept as notes. A put is the next version of the item's note
and the message search finds it by; a delete retracts the note; nothing leaves the log. Driven through the
Memory methods over one ShardCore (no Ray), then the pure pieces: filters and the text an item is found by."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from actors.core import ShardCore
from actors.spec import ShardSpec
from events.errors import InvalidInputError
from events.log import InMemoryEventLog
from events.model import MessageRecorded, NoteOperation
from palimpsest.memory import Memory
from palimpsest.memory_items import ItemsApiMixin
from palimpsest.memory_operations import DeclaredReadsMixin
from projections.adapters.embedding import HashEmbedder
from projections.folds.state import ShardState, fold
from projections.queries.items import check_filter, item_text, matches
from projections.queries.retrieval import DEFAULT_FUSION
from tests.builders import command
from tests.shard_helpers import kinds, record


class Driver(ItemsApiMixin, DeclaredReadsMixin):
    """What the item methods of Memory use (its shards, encoder, settings, query vectors), over one ShardCore."""

    def __init__(self, core: ShardCore) -> None:
        self.core, self.embedder = core, HashEmbedder()
        self.settings = type("Settings", (), {"fusion": DEFAULT_FUSION})()
        self.shards = self

    def send(self, tenant, user_id, command):
        return self.core.handle([command])[0]

    def ask(self, tenant, user_id, query):
        return self.core.query(query)

    def ask_each(self, query, tenant=None, user_id=None):
        return [self.core.query(query)]

    def _query_vector(self, text):
        return self.embedder.encode([text])[0]

    note_history = Memory.note_history


@pytest.fixture
def mem(tmp_path):
    core = ShardCore(ShardSpec(index=0, log_path=tmp_path / "shard-000.duckdb", lance_dir=tmp_path / "vectors",
                               model_id=HashEmbedder.model_id, dim=384), log=InMemoryEventLog())
    yield Driver(core)
    core.close()


def test_a_put_with_the_same_key_is_the_next_version_and_the_previous_one_stays_in_the_history(mem):
    first = mem.put_item("acme", "alice", "drink", {"text": "Alice drinks green tea"}, collection="memories")
    second = mem.put_item("acme", "alice", "drink", {"text": "Alice switched to black coffee"}, collection="memories")

    assert (first["version"], second["version"], second["supersedes"]) == (1, 2, first["note_id"])
    [item] = mem.items("acme", "alice", collection="memories")
    assert (item["key"], item["value"], item["version"]) == ("drink", {"text": "Alice switched to black coffee"}, 2)
    assert item["created_at"] < item["updated_at"] and item["memory_id"] == second["memory_id"]
    assert item["event_ids"] == [second["note_id"], second["memory_id"]]
    chain = mem.note_history(item["note_id"], tenant="acme")["chain"]
    assert [(v["version"], v["status"]) for v in chain] == [(1, "superseded"), (2, "active")]
    assert mem.items("acme", "alice", collection="elsewhere") == []
    assert mem.items("acme", "alice") == [item]  # every collection
    archived = mem.core.state.user("acme", "alice").archive.archived  # the memory searches the current version only
    assert set(archived) == {first["memory_id"]} and "superseded by version 2" in archived[first["memory_id"]].detail


def test_a_delete_retracts_the_item_and_a_second_delete_writes_nothing(mem):
    put = mem.put_item("acme", "alice", "k1", {"text": "likes hiking"})
    before = len(kinds(mem.core))

    assert mem.delete_item("acme", "alice", "k1") == {"collection": "", "key": "k1", "deleted": True,
                                                       "note_id": put["note_id"]}
    assert mem.items("acme", "alice") == [] and mem.search_items("acme", "alice", "hiking") == []
    assert kinds(mem.core)[before:] == ["note_operation", "memory_archived"]  # its message leaves default search
    assert mem.delete_item("acme", "alice", "k1")["deleted"] is False
    assert len(kinds(mem.core)) == before + 2  # already satisfied: no event
    chain = mem.note_history(put["note_id"], tenant="acme")["chain"]
    assert [v["status"] for v in chain] == ["retracted"]
    assert "likes hiking" in [m.text for m in (e.event for e in mem.core.log.scan()) if isinstance(m, MessageRecorded)]


def test_search_ranks_the_live_items_by_their_text_and_filters_on_their_values(mem):
    mem.put_item("acme", "alice", "a", {"text": "Alice prefers green tea in the morning", "kind": "drink"})
    mem.put_item("acme", "alice", "b", {"text": "Alice's sister Lena lives in Oslo", "kind": "family", "age": 31})
    mem.put_item("acme", "alice", "c", {"text": "爱丽丝喜欢喝绿茶", "kind": "drink"}, collection="zh")
    mem.put_item("acme", "alice", "a", {"text": "Alice prefers black coffee now", "kind": "drink"})
    record(mem.core, [command("I had green tea with Lena yesterday", 0)])  # a conversation turn: never an item

    hits = mem.search_items("acme", "alice", "black coffee")
    assert [h["key"] for h in hits][:1] == ["a"] and hits[0]["value"]["text"] == "Alice prefers black coffee now"
    assert sorted(h["key"] for h in hits) == ["a", "b", "c"]  # each live item once: no superseded version, no turn
    assert [h["rank"] for h in hits] == [1, 2, 3] and hits[0]["score"] >= hits[1]["score"] >= hits[2]["score"]
    assert all(h["version"] == 1 for h in mem.search_items("acme", "alice", "green tea") if h["key"] != "a")
    assert [h["key"] for h in mem.search_items("acme", "alice", "绿茶", collection="zh")] == ["c"]
    assert [h["key"] for h in mem.search_items("acme", "alice", "Oslo", limit=1)] == ["b"]
    assert [h["key"] for h in mem.search_items("acme", "alice", "tea", filter={"kind": "family"})] == ["b"]
    assert [h["key"] for h in mem.search_items("acme", "alice", "tea", filter={"age": {"$gte": 30}})] == ["b"]
    assert len(mem.search_items("acme", "alice", "tea", offset=1)) == 2


def test_a_message_that_contradicts_an_item_leaves_it_alone(mem):
    mem.put_item("acme", "alice", "drink", {"text": "I prefer tea"})
    record(mem.core, [command("I prefer tea", 0), command("I don't like tea anymore", 1)])  # would supersede it

    [item] = mem.items("acme", "alice")
    assert (item["value"], item["version"], item["status"]) == ({"text": "I prefer tea"}, 1, "active")
    notes = [e.event for e in mem.core.log.scan() if isinstance(e.event, NoteOperation)]
    assert all(n.target_note_id != item["note_id"] for n in notes)


def test_an_unindexed_item_is_got_by_its_key_but_not_found_by_search(mem):
    put = mem.put_item("acme", "alice", "prefs", {"theme": "dark"}, index=False)

    assert put["memory_id"] is None and kinds(mem.core) == ["note_operation"]
    assert mem.items("acme", "alice", key="prefs")[0]["value"] == {"theme": "dark"}
    assert mem.search_items("acme", "alice", "dark theme") == []


def test_the_log_folded_again_gives_the_same_items(mem):
    mem.put_item("acme", "alice", "a", {"text": "tea"})
    mem.put_item("acme", "alice", "a", {"text": "coffee"})
    mem.put_item("acme", "alice", "b", {"text": "猫"}, collection="pets")
    mem.delete_item("acme", "alice", "b", collection="pets")

    again = fold(ShardState(), mem.core.log.scan()).user("acme", "alice")
    live = mem.core.state.user("acme", "alice")
    assert again.notes.canonical() == live.notes.canonical()
    assert mem.item_collections("acme", "alice") == [{"collection": "", "items": 1}]


def test_a_put_is_refused_whole_naming_each_bad_field(mem):
    with pytest.raises(InvalidInputError) as refused:
        mem.put_item("acme", "al/ice", "", {"x": float("nan")}, collection="a/b")
    assert [f for f, _ in refused.value.problems] == ["user_id", "key", "collection"]
    with pytest.raises(InvalidInputError, match="value: not JSON"):
        mem.put_item("acme", "alice", "k", {"x": float("nan")})
    with pytest.raises(InvalidInputError, match="value: a list; give a JSON object"):
        mem.put_item("acme", "alice", "k", [1, 2])
    with pytest.raises(InvalidInputError, match="filter.stars: unknown operator '\\$in'"):
        mem.items("acme", "alice", filter={"stars": {"$in": [1]}})
    assert mem.core.log.count() == 0



@pytest.mark.parametrize(("args", "field"), [
    (("k\ud800", {"x": 1}, None, None), "key"), (("k", {"x": "bad \udfff"}, None, None), "value"),
    (("k", {"x": 1}, "c\ud800", None), "collection"), (("k", {"x": 1}, None, "bad \ud800"), "text"),
], ids=["key", "value", "collection", "text"])
def test_a_lone_surrogate_is_refused_naming_its_field_before_anything_is_written(mem, args, field):
    key, value, collection, text = args
    with pytest.raises(InvalidInputError) as refused:  # no text: a log in UTF-8 (DuckDB, Arrow) cannot hold it
        mem.put_item("acme", "alice", key, value, collection=collection, text=text, index=False)
    assert [f for f, _ in refused.value.problems] == [field]
    assert mem.core.log.count() == 0


def test_an_id_with_spaces_at_either_end_is_told_to_drop_them(mem):
    with pytest.raises(InvalidInputError, match="remove the spaces at either end, e.g. 'alice'"):
        mem.put_item("acme", " alice ", "k", {"x": 1})


# -- pure pieces ---------------------------------------------------------------------
def test_a_filter_matches_exact_values_nested_objects_and_comparisons():
    value = {"kind": "drink", "stars": 4, "tags": ["hot", "green"], "origin": {"country": "JP", "region": "Uji"}}

    assert matches(value, None) and matches(value, {"kind": "drink", "origin": {"country": "JP"}})
    assert matches(value, {"stars": {"$gt": 3, "$lte": 4}, "tags": ["hot", "green"]})
    assert matches(value, {"kind": {"$ne": "food"}, "missing": None})
    assert not matches(value, {"stars": {"$gt": 4}}) and not matches(value, {"tags": ["hot"]})
    assert not matches(value, {"kind": {"$gt": 1}})  # a comparison needs a number on both sides
    assert check_filter({"stars": {"$in": [1]}, "a": {"b": {"$lt": "x"}}}) == [
        ("filter.stars", "unknown operator '$in'; use one of $eq, $ne, $gt, $gte, $lt, $lte"),
        ("filter.a.b.$lt", "'x'; compare with a number")]


def test_an_item_is_found_by_the_strings_of_its_value_else_by_its_json():
    assert item_text({"text": "tea", "meta": {"note": "绿茶", "n": 3}, "tags": ["hot", ""]}) == "tea\n绿茶\nhot"
    assert item_text({"n": 3}) == '{"n": 3}'


def test_times_are_recorded_as_given_by_the_clock_of_the_driver(mem):
    before = datetime.now(UTC)
    mem.put_item("acme", "alice", "k", {"text": "x"})
    [item] = mem.items("acme", "alice")
    assert before <= datetime.fromisoformat(item["created_at"]) <= datetime.now(UTC)
