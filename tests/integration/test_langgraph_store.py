"""The LangGraph store (palimpsest.integrations.langgraph_store) under a real compiled LangGraph graph: a node reads
and writes the user's memories through ``runtime.store``, across two threads, in English and Chinese, backed by a
local store on Ray and by a served store (server URL + key)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TypedDict

import pytest

pytest.importorskip("langgraph")

from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402
from langgraph.runtime import Runtime  # noqa: E402
from langgraph.store.base import GetOp, PutOp, SearchOp  # noqa: E402

from events.errors import InvalidInputError  # noqa: E402
from palimpsest import Memory  # noqa: E402
from palimpsest.integrations import ClosedError  # noqa: E402
from palimpsest.integrations.langgraph_store import PROVENANCE, PalimpsestStore, PartialBatchError  # noqa: E402
from tests.integration.proxy_server import shared_bench  # noqa: E402

pytestmark = pytest.mark.integration


@dataclass
class Context:
    user_id: str


class State(TypedDict, total=False):
    message: str
    recalled: list[dict]


def remember_and_recall(state: State, runtime: Runtime[Context]) -> State:
    """Remember what follows "remember <key>:", then recall the three memories that match the message best."""
    namespace = ("acme", runtime.context.user_id, "memories")
    message = state["message"]
    if message.startswith("remember "):
        key, _, fact = message.removeprefix("remember ").partition(":")
        runtime.store.put(namespace, key.strip(), {"text": fact.strip()})
        return {"recalled": []}
    found = runtime.store.search(namespace, query=message, limit=3)
    return {"recalled": [{"key": i.key, "text": i.value["text"], "score": i.score, **i.value[PROVENANCE]}
                         for i in found]}


def build(store: PalimpsestStore):
    builder = StateGraph(State, context_schema=Context)
    builder.add_node("memory", remember_and_recall)
    builder.add_edge(START, "memory")
    builder.add_edge("memory", END)
    return builder.compile(checkpointer=InMemorySaver(), store=store)


def say(graph, thread: str, user: str, message: str) -> list[dict]:
    return graph.invoke({"message": message}, {"configurable": {"thread_id": thread}},
                        context=Context(user_id=user))["recalled"]


@pytest.fixture(scope="module")
def local(ray_cluster, tmp_path_factory):
    mem = Memory.open(tmp_path_factory.mktemp("lg") / "store", num_shards=2, embedder="hash")
    yield PalimpsestStore(mem), mem
    mem.close()


@pytest.fixture(scope="module")
def served(ray_cluster, tmp_path_factory, request):
    # the store of unit "served" (tests/xdist_schedule.py), whose other modules keep to users of their own and put
    # no items
    bench = shared_bench(request, tmp_path_factory)
    with PalimpsestStore.connect(bench.running.url, bench.key) as remote:
        yield remote, bench.running


def conversation(graph, user: str) -> None:
    """Thread 1 remembers three facts, two in Chinese; thread 2 recalls them."""
    for message in ("remember allergy: Alice is allergic to peanuts",
                    "remember city: 爱丽丝住在杭州西湖边",
                    "remember pet: 爱丽丝养了一只叫年糕的猫"):
        assert say(graph, f"{user}-t1", user, message) == []
    english = say(graph, f"{user}-t2", user, "which food is Alice allergic to? peanuts?")
    assert english[0]["key"] == "allergy" and english[0]["text"] == "Alice is allergic to peanuts"
    assert english[0]["memory_id"] and english[0]["note_id"] in english[0]["event_ids"]
    assert english[0]["version"] == 1 and english[0]["score"] > 0 and english[0]["created_at"]
    assert say(graph, f"{user}-t2", user, "爱丽丝住在哪里？杭州")[0]["key"] == "city"
    assert say(graph, f"{user}-t2", user, "她的猫叫什么名字")[0]["key"] == "pet"


def test_a_graph_node_remembers_in_one_thread_and_recalls_in_another_english_and_chinese(local):
    store, mem = local
    graph = build(store)
    conversation(graph, "alice")
    assert say(graph, "bob-t1", "bob", "peanuts") == []  # another user's memories are not hers

    # the same key again: the next version; the first is superseded, not erased
    assert say(graph, "alice-t3", "alice", "remember city: 爱丽丝搬到了上海") == []
    now = say(graph, "alice-t4", "alice", "爱丽丝住在哪里")
    assert [(r["key"], r["version"]) for r in now if r["key"] == "city"] == [("city", 2)]
    assert all("杭州" not in r["text"] for r in now)
    chain = mem.note_history(now[0]["note_id"] if now[0]["key"] == "city" else
                             next(r["note_id"] for r in now if r["key"] == "city"), tenant="acme")["chain"]
    assert [(v["text"], v["status"]) for v in chain] == [("爱丽丝住在杭州西湖边", "superseded"),
                                                         ("爱丽丝搬到了上海", "active")]


def test_get_put_delete_filter_and_namespaces_through_the_store_interface(local):
    store, mem = local
    ns = ("acme", "carol", "prefs")
    store.put(ns, "theme", {"value": "dark", "stars": 5}, index=False)
    store.put(ns, "food", {"text": "Carol loves ramen", "stars": 4})
    store.put(("acme", "carol"), "name", {"text": "Carol"})

    got = store.get(ns, "theme")
    assert got.value["value"] == "dark" and got.namespace == ns and got.value[PROVENANCE]["memory_id"] is None
    assert [i.key for i in store.search(ns, filter={"stars": {"$gte": 5}})] == ["theme"]
    assert [i.key for i in store.search(ns, query="ramen")] == ["food"]  # the unindexed item is not searched
    assert {i.key for i in store.search(("acme", "carol"))} == {"theme", "food", "name"}
    assert store.list_namespaces(prefix=("acme", "carol")) == [("acme", "carol"), ns]
    assert ("acme", "carol") in store.list_namespaces(prefix=("acme",), max_depth=2)

    store.delete(ns, "food")
    assert store.get(ns, "food") is None and [i.key for i in store.search(ns, query="ramen")] == []
    kinds = [e.kind for e in mem.events("acme", "carol", kinds=["note_operation"])]
    assert kinds == ["note_operation"] * 4  # three puts and the retraction: nothing erased
    assert store.get(("acme", "nobody"), "x") is None
    with pytest.raises(InvalidInputError, match="give \\(tenant, user\\) or \\(tenant, user, collection\\)"):
        store.put(("acme",), "k", {"text": "x"})


def test_the_async_interface_answers_as_the_sync_one(local):
    store, _ = local

    async def run():
        await store.aput(("acme", "dan"), "k1", {"text": "Dan plays the cello"})
        item = await store.aget(("acme", "dan"), "k1")
        hits = await store.asearch(("acme", "dan"), query="cello")
        return item, hits

    item, hits = asyncio.run(run())
    assert item.value["text"] == "Dan plays the cello" and [h.key for h in hits] == ["k1"]


def test_a_rejected_batch_writes_nothing_and_names_each_bad_operation(local):
    store, mem = local
    dave = ("acme", "dave")
    with pytest.raises(InvalidInputError, match=r"ops\[1\]\.value: not JSON") as rejected:
        store.batch([PutOp(dave, "k", {"text": "a"}), PutOp(dave, "k2", {"x": float("inf")}), GetOp(dave, "k")])
    assert "nothing was written" in str(rejected.value)
    assert store.get(dave, "k") is None and mem.items("acme", "dave") == []  # the valid first put was not written

    with pytest.raises(InvalidInputError) as rejected:  # every problem of every operation, at once
        store.batch([PutOp(dave, "k", {"text": "a"}), PutOp(("acme", " dave"), "", ["x"], index="text"),
                     SearchOp(("acme",), offset=-1)])
    assert [field for field, _ in rejected.value.problems] == [
        "ops[1].namespace[1] (user)", "ops[1].key", "ops[1].index", "ops[1].value", "ops[2].offset"]
    assert "remove the spaces at either end, e.g. 'dave'" in str(rejected.value)
    assert mem.items("acme", "dave") == []


def test_a_batch_that_fails_after_a_put_says_which_operations_were_written(local):
    store, _ = local
    erin = ("acme", "erin-batch")
    bad_filter = SearchOp(erin, filter={"n": {"$in": [1]}})  # the memory's filter syntax is checked as it runs
    with pytest.raises(PartialBatchError, match=r"stopped at ops\[1\].*written and kept: ops\[0\]") as stopped:
        store.batch([PutOp(erin, "k", {"text": "kept"}), bad_filter, PutOp(erin, "k2", {"text": "not run"})])
    assert stopped.value.failed == 1 and stopped.value.written == (0,)
    assert store.get(erin, "k").value["text"] == "kept" and store.get(erin, "k2") is None


def test_a_value_must_be_a_dict_and_index_a_list_of_field_paths(local):
    store, mem = local
    ns = ("acme", "fay")
    for value in (["a"], 5, "text"):
        with pytest.raises(InvalidInputError, match=r"value: .*give a dict"):
            store.put(ns, "k", value)
    for index in ("text", True, [5]):
        with pytest.raises(InvalidInputError, match=r"index: .*give False \(not searchable\), None"):
            store.put(ns, "k", {"text": "Fay knits"}, index=index)
    assert mem.items("acme", "fay") == []
    with pytest.raises(InvalidInputError, match="index_fields: 'text'"):
        PalimpsestStore(mem, index_fields="text")
    store.put(ns, "k", {"text": "Fay knits", "tag": "hobby"}, index=["text"])
    assert [i.key for i in store.search(ns, query="knits")] == ["k"]


def test_a_tenant_wide_search_ranks_the_merged_list_and_checks_its_window(local):
    store, _ = local
    for user in ("u1", "u2", "u3"):  # a tenant of its own: the search spans every user of it
        for n in range(3):
            store.put(("globex", user), f"k{n}", {"text": f"{user} likes green tea, cup {n}"})
    found = store.search(("globex",), query="green tea", limit=5)
    assert [i.value[PROVENANCE]["rank"] for i in found] == [1, 2, 3, 4, 5]
    assert [i.score for i in found] == sorted((i.score for i in found), reverse=True)
    later = store.search(("globex",), query="green tea", offset=2, limit=3)
    assert [i.value[PROVENANCE]["rank"] for i in later] == [3, 4, 5]
    # the window is the merged list's 3rd to 5th: each user's best items score alike (their ranks are alike), so
    # which of equal items comes first is left to the retention term, which the first search's touches move
    assert [i.score for i in later] == pytest.approx([i.score for i in found[2:5]], abs=1e-3)
    # a window past what the tenant holds: nothing, not an error about a limit never given
    assert store.search(("globex",), query="green tea", offset=995, limit=10) == []
    for prefix in (("globex",), ("globex", "u1")):  # the same answer over one user and over many
        with pytest.raises(InvalidInputError, match=r"offset: -1; give an integer, at least 0"):
            store.search(prefix, offset=-1)
        with pytest.raises(InvalidInputError, match=r"limit: 2000; give an integer from 1 to 1000"):
            store.search(prefix, query="tea", limit=2000)


def test_a_closed_store_says_so(local):
    _, mem = local
    store = PalimpsestStore(mem)
    store.put(("acme", "gus"), "k", {"text": "Gus"})
    store.close()
    store.close()  # twice: nothing more
    with pytest.raises(ClosedError, match="the store is closed"):
        store.get(("acme", "gus"), "k")
    assert PalimpsestStore(mem).get(("acme", "gus"), "k").value["text"] == "Gus"  # the memory it was given is open


def test_a_served_store_through_its_url_and_key_backs_the_same_graph(served):
    remote, running = served
    graph = build(remote)
    conversation(graph, "lg-erin")
    assert remote.get(("acme", "nobody", "memories"), "allergy") is None  # a user the server does not hold
    assert remote.list_namespaces() == [("acme", "lg-erin", "memories")]
    remote.delete(("acme", "lg-erin", "memories"), "pet")
    assert remote.get(("acme", "lg-erin", "memories"), "pet") is None
    assert running.memory.items("acme", "lg-erin", collection="memories", key="allergy")[0]["version"] == 1
    with pytest.raises(InvalidInputError, match="your key is tenant 'acme'"):
        remote.put(("globex", "lg-erin"), "k", {"text": "x"})
