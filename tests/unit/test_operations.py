"""The declared operations (palimpsest.operations), walked: every exposure of every operation exists and takes the
declared parameters — the route in the app's OpenAPI schema, the Memory and RemoteMemory methods, the MCP tool, the
CLI subcommand — and every request model refuses a wrong-typed argument naming the field and its fix. Then the
generated pieces at work without Ray: a route calls the Memory method and answers as the hand-written one did, a
RemoteMemory method sends the request the hand-written one sent, a shard reader answers through ShardCore.query."""

from __future__ import annotations

import importlib
import inspect
import json
from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

from events.errors import InvalidInputError
from palimpsest.client import RemoteMemory
from palimpsest.operation import (
    CLI, HTTP, MCP, PYTHON, READ, STORE, Http, Operation, Param, ShardReader, base_type, registry, signature, validate,
)
from palimpsest.operations import OPERATIONS

OPS = list(OPERATIONS.values())
IDS = [op.name for op in OPS]
WRONG = {int: "many", bool: "perhaps", str: 12, datetime: "yesterday", dict: "tea", list: "m-1"}  # another type
SAMPLE = {int: 3, bool: True, str: "x", datetime: datetime(2024, 5, 1, 9, tzinfo=UTC), dict: {"food": "tea"},
          list: ["m-1", "m-2"]}


def _sample(p: Param):
    """A valid value of ``p``: one of its choices, else a value of its type."""
    return p.choices[0] if p.choices else SAMPLE[base_type(p.type)[0]]


def _by_exposure(name: str) -> list[Operation]:
    return [op for op in OPS if name in op.exposure]


@pytest.fixture(scope="module")
def openapi():
    pytest.importorskip("fastapi")
    from palimpsest.server.app import build_app

    return build_app(4 << 20).openapi()


@pytest.mark.parametrize("op", _by_exposure(HTTP), ids=lambda op: op.name)
def test_every_http_exposure_is_a_route_of_the_app_with_its_summary_and_parameters(op, openapi):
    for path, summary, tenant_wide in op.routes():
        route = openapi["paths"][path][op.http.method.lower()]
        assert route["summary"] == summary and "seed" not in summary.lower()
        assert route["tags"] == (["store"] if tenant_wide else ["users"])
        where = {p["name"]: p["in"] for p in route.get("parameters", ())}
        assert {n: where.get(n) for n in op.http.path_params()} == {n: "path" for n in op.http.path_params()}
        rest = {p.name for p in op.params} - set(op.http.path_params())
        if op.http.method == "GET":
            assert rest <= {n for n, i in where.items() if i == "query"}
        elif rest or tenant_wide and op.user != STORE:  # the body: the declared parameters (a tenant's: a user too)
            schema = route["requestBody"]["content"]["application/json"]["schema"]
            ref = schema.get("$ref") or next(a["$ref"] for a in schema["anyOf"] if "$ref" in a)
            fields = set(openapi["components"]["schemas"][ref.rsplit("/", 1)[1]]["properties"])
            assert fields == rest | ({"user_id"} if tenant_wide and op.user != STORE else set())
        else:
            assert "requestBody" not in route
        assert ("user_id" in where) is not tenant_wide


def test_no_route_of_the_app_is_declared_twice():
    pytest.importorskip("fastapi")
    from palimpsest.server.app import build_app

    seen = [(m, r.path) for r in build_app(4 << 20).routes for m in getattr(r, "methods", None) or ()]
    assert len(seen) == len(set(seen))


@pytest.mark.parametrize("op", _by_exposure(PYTHON), ids=lambda op: op.name)
def test_every_python_exposure_is_a_memory_and_a_remote_memory_method_taking_the_declared_call(op):
    from palimpsest.memory import Memory

    call = {p.arg: _sample(p) for p in op.params}
    user = {} if op.user == STORE else {"tenant": "acme", "user_id": "alice"}
    for cls in (Memory, RemoteMemory):
        found = getattr(cls, op.name)
        inspect.signature(found).bind(None, **user, **call)  # how the routes and the CLI call it: by keyword
    assert inspect.signature(getattr(RemoteMemory, op.name)) == signature(op)
    positional = [call[p.arg] for p in op.params if p.positional]
    head = ["acme", "alice"] if op.user == "required" else []
    inspect.signature(getattr(Memory, op.name)).bind(None, *head, *positional)  # and by position where declared


