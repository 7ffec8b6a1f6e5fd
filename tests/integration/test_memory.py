"""The public Memory API on a real local Ray, real DuckDB files and a real LanceDB directory."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest
from structlog.testing import capture_logs

from events.errors import InvalidInputError
from palimpsest import Memory
from projections.adapters.tokens import TokenCounter
from projections.queries.retrieval import DEFAULT_FUSION
from tests.builders import command

pytestmark = pytest.mark.integration

ALICE = [
    command("I adopted a puppy named Biscuit last week", 0, speaker="Alice", turn_id="D1:1", conversation_id="c-1"),
    command("My sister works as a nurse in Boston", 1, speaker="Alice", turn_id="D1:2", conversation_id="c-1"),
    command("我喜欢在周末去爬山", 2, speaker="Alice", turn_id="D1:3", conversation_id="c-1"),
    command("我们上个月去了杭州看西湖", 3, speaker="Alice", turn_id="D1:4", conversation_id="c-1"),
    command("That sounds lovely, how is Biscuit settling in?", 4, role="assistant", turn_id="D1:5", conversation_id="c-1"),
]
BOB = [
    command("I play the violin in an orchestra", 0, user_id="bob", speaker="Bob", turn_id="D9:1"),
    command("My puppy allergy is terrible", 1, user_id="bob", speaker="Bob", turn_id="D9:2"),
]


@pytest.fixture(scope="module")
def populated(ray_cluster, tmp_path_factory):
    """A two-shard store holding Alice's and Bob's conversations, one on each shard."""
    mem = Memory.open(tmp_path_factory.mktemp("e2e") / "store", num_shards=2, embedder="hash")
    assert sorted(mem.shards.route([("acme", "alice"), ("acme", "bob")])) == [0, 1]  # both shards hold a user
    mem.add_messages(ALICE)
    mem.add_messages(BOB)
    yield mem
    mem.close()


@pytest.fixture(scope="module")
def shared(ray_cluster, tmp_path_factory):
    """An empty two-shard store; each test that uses it writes to streams of its own."""
    mem = Memory.open(tmp_path_factory.mktemp("shared") / "store", num_shards=2, embedder="hash")
    yield mem
    mem.close()


def texts(hits) -> list[str]:
    return [h.text for h in hits]


def test_search_finds_english_turns_and_only_the_users_own(populated):
    hits = populated.search("acme", "alice", "puppy Biscuit", k=3)

    assert hits[0].turn_id == "D1:1"
    assert "My puppy allergy is terrible" not in texts(populated.search("acme", "alice", "puppy allergy", k=10))
    assert populated.search("acme", "bob", "puppy allergy", k=1)[0].turn_id == "D9:2"


def test_chinese_query_finds_the_chinese_turn_with_provenance(populated):
    [top, *_] = populated.search("acme", "alice", "爬山", k=3)

    assert top.text == "我喜欢在周末去爬山"
    assert top.breakdown["subwords_rank"] == 1  # a Chinese query ranks the turns by their jieba sub-words
    assert (top.provenance["turn_id"], top.provenance["conversation_id"]) == ("D1:3", "c-1")
    recorded_id, embedded_id = top.provenance["event_ids"]
    assert recorded_id == top.memory_id
    [embedded] = [e for e in populated.events("acme", "alice", kinds=["message_embedded"]) if e.event_id == embedded_id]
    assert embedded.event.message_event_id == top.memory_id
    assert embedded.event.input_text == "Alice: 我喜欢在周末去爬山"


def test_search_records_a_touch_event(populated):
    hits = populated.search("acme", "alice", "nurse Boston sister", k=2)

    touches = [
        e for e in populated.events("acme", "alice", kinds=["memory_touched"]) if e.event.query == "nurse Boston sister"
    ]
    assert len(touches) == 1
    assert list(touches[0].event.memory_ids) == [h.memory_id for h in hits]
    assert touches[0].event.reason == "search_hit"


def test_build_context_fits_the_budget_and_keeps_provenance(populated):
    # turns only (no notes section): what is checked is how turns fit a small budget and keep their provenance
    fusion = replace(populated.settings.fusion, note_share=0.0)
    ctx = populated.build_context("acme", "alice", "How is the puppy Biscuit?", token_budget=30, fusion=fusion)

    counter = TokenCounter()
    assert ctx.items, "something fits in 30 tokens"
    # the text's lines (a day's date once, then its turns) cost what the items say they add
    assert ctx.tokens == sum(i.tokens for i in ctx.items) == sum(map(counter.count, ctx.text.split("\n"))) <= 30
    assert counter.count(ctx.text) <= 30
    assert len(ctx.items) < len(ALICE)
    assert "Biscuit" in ctx.items[0].line
    alice_ids = {e.event_id for e in populated.events("acme", "alice", kinds=["message_recorded"])}
    for item in ctx.items:
        assert item.memory_id in alice_ids
        assert item.provenance["event_ids"][0] == item.memory_id
        assert item.provenance["turn_id"] == item.turn_id and item.turn_id.startswith("D1:")
        assert item.conversation_id == "c-1"


def test_a_question_is_encoded_once_for_its_search_and_its_context(populated):
    encoded: list[list[str]] = []
    embedder = populated.embedder
    populated._embedder = _Recording(embedder, encoded)
    try:
        question = "Where does Alice's sister work as a nurse?"
        hits = populated.search("acme", "alice", question, k=2)
        ctx = populated.build_context("acme", "alice", question, token_budget=60)
        populated.build_context("acme", "alice", question + "?", token_budget=60)
    finally:
        populated._embedder = embedder
    assert encoded == [[question], [question + "?"]]  # the context reused the search's vector; new text, new vector
    assert hits[0].turn_id == "D1:2" and any(i.turn_id == "D1:2" for i in ctx.items)


class _Recording:
    """The store's encoder, noting what it is asked to encode."""

    def __init__(self, inner, calls: list) -> None:
        self.inner, self.calls, self.model_id, self.dim = inner, calls, inner.model_id, inner.dim

    def encode(self, texts: list[str]):
        self.calls.append(list(texts))
        return self.inner.encode(texts)