@pytest.mark.parametrize("op", _by_exposure(MCP), ids=lambda op: op.name)
def test_every_mcp_exposure_is_a_listed_tool_with_the_declared_arguments(op):
    pytest.importorskip("mcp")
    from palimpsest.server import mcp_tools

    [tool] = [t for t in mcp_tools.list_tools().tools if t.name == op.name]
    assert tool.description == op.mcp
    assert set(tool.input_schema["properties"]) == {"user_id"} | {p.name for p in op.params}
    assert tool.input_schema["required"] == ["user_id", *(p.name for p in op.params if p.required)]


@pytest.mark.parametrize("op", _by_exposure(CLI), ids=lambda op: op.name)
def test_every_cli_exposure_is_a_subcommand_taking_the_declared_parameters(op):
    from palimpsest.cli import build_parser

    argv = op.cli.command.split() + (["--tenant", "acme", "--user", "alice"] if op.user == "required" else [])
    for p in op.params:
        if p.required:
            given = '{"food": "tea"}' if base_type(p.type)[0] is dict else "x"
            argv += [given] if not (p.flag or "-").startswith("-") else [p.flag or f"--{p.name.replace('_', '-')}",
                                                                        given]
    args = build_parser().parse_args(argv + ["--json"])
    assert args.json is True and callable(args.func)
    assert {p.name: getattr(args, p.name) for p in op.params if not p.required} == {
        p.name: p.default for p in op.params if not p.required}
    if op.cli.render:
        module, _, function = op.cli.render.partition(":")
        assert callable(getattr(importlib.import_module(module), function))


@pytest.mark.parametrize("op", OPS, ids=IDS)
def test_every_request_model_refuses_a_wrong_typed_or_unknown_argument_naming_the_field_and_its_fix(op):
    for p in op.params:
        kind, _ = base_type(p.type)
        with pytest.raises(InvalidInputError) as refused:
            validate(op, {**{q.name: _sample(q) for q in op.params if q.required},
                          p.name: WRONG[kind]})
        assert [f for f, _ in refused.value.problems] == [p.name]
        assert refused.value.problems[0][1].endswith(p.expects()) and repr(WRONG[kind])[:10] in str(refused.value)
    with pytest.raises(InvalidInputError) as refused:
        validate(op, {q.name: _sample(q) for q in op.params} | {"colour": "blue"})
    assert refused.value.problems == (("colour", f"no such parameter of {op.name}; its parameters: "
                                                 f"{', '.join(p.name for p in op.params) or 'none'}"),)


def test_a_bounded_integer_names_its_bounds_and_a_naive_time_asks_for_an_offset():
    with pytest.raises(InvalidInputError, match=r"k: Input should be greater than or equal to 1 .*from 1 to 1000"):
        validate(OPERATIONS["episodes"], {"k": 0})
    with pytest.raises(InvalidInputError, match=r"at: Input should have timezone info .*with its offset"):
        validate(OPERATIONS["notes"], {"at": "2024-05-01T09:00:00"})
    assert validate(OPERATIONS["episodes"], {"k": "7"}) == {"query": None, "k": 7}


@pytest.mark.parametrize("op", [op for op in OPS if op.handler is not None], ids=lambda op: op.name)
def test_a_shard_reader_is_registered_under_its_operation_and_takes_exactly_the_declared_parameters(op):
    from actors.declared import READERS

    importlib.import_module(op.handler.module)
    keywords = [n for n, p in inspect.signature(READERS[op.name]).parameters.items() if p.kind == p.KEYWORD_ONLY]
    searched = ["query_vector", "query_model", "fusion"] if op.handler.encodes else []  # what the driver adds
    assert keywords == [p.name for p in op.params] + searched


def test_a_declaration_that_does_not_hold_together_is_refused_naming_the_fix():
    with pytest.raises(ValueError, match="no param named note_id"):
        registry(Operation("x", READ, http=Http("GET", "/notes/{note_id}", "x")))
    with pytest.raises(ValueError, match="declared twice"):
        registry(Operation("x", READ), Operation("x", READ))
    with pytest.raises(ValueError, match="both answer GET /v1/users/{user_id}/a"):
        registry(Operation("x", READ, http=Http("GET", "/a", "x")), Operation("y", READ, http=Http("GET", "/a", "y")))
    with pytest.raises(ValueError, match="str, int, bool, datetime or dict .*or list\\[str\\]"):
        registry(Operation("x", READ, (Param("ids", list[int]),)))
    with pytest.raises(ValueError, match="a JSON object or list travels in a POST's body"):
        registry(Operation("x", READ, (Param("filter", dict),), http=Http("GET", "/x", "x")))
    with pytest.raises(ValueError, match="a JSON object or list travels in a POST's body"):
        registry(Operation("x", READ, (Param("ids", list[str]),), http=Http("GET", "/x", "x")))
    with pytest.raises(ValueError, match="encodes 'k': name a text"):
        registry(Operation("x", READ, (Param("k", int),), handler=ShardReader("actors.x", encodes="k")))
    with pytest.raises(ValueError, match="declare http too"):
        registry(Operation("x", READ, mcp="a tool"))


# -- the generated pieces at work ----------------------------------------------
class Recorder:
    """A Memory (or an Http) that records each call and answers ``answers[name]``."""

    def __init__(self, **answers) -> None:
        self.calls: list[tuple[str, dict]] = []
        self.answers = answers

    def __getattr__(self, name: str):
        def record(*args, **kwargs):
            self.calls.append((name, {**dict(enumerate(args)), **kwargs}))
            return self.answers[name]

        return record


@pytest.fixture
def served():
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from palimpsest.server import access
    from palimpsest.server.app import build_app

    memory = Recorder(notes=[{"note_id": "n1", "text": "tea ☕"}], note_history={"chain": []},
                      get_user_profile={"traits": {}}, adjustments=[], record_reply=[{"memory_id": "m1"}],
                      review_notes=[], judge_feedback={"type": "neutral"}, user_stats={"messages": 0})
    state = SimpleNamespace(memory=memory, streams={("acme", "alice")})
    app = build_app(4 << 20)
    app.dependency_overrides[access.caller] = lambda: access.Caller("k1", "acme", False, state)
    return TestClient(app), memory


def test_a_generated_route_calls_the_memory_method_and_answers_as_the_hand_written_one_did(served):
    client, memory = served
    r = client.get("/v1/users/alice/notes", params={"include_inactive": "true", "at": "2024-05-01T09:00:00+00:00"})
    assert r.status_code == 200 and r.content == '{"notes":[{"note_id":"n1","text":"tea ☕"}]}'.encode()
    assert memory.calls == [("notes", {"tenant": "acme", "user_id": "alice", "include_inactive": True,
                                       "at": datetime(2024, 5, 1, 9, tzinfo=UTC)})]
    assert client.get("/v1/users/alice/profile").json() == {"traits": {}}  # no key declared: the result itself
    assert memory.calls[-1] == ("get_user_profile", {"tenant": "acme", "user_id": "alice", "include_knowledge": True,
                                                     "include_assistant_knowledge": False})
    client.get("/v1/notes/n1")  # tenant-wide: no user
    assert memory.calls[-1] == ("note_history", {"tenant": "acme", "note_id": "n1"})
    client.get("/v1/users/alice/adjustments", params={"target_id": "m1"})
    assert memory.calls[-1][1]["target_id"] == "m1"


def test_a_generated_route_refuses_an_unknown_user_and_a_bad_parameter_before_any_call(served):
    client, memory = served
    r = client.get("/v1/users/bob/notes")
    assert r.status_code == 404 and r.json()["problems"][0]["field"] == "user_id"
    r = client.get("/v1/users/alice/episodes", params={"k": "0"})
    assert r.status_code == 400 and r.json()["problems"][0]["field"] == "query.k"
    assert memory.calls == []


def test_a_declared_write_takes_its_body_and_an_admin_operation_needs_an_admin_key():
    pytest.importorskip("fastapi")
    from fastapi import APIRouter, FastAPI
    from fastapi.testclient import TestClient

    from palimpsest.operation import ADMIN, WRITE
    from palimpsest.server import access, errors
    from palimpsest.server.responses import JsonRoute
    from palimpsest.server.routes_generated import add_routes

    ops = registry(Operation("label", WRITE, (Param("text", str), Param("weight", int, 1, ge=1, le=9)),
                             http=Http("POST", "/labels", "Label the user", answer="labelled")),
                   Operation("purge", ADMIN, (Param("dry_run", bool, False),), user="optional",
                             http=Http("POST", "/purge", "Purge", tenant_summary="Purge the tenant")))
    memory = Recorder(label="ok", purge="gone")
    state = SimpleNamespace(memory=memory, streams={("acme", "alice")})
    router, app = APIRouter(route_class=JsonRoute), FastAPI()
    add_routes(router, ops.values())
    app.include_router(router)
    errors.install(app)
    admin = [False]
    app.dependency_overrides[access.caller] = lambda: access.Caller("k1", "acme", admin[0], state)
    client = TestClient(app)
    assert client.post("/v1/users/alice/labels", json={"text": "vip"}).json() == {"labelled": "ok"}
    assert memory.calls == [("label", {"tenant": "acme", "user_id": "alice", "text": "vip", "weight": 1})]
    client.post("/v1/users/zoe\u0301/labels", json={"text": "new"})  # a write may start a user (its id in NFC)
    assert memory.calls.pop() == ("label", {"tenant": "acme", "user_id": "zoé", "text": "new", "weight": 1})
    r = client.post("/v1/users/alice/labels", json={"text": "vip", "weight": 10, "colour": "red"})
    assert r.status_code == 400 and [p["field"] for p in r.json()["problems"]] == ["weight", "colour"]
    assert client.post("/v1/purge").status_code == 403
    admin[0] = True
    assert client.post("/v1/purge").json() == "gone"  # no body: the defaults
    assert memory.calls[-1] == ("purge", {"tenant": "acme", "dry_run": False})
    client.post("/v1/users/alice/purge", json={"dry_run": True})
    assert memory.calls[-1] == ("purge", {"tenant": "acme", "user_id": "alice", "dry_run": True})