def test_events_filters(populated):
    recorded = populated.events(kinds=["message_recorded"])
    assert sorted(e.event.text for e in recorded) == sorted(m["text"] for m in ALICE + BOB)
    assert [e.stream for e in recorded] == [("acme", "alice")] * 5 + [("acme", "bob")] * 2  # (tenant, user, seq) order

    alice = populated.events("acme", "alice")
    assert [e.seq for e in alice] == list(range(1, len(alice) + 1))
    assert {e.stream for e in alice} == {("acme", "alice")}

    window = populated.events("acme", "bob", from_seq=2, to_seq=3)
    assert [(e.seq, e.kind) for e in window] == [(2, "message_classified"), (3, "message_embedded")]

    assert [e.event.text for e in populated.events(since=datetime(2024, 5, 1, 9, 3, tzinfo=UTC),
                                                   kinds=["message_recorded"])] == [m["text"] for m in ALICE[3:]]
    assert len(populated.events(kinds=["message_recorded"], limit=3)) == 3
    assert populated.events(tenant="initech") == []


def test_stats_and_replay_agree_with_the_log(populated):
    populated.search("acme", "bob", "violin", k=2)

    stats = populated.stats()
    all_events = populated.events()
    assert (stats["num_shards"], stats["users"], stats["messages"]) == (2, 2, 7)
    assert stats["events"] == len(all_events)
    assert stats["touches"] == sum(len(e.event.memory_ids) for e in all_events if e.kind == "memory_touched")
    assert sorted(tuple(s) for shard in stats["shards"] for s in shard["streams"]) == [("acme", "alice"), ("acme", "bob")]
    indexed = {tuple(s["streams"][0]): s["vectors_indexed"] for s in stats["shards"]}
    assert indexed == {("acme", "alice"): 5, ("acme", "bob"): 2}

    reports = populated.replay()

    assert [r.shard for r in reports] == [0, 1]
    assert all(r.equal for r in reports), [(r.live, r.rebuilt) for r in reports if not r.equal]
    assert sum(r.events for r in reports) == stats["events"]
    assert all(0 < r.cpu_seconds <= r.seconds for r in reports)  # the replay thread's CPU, within its wall time


@pytest.mark.parametrize(
    ("call", "location"),
    [
        (lambda m: m.search("acme", "alice", "   "), "query"),
        (lambda m: m.search("acme", "alice", "puppy", k=0), "k"),
        (lambda m: m.build_context("acme", "alice", "puppy", token_budget=0), "token_budget"),
    ],
    ids=["blank-query", "k-zero", "budget-zero"],
)
def test_invalid_queries_are_rejected_before_reaching_a_shard(populated, call, location):
    before = len(populated.events())
    with pytest.raises(InvalidInputError) as info:
        call(populated)
    assert [loc for loc, _ in info.value.problems] == [location]
    assert len(populated.events()) == before  # no touch event either