def test_forget_acts_on_the_keys_tenant_and_an_admin_key_may_name_another_tenants_user():
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from palimpsest.server import access
    from palimpsest.server.app import build_app

    memory = Recorder(forget={"forgotten": True})
    state = SimpleNamespace(memory=memory, streams={("acme", "alice"), ("globex", "zoe")})
    admin = [False]
    app = build_app(4 << 20)
    app.dependency_overrides[access.caller] = lambda: access.Caller("k1", "acme", admin[0], state)
    client = TestClient(app)
    assert client.post("/v1/users/alice/forget").json() == {"forgotten": True}
    assert memory.calls.pop() == ("forget", {"tenant": "acme", "user_id": "alice"})
    r = client.post("/v1/users/zoe/forget", params={"tenant": "globex"})
    assert r.status_code == 403 and r.json()["problems"][0]["field"] == "authorization"
    assert client.post("/v1/users/zoe/forget").status_code == 404  # not a user of the key's tenant
    admin[0] = True
    assert client.post("/v1/users/nobody/forget", params={"tenant": "globex"}).status_code == 404
    assert client.post("/v1/users/zoe/forget", params={"tenant": "globex"}).status_code == 200
    assert memory.calls == [("forget", {"tenant": "globex", "user_id": "zoe"})]


def _remote(answer) -> tuple[RemoteMemory, Recorder]:
    client = RemoteMemory.__new__(RemoteMemory)
    client.http, client._tenant = Recorder(call=answer), "acme"
    return client, client.http


def test_a_remote_memory_method_sends_the_request_the_hand_written_one_sent():
    client, http = _remote({"notes": [1], "episodes": [2], "memories": [3], "signals": [4]})
    assert client.notes("acme", "alice", include_inactive=True) == [1]
    assert client.episodes("acme", "al ice", "db", k=3) == [2]
    assert client.retention("acme", "alice", datetime(2024, 5, 1, tzinfo=UTC)) == [3]
    assert client.feedback("acme", "alice") == [4]
    assert [(c[0], c[1], c["params"]) for _, c in http.calls] == [
        ("GET", "/v1/users/alice/notes", {"include_inactive": "true"}),
        ("GET", "/v1/users/al%20ice/episodes", {"query": "db", "k": 3}),
        ("GET", "/v1/users/alice/retention", {"now": "2024-05-01T00:00:00+00:00"}),
        ("GET", "/v1/users/alice/feedback", {}),
    ]


def test_search_answers_the_terms_the_shard_ranked_with_and_remote_memory_keeps_them():
    """The route computes no terms: a hit's terms are the shard's (from the fusion it ranked with, which need not
    be the store's default), answered as they came and rebuilt as they were sent."""
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from palimpsest.server import access
    from palimpsest.server.app import build_app
    from projections.queries.results import Hit

    terms = {"dense": 0.021, "bm25": 0.0132, "feedback": -0.004}  # not what the default fusion would give
    hit = Hit("m1", 1, sum(terms.values()), "green tea", "maya", "user", datetime(2024, 5, 1, 9, tzinfo=UTC), "c1",
              "c1:1", {"rrf": sum(terms.values()), "dense_rank": 1}, {"event_ids": ["e1"]}, terms)
    memory = Recorder(search=[hit])
    app = build_app(4 << 20)
    app.dependency_overrides[access.caller] = lambda: access.Caller(
        "k1", "acme", False, SimpleNamespace(memory=memory, streams={("acme", "alice")}))
    answer = TestClient(app).post("/v1/users/alice/search", json={"query": "tea", "k": 1}).json()
    assert answer == {"hits": [hit.to_dict()]} and answer["hits"][0]["terms"] == terms
    assert sum(answer["hits"][0]["terms"].values()) == pytest.approx(answer["hits"][0]["breakdown"]["rrf"])
    client, _ = _remote(answer)
    assert client.search("acme", "alice", "tea", 1) == [hit]


def test_a_write_of_the_learning_loop_takes_its_ids_under_their_http_name_and_needs_a_known_user(served):
    client, memory = served
    r = client.post("/v1/users/alice/reply", json={"reply": "Green tea it is", "memory_ids": ["m1", "m2"]})
    assert r.json() == {"used": [{"memory_id": "m1"}]}
    assert memory.calls.pop() == ("record_reply", {"tenant": "acme", "user_id": "alice", "reply": "Green tea it is",
                                                   "retrieved": ["m1", "m2"], "query": ""})
    assert client.post("/v1/users/bob/reply", json={"reply": "x"}).status_code == 404  # a write, of a known user
    r = client.post("/v1/users/alice/feedback/judge", json={"user_input": "", "agent_response": "Try tea"})
    assert r.status_code == 400 and [p["field"] for p in r.json()["problems"]] == ["user_input"]
    assert memory.calls == []


def test_a_tenant_wide_post_may_name_one_user_of_the_tenant_in_its_body(served):
    client, memory = served
    assert client.post("/v1/notes/review").json() == {"decisions": []}
    assert memory.calls.pop() == ("review_notes", {"tenant": "acme", "now": None})
    client.post("/v1/notes/review", json={"user_id": "alice", "now": "2024-05-01T09:00:00+00:00"})
    assert memory.calls.pop() == ("review_notes", {"tenant": "acme", "user_id": "alice",
                                                   "now": datetime(2024, 5, 1, 9, tzinfo=UTC)})
    r = client.post("/v1/notes/review", json={"user_id": "bob"})
    assert r.status_code == 404 and r.json()["problems"][0]["field"] == "user_id" and memory.calls == []


def test_an_operation_over_the_whole_store_answers_at_v1_alone_and_only_an_admin_key(served):
    client, memory = served
    r = client.get("/v1/stats")
    assert r.status_code == 403 and r.json()["problems"][0]["field"] == "authorization" and memory.calls == []
    assert client.get("/v1/users/alice/stats").status_code == 200  # user_stats, the user's own counts
    assert client.post("/v1/users/alice/replay").status_code == 404  # no user route for the store's replay


def test_a_remote_memory_method_sends_a_context_given_for_memory_ids_as_its_ids_and_query():
    from projections.queries.results import Context, ContextItem

    ctx = Context("what do I drink", 100, 9, (ContextItem("m1", "t1", "c1", "tea", 9, 1.0, {}),))
    client, http = _remote({"used": []})
    client.record_reply("acme", "alice", "Tea", ctx)
    client.judge_feedback("acme", "alice", "No, coffee", "Tea", retrieved=ctx)
    assert [(c[1], c["body"]) for _, c in http.calls] == [
        ("/v1/users/alice/reply", {"reply": "Tea", "memory_ids": ["m1"], "query": ""}),
        ("/v1/users/alice/feedback/judge", {"user_input": "No, coffee", "agent_response": "Tea",
                                            "context_window": (), "memory_ids": ["m1"], "query": "what do I drink"}),
    ]


def test_a_remote_memory_method_without_a_user_asks_the_tenant_and_refuses_another_tenant():
    client, http = _remote({"chain": []})
    assert client.note_history("n 1", tenant="acme") == {"chain": []}
    assert http.calls[-1][1][1] == "/v1/notes/n%201"
    client.note_history("n1", tenant="acme", user_id="alice")
    assert http.calls[-1][1][1] == "/v1/users/alice/notes/n1"
    with pytest.raises(InvalidInputError, match="--tenant"):
        client.note_history("n1", tenant="globex")