def test_idempotent_ingest_stores_messages_once(shared):
    who = {"tenant": "idem", "user_id": "u1"}
    batch = [command(f"note {i}: buy {item}", i, client_message_id=f"n{i}", **who)
             for i, item in enumerate(["milk", "eggs", "bread"])]
    batch += [command("no client id, deduplicated by content", 9, **who)]

    first = shared.add_messages(batch)
    count = len(shared.events())
    again = shared.add_messages(batch + batch[:1])

    assert (first.received, first.created, first.duplicates) == (4, 4, 0)
    assert (again.received, again.created, again.duplicates) == (5, 0, 5)
    assert again.memory_ids == first.memory_ids + first.memory_ids[:1]
    assert len(shared.events()) == count
    assert len(shared.events("idem", "u1")) == 12
    assert [e.event.text for e in shared.events("idem", "u1", kinds=["message_recorded"])] == [m["text"] for m in batch]


def test_a_batch_with_one_invalid_message_writes_nothing(shared):
    who = {"tenant": "rejected", "user_id": "u1"}
    shared.add_messages([command("already stored", 0, **who)])
    before = shared.events()
    bad_batch = [command("valid but in a rejected batch", 1, **who),
                 command("naive time", 2, occurred_at="2024-05-01T09:30:00", **who)]

    with pytest.raises(InvalidInputError) as info:
        shared.add_messages(bad_batch)

    assert [loc for loc, _ in info.value.problems] == ["messages[1].occurred_at"]
    assert "timezone offset" in str(info.value)
    assert [e.event_id for e in shared.events()] == [e.event_id for e in before]
    assert [e.event.text for e in shared.events("rejected", "u1", kinds=["message_recorded"])] == ["already stored"]


A_SECRET = "The vault code is 4417 and the spare key hides under the red flowerpot"
B_SECRET = "My password hint is the name of my first cat Tiberius"


@pytest.fixture(params=[1, 2], ids=["one-shard", "two-shards"])
def isolation_store(request, ray_cluster, tmp_path):
    """With one shard both tenants share a shard actor, its projections and its LanceDB table."""
    mem = Memory.open(tmp_path / "isolation", num_shards=request.param, embedder="hash")
    yield mem
    mem.close()


def test_tenants_are_isolated_even_for_the_same_user_id(isolation_store):
    store = isolation_store
    a, b = ("tenant-a", "u1"), ("tenant-b", "u1")
    same_shard = store.shards.route([a])[0] == store.shards.route([b])[0]
    assert same_shard == (store.config.num_shards == 1)
    a_ids = set(store.add_messages([command(A_SECRET, 0, tenant=a[0], user_id=a[1]),
                                    command("I like jazz", 1, tenant=a[0], user_id=a[1])]).memory_ids)
    b_ids = set(store.add_messages([command(B_SECRET, 0, tenant=b[0], user_id=b[1]),
                                    command("I like opera", 1, tenant=b[0], user_id=b[1])]).memory_ids)

    for (mine, my_ids, theirs) in ((a, a_ids, B_SECRET), (b, b_ids, A_SECRET)):
        for query in (theirs, "secret password vault code key cat", "what do I like?"):
            hits = store.search(*mine, query, k=10)
            assert {h.memory_id for h in hits} == my_ids  # both own memories (dense always answers), nothing else
            assert theirs not in texts(hits)
            ctx = store.build_context(*mine, query, token_budget=500)
            # Each context line is one of my turns, or a note read from one of them (its sources).
            sources = {m for i in ctx.items
                       for m in (i.provenance["event_ids"][1:] if "note_id" in i.provenance else [i.memory_id])}
            assert sources == my_ids
            assert theirs not in ctx.text

    assert {e.stream for e in store.events(tenant="tenant-a")} == {a}
    touched = {m for e in store.events(tenant="tenant-a", kinds=["memory_touched"]) for m in e.event.memory_ids}
    assert touched and touched <= a_ids


def test_reopen_recovers_state_from_the_log(ray_cluster, tmp_path):
    path = tmp_path / "reopened"
    mem = Memory.open(path, num_shards=2, embedder="hash")
    mem.add_messages(ALICE)
    mem.add_messages(BOB)
    mem.search("acme", "alice", "爬山")
    routes = mem.cluster.route([("acme", "alice"), ("acme", "bob")])
    before = mem.digest()
    events_before = mem.events()
    mem.close()

    mem = Memory.open(path)
    try:
        assert (mem.config.num_shards, mem.config.embedder) == (2, "hash")
        assert mem.cluster.route([("acme", "alice"), ("acme", "bob")]) == routes  # the routing table was reloaded
        assert mem.digest() == before
        assert [e.event_id for e in mem.events()] == [e.event_id for e in events_before]
        assert mem.search("acme", "alice", "爬山")[0].text == "我喜欢在周末去爬山"
        [new_id] = mem.add_messages([command("I started pottery classes", 9)]).memory_ids
        recorded = mem.events("acme", "alice", kinds=["message_recorded"])[-1]
        head = max(e.seq for e in events_before if e.stream == ("acme", "alice"))
        assert recorded.event_id == new_id and recorded.seq == head + 2  # after the recovered head and the search's touch
        assert all(r.equal for r in mem.replay())
    finally:
        mem.close()