def test_user_stats_counts_what_the_shard_holds_of_the_user_and_of_one_conversation(tmp_path):
    from actors.core import ShardCore
    from actors.declared import DeclaredQuery
    from actors.spec import ShardSpec
    from events.log import InMemoryEventLog
    from projections.adapters.embedding import HashEmbedder
    from tests.builders import command
    from tests.shard_helpers import record

    core = ShardCore(ShardSpec(index=0, log_path=tmp_path / "shard-000.duckdb", lance_dir=tmp_path / "vectors",
                               model_id=HashEmbedder.model_id, dim=384), log=InMemoryEventLog())
    try:
        record(core, [command("I adopted a puppy named Biscuit", 0, conversation_id="c1"),
                      command("My sister works as a nurse in Boston", 1, conversation_id="c1"),
                      command("We repainted the kitchen yellow", 90, conversation_id="c2")])

        def stats(**params):
            params = validate(OPERATIONS["user_stats"], params)
            return core.query(DeclaredQuery(tenant="acme", user_id="alice", operation="user_stats",
                                            module="actors.reads_user_stats", params=params))

        everything, first = stats(), stats(conversation_id="c1")
        memory = core.state.user("acme", "alice")
        assert everything["messages"] == 3 and everything["conversations"] == 2
        assert everything["notes"] == len(memory.notes.active()) > 0
        assert everything["episodes"] == len(memory.episodes.episodes())
        assert (first["messages"], first["conversations"], first["archived"]) == (2, 1, 0)
        assert first["notes"] < everything["notes"] and first["last_message_at"] < everything["last_message_at"]
        assert stats(conversation_id="nope") == {"conversation_id": "nope", "messages": 0, "conversations": 0,
                                                  "notes": 0, "episodes": 0, "archived": 0,
                                                  "first_message_at": None, "last_message_at": None}
        nobody = core.query(DeclaredQuery(tenant="acme", user_id="bob", operation="user_stats",
                                          module="actors.reads_user_stats", params={"conversation_id": None}))
        assert nobody["messages"] == 0 and nobody["notes"] == 0
    finally:
        core.close()


def test_conversations_lists_a_users_conversations_the_latest_first_with_counts_times_and_opening(tmp_path):
    from actors.core import ShardCore
    from actors.declared import DeclaredQuery
    from actors.spec import ShardSpec
    from events.log import InMemoryEventLog
    from projections.adapters.embedding import HashEmbedder
    from tests.builders import command
    from tests.shard_helpers import record

    core = ShardCore(ShardSpec(index=0, log_path=tmp_path / "shard-000.duckdb", lance_dir=tmp_path / "vectors",
                               model_id=HashEmbedder.model_id, dim=384), log=InMemoryEventLog())
    try:
        record(core, [command("I adopted a puppy named Biscuit", 0, conversation_id="c1"),
                      command("我们把厨房刷成了黄色", 30, conversation_id="c2"),
                      command("My sister works as a nurse in Boston", 60, conversation_id="c1")])

        def conversations(user_id="alice", **params):
            params = validate(OPERATIONS["conversations"], params)
            return core.query(DeclaredQuery(tenant="acme", user_id=user_id, operation="conversations",
                                            module="actors.reads_conversation", params=params))

        rows = conversations()
        assert rows == [
            {"conversation_id": "c1", "messages": 2, "first_message_at": "2024-05-01T09:00:00+00:00",
             "last_message_at": "2024-05-01T10:00:00+00:00", "opening": "I adopted a puppy named Biscuit"},
            {"conversation_id": "c2", "messages": 1, "first_message_at": "2024-05-01T09:30:00+00:00",
             "last_message_at": "2024-05-01T09:30:00+00:00", "opening": "我们把厨房刷成了黄色"},
        ]
        assert conversations(limit=1) == rows[:1] and conversations(user_id="bob") == []
        with pytest.raises(InvalidInputError, match="limit: Input should be greater than or equal to 1"):
            conversations(limit=0)
    finally:
        core.close()


def test_memory_user_stats_validates_then_asks_the_users_shard_once():
    from actors.declared import DeclaredQuery
    from palimpsest.memory import Memory

    shards = Recorder(ask={"messages": 1})
    fake = SimpleNamespace(shards=shards)
    assert Memory.user_stats(fake, "acme", "alice", conversation_id="c1") == {"messages": 1}
    [(_, call)] = shards.calls
    assert (call[0], call[1]) == ("acme", "alice") and call[2] == DeclaredQuery(
        tenant="acme", user_id="alice", operation="user_stats", module="actors.reads_user_stats",
        params={"conversation_id": "c1"})
    with pytest.raises(InvalidInputError, match="conversation_id: Input should be a valid string"):
        Memory.user_stats(fake, "acme", "alice", conversation_id=7)
    assert json.loads(json.dumps(call[2].params)) == {"conversation_id": "c1"}