@pytest.mark.model
def test_a_default_store_given_chinese_warns_once_that_its_encoder_reads_english_only(ray_cluster, tmp_path):
    mem = Memory.open(tmp_path / "default", num_shards=1)
    try:
        assert mem.config.embedder == "minilm"
        with capture_logs() as logs:
            mem.add_messages([command("I prefer green tea in the morning", 0)])
            mem.add_messages([command("我最近改用 Neovim 了，不再用 VS Code 写代码。", 1),
                              command("这个周末我们俱乐部要去黄山爬山。", 2)])
            mem.add_messages([command("我不吃香菜，请记住。", 3)])
        warned = [e for e in logs if e["event"] == "encoder_reads_english_only"]
        assert len(warned) == 1 and warned[0]["log_level"] == "warning", logs
        assert warned[0]["chinese"] == 2 and warned[0]["messages"] == 2
        assert "reembed --embedder multilingual-e5-small" in warned[0]["fix"]
    finally:
        mem.close()


@pytest.mark.model
def test_real_model_finds_a_turn_with_no_word_overlap(ray_cluster, tmp_path):
    mem = Memory.open(tmp_path / "minilm", num_shards=1, embedder="minilm")
    try:
        mem.add_messages([
            command("I adopted a puppy last week", 0, turn_id="D1:1"),
            command("My sister works as a nurse in Boston", 1, turn_id="D1:2"),
            command("We repainted the kitchen yellow", 2, turn_id="D1:3"),
            command("I am learning to play the violin", 3, turn_id="D1:4"),
            command("The stock market fell sharply today", 4, turn_id="D1:5"),
        ])

        # The fused lists without the learned ranker: in a store of five turns in one session the ranker scores
        # every turn below 1 % and may put the dense top's neighbour first on a tie-sized difference (measured:
        # 0.0091 for D1:2 against 0.0089 for D1:1 on int8 query vectors), so the ranker's order is not this test's
        # subject; the model's is.
        unranked = replace(DEFAULT_FUSION, ranker=None, cjk_ranker=None)
        [top, *_] = mem.search("acme", "alice", "new dog", k=3, fusion=unranked)

        assert top.turn_id == "D1:1"
        assert not {"lexical_rank", "facts_rank"} & set(top.breakdown)  # found by meaning alone
        assert top.breakdown["dense_rank"] == 1 and top.breakdown["dense_similarity"] > 0.3
        ranked = mem.search("acme", "alice", "new dog", k=3)
        assert "D1:1" in [hit.turn_id for hit in ranked[:2]]  # with the ranker: first, or second behind its neighbour
        assert mem.stats()["model_id"] == "sentence-transformers/all-MiniLM-L6-v2"
        assert all(r.equal for r in mem.replay())
    finally:
        mem.close()


def test_the_feedback_judge_records_signals_naming_the_context_through_the_api(shared):
    shared.add_messages([{"text": "I am vegetarian", "occurred_at": "2024-05-01T09:00:00+00:00", "tenant": "fb",
                          "user_id": "kim"},
                         {"text": "我不吃香菜", "occurred_at": "2024-05-01T09:01:00+00:00", "tenant": "fb",
                          "user_id": "kim"}])
    ctx = shared.build_context("fb", "kim", "dinner ideas", token_budget=100)

    verdict = shared.judge_feedback("fb", "kim", "不对，我说过我不吃香菜", "推荐你香菜牛肉", retrieved=ctx)
    neutral = shared.judge_feedback("fb", "kim", "What about lunch?", "Try a salad", context_window=["hi"])

    assert verdict["type"] == "negative" and verdict["action_hints"] == ["invalidate", "penalty"]
    assert verdict["memory_ids"] == [i.memory_id for i in ctx.items] and verdict["memory_ids"]
    assert neutral["type"] == "neutral"
    signals = shared.feedback("fb", "kim")
    assert [s["event_id"] for s in signals] == [verdict["event_id"], neutral["event_id"]]
    assert shared.feedback("fb", "kim", memory_id=verdict["memory_ids"][0]) == signals[:1]
    assert shared.feedback("other", "kim") == []  # another tenant's user of the same id sees none
    with pytest.raises(InvalidInputError, match="user_input"):
        shared.judge_feedback("fb", "kim", " ", "reply")
    assert all(r.equal for r in shared.replay())
