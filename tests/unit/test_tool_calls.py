"""The tool-calling memory API of seed 001: validation that names every problem, times resolved, schemas exported."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from pydantic import ValidationError

from events.errors import InvalidInputError
from projections.rules.tool_calls import (
    TOOLS,
    CreateMemory,
    LinkMemories,
    SearchMemories,
    tool_schemas,
    validate_tool_call,
    write_tool_schemas,
)

CST = timezone(timedelta(hours=8))
REF = datetime(2023, 5, 10, 14, 0, tzinfo=CST)  # Wednesday


def problems(name: str, arguments) -> dict[str, str]:
    with pytest.raises(InvalidInputError) as caught:
        validate_tool_call(name, arguments, reference=REF)
    return dict(caught.value.problems)


# Valid calls.


def test_a_seed_example_call_validates_with_its_chinese_names():
    call = validate_tool_call("create_memory", {
        "subject": "我", "memory_type": "事件", "topic": "吃饭", "object": "白米饭",
        "attributes": {"时间": "今天", "地点": "家"}, "importance": 0.3,
    }, reference=REF)
    assert isinstance(call, CreateMemory)
    assert (call.memory_type, call.topic, call.object, call.importance) == ("event", "吃饭", "白米饭", 0.3)
    assert call.attributes == {"时间": "2023-05-10", "地点": "家"}
    assert call.occurred_at == datetime(2023, 5, 10, tzinfo=CST) and call.time_expression == "今天"


def test_defaults_follow_the_seed():
    create = validate_tool_call("create_memory", {"subject": "Caroline", "memory_type": "fact", "topic": "like",
                                                  "object": "pottery"}, reference=REF)
    assert (create.importance, create.attributes, create.occurred_at) == (0.5, {}, None)
    link = validate_tool_call("link_memories", {"source_memory_description": "I slept badly",
                                                "target_memory_description": "I was tired",
                                                "relation_type": "causality"}, reference=REF)
    assert isinstance(link, LinkMemories) and link.importance == 0.6 and link.relation is None
    search = validate_tool_call("search_memories", {"query": "when did Caroline adopt?"}, reference=REF)
    assert isinstance(search, SearchMemories)
    assert (search.max_results, search.expand_depth, search.mode, search.time_range) == (10, 1, "auto", None)


def test_arguments_may_be_the_json_text_an_llm_wrote():
    call = validate_tool_call("search_memories", '{"query": "pottery", "mode": "DEEP"}', reference=REF)
    assert (call.query, call.mode) == ("pottery", "deep")


@pytest.mark.parametrize(("label", "edge"), [("导致", "causality"), ("因为", "causality"), ("所以", "causality"),
                                             ("引用", "reference"), ("基于", "reference"), ("相关", "reference"),
                                             ("because", "causality"), ("因果关系", "causality")])
def test_the_seed_relation_labels_map_to_an_edge_type_and_are_kept(label, edge):
    link = validate_tool_call("link_memories", {"source_memory_description": "我失眠", "target_memory_description":
                                                "我很困", "relation_type": label}, reference=REF)
    assert link.relation_type == edge
    assert link.relation == (None if label == "因果关系" else label)


# Relative times.


def test_a_relative_time_attribute_is_normalised_and_fills_occurred_at():
    call = validate_tool_call("create_memory", {"subject": "Caroline", "memory_type": "event", "topic": "go",
                                                "object": "support group", "attributes": {"time": "yesterday 8pm"}},
                              reference=REF)
    assert call.attributes == {"time": "2023-05-09T20:00+08:00"}
    assert call.occurred_at == datetime(2023, 5, 9, 20, tzinfo=CST) and call.time_expression == "yesterday 8pm"
    zh = validate_tool_call("create_memory", {"subject": "我", "memory_type": "事件", "topic": "失眠",
                                              "attributes": {"时间": "昨天晚上"}}, reference=REF)
    assert zh.attributes["时间"] == "2023-05-09T18:00+08:00/2023-05-10T00:00+08:00"
    assert zh.occurred_at == datetime(2023, 5, 9, 18, tzinfo=CST)


def test_any_attribute_that_is_wholly_a_time_is_normalised_but_other_text_is_kept():
    call = validate_tool_call("create_memory", {"subject": "Jon", "memory_type": "event", "topic": "open",
                                                "object": "dance studio", "attributes": {
                                                    "deadline": "next Monday", "place": "downtown",
                                                    "note": "opening next Monday, finally"}}, reference=REF)
    assert call.attributes == {"deadline": "2023-05-15", "place": "downtown", "note": "opening next Monday, finally"}
    assert call.occurred_at is None  # "deadline" is not when it happened


def test_time_expression_and_relative_occurred_at_are_resolved():
    by_expression = validate_tool_call("create_memory", {"subject": "我", "memory_type": "event", "topic": "去",
                                                         "time_expression": "上周五"}, reference=REF)
    assert by_expression.occurred_at == datetime(2023, 5, 5, tzinfo=CST)
    by_phrase = validate_tool_call("create_memory", {"subject": "我", "memory_type": "event", "topic": "去",
                                                     "occurred_at": "last Friday"}, reference=REF)
    assert (by_phrase.occurred_at, by_phrase.time_expression) == (datetime(2023, 5, 5, tzinfo=CST), "last Friday")
    iso = validate_tool_call("create_memory", {"subject": "我", "memory_type": "event", "topic": "去",
                                               "occurred_at": "2023-05-09T20:00:00+02:00"}, reference=REF)
    assert iso.occurred_at == datetime(2023, 5, 9, 20, tzinfo=timezone(timedelta(hours=2)))


@pytest.mark.parametrize(("phrase", "start", "end"), [
    ("last week", datetime(2023, 5, 1, tzinfo=CST), datetime(2023, 5, 8, tzinfo=CST)),
    ("上周", datetime(2023, 5, 1, tzinfo=CST), datetime(2023, 5, 8, tzinfo=CST)),
    ("yesterday", datetime(2023, 5, 9, tzinfo=CST), datetime(2023, 5, 10, tzinfo=CST)),
    ("May 2023", datetime(2023, 5, 1, tzinfo=CST), datetime(2023, 6, 1, tzinfo=CST)),
])
def test_a_time_range_phrase_becomes_a_span(phrase, start, end):
    call = validate_tool_call("search_memories", {"query": "what happened", "time_range": phrase}, reference=REF)
    assert (call.time_range.start, call.time_range.end, call.time_range.expression) == (start, end, phrase)


def test_time_range_bounds_may_be_dates_phrases_or_timestamps():
    call = validate_tool_call("search_memories", {"query": "x", "time_range": {
        "start": "2023-05-01", "end": "yesterday"}}, reference=REF)
    assert call.time_range.start == datetime(2023, 5, 1, tzinfo=CST)
    assert call.time_range.end == datetime(2023, 5, 10, tzinfo=CST)  # the end day is included
    open_ended = validate_tool_call("search_memories", {"query": "x", "time_range": {
        "start": "2023-05-01T00:00:00Z"}}, reference=REF)
    assert open_ended.time_range.start == datetime(2023, 5, 1, tzinfo=timezone.utc) and open_ended.time_range.end is None


def test_memory_types_accept_seed_names_and_a_single_value_and_drop_repeats():
    call = validate_tool_call("search_memories", {"query": "x", "memory_types": ["事件", "fact", "event"]},
                              reference=REF)
    assert call.memory_types == ("event", "fact")
    assert validate_tool_call("search_memories", {"query": "x", "memory_types": "观点"},
                              reference=REF).memory_types == ("opinion",)


# Invalid calls: every problem, each naming its field and the fix.


def test_every_problem_of_a_call_is_listed_at_once():
    found = problems("create_memory", {"subject": " ", "memory_type": "memory", "topic": 3, "importance": 1.7,
                                       "attributes": {"time": 5}, "colour": "red"})
    assert set(found) == {"subject", "memory_type", "topic", "importance", "attributes.time", "colour"}
    assert found["importance"] == "1.7 is outside [0, 1]; give a number between 0 and 1"
    assert found["memory_type"].startswith("'memory' is not allowed; use one of: event, fact, relation, opinion")
    assert "known fields: subject, memory_type, topic" in found["colour"]
    assert found["topic"].startswith("expected a string, got int 3")
    assert found["subject"].startswith("is empty;")


@pytest.mark.parametrize(("name", "arguments", "field", "says"), [
    ("create_memory", {"memory_type": "event", "topic": "go"}, "subject", "is required"),
    ("create_memory", {"subject": "a", "memory_type": "event", "topic": "go", "importance": -0.2}, "importance",
     "-0.2 is outside [0, 1]"),
    ("create_memory", {"subject": "a", "memory_type": "event", "topic": "go", "importance": "high"}, "importance",
     "expected a number"),
    ("create_memory", {"subject": "a", "memory_type": "event", "topic": "go", "attributes": ["x"]}, "attributes",
     "expected an object"),
    ("create_memory", {"subject": "a", "memory_type": "event", "topic": "go", "attributes": {" ": "x"}},
     "attributes", "blank key"),
    ("create_memory", {"subject": "a", "memory_type": "event", "topic": "go", "occurred_at": "2023-05-09T20:00"},
     "occurred_at", "has no timezone offset"),
    ("create_memory", {"subject": "a", "memory_type": "event", "topic": "go", "occurred_at": "whenever"},
     "occurred_at", "could not read 'whenever' as a time"),
    ("create_memory", {"subject": "a", "memory_type": "event", "topic": "go", "time_expression": "someday soon"},
     "time_expression", "could not read 'someday soon'"),
    ("create_memory", {"subject": "a", "memory_type": "event", "topic": "go", "time_expression": "yesterday",
                       "occurred_at": "2023-05-01T10:00:00+08:00"}, "occurred_at", "is not within 'yesterday'"),
    ("create_memory", {"subject": "我", "memory_type": "关系", "topic": "朋友关系"}, "object",
     "a relation memory needs the other party"),
    ("link_memories", {"source_memory_description": "a", "target_memory_description": "b",
                       "relation_type": "likes"}, "relation_type", "use one of: memory_type, core_relation"),
    ("link_memories", {"source_memory_description": "I was sad", "target_memory_description": "i was sad",
                       "relation_type": "causality"}, "target_memory_description", "is the same as source"),
    ("link_memories", {"source_memory_description": "a", "target_memory_description": "b",
                       "relation_type": "causality", "importance": 2}, "importance", "2 is outside [0, 1]"),
    ("search_memories", {"query": ""}, "query", "is empty"),
    ("search_memories", {"query": "x", "max_results": 0}, "max_results", "0 is outside [1, 100]"),
    ("search_memories", {"query": "x", "max_results": 101}, "max_results", "101 is outside [1, 100]"),
    ("search_memories", {"query": "x", "expand_depth": 3}, "expand_depth", "3 is outside [0, 2]"),
    ("search_memories", {"query": "x", "mode": "slow"}, "mode", "use one of: fast, deep, auto"),
    ("search_memories", {"query": "x", "memory_types": ["evnt"]}, "memory_types[0]", "'evnt' is not allowed"),
    ("search_memories", {"query": "x", "memory_types": []}, "memory_types", "is empty"),
    ("search_memories", {"query": "x", "time_range": "sometime"}, "time_range", "could not read 'sometime'"),
    ("search_memories", {"query": "x", "time_range": {"start": "blah"}}, "time_range.start", "could not read"),
    ("search_memories", {"query": "x", "time_range": {"start": "yesterday", "end": "last week"}}, "time_range.end",
     "is not after start"),
    ("search_memories", {"query": "x", "time_range": {}}, "time_range.start", "neither start nor end"),
    ("search_memories", {"query": "x", "time_range": {"begin": "x"}}, "time_range.begin", "known fields: start, end"),
])
def test_each_kind_of_invalid_input_names_its_field_and_the_fix(name, arguments, field, says):
    found = problems(name, arguments)
    assert field in found, found
    assert says in found[field]
    assert ";" in found[field]  # what is wrong; how to fix it


def test_an_unknown_tool_names_the_known_tools():
    assert problems("forget_everything", {}) == {
        "name": "unknown tool 'forget_everything'; use one of: create_memory, link_memories, search_memories"}


def test_arguments_that_are_not_an_object_are_refused():
    assert "not valid JSON" in problems("create_memory", "{subject: me")["arguments"]
    assert problems("create_memory", [1, 2])["arguments"].startswith("expected an object of parameters, got list")


def test_the_error_says_nothing_was_written_and_is_a_value_error():
    with pytest.raises(ValueError, match=r"rejected create_memory call: 2 problem\(s\); nothing was written"):
        validate_tool_call("create_memory", {"subject": "a"}, reference=REF)


def test_a_naive_reference_is_refused():
    with pytest.raises(InvalidInputError, match="reference"):
        validate_tool_call("search_memories", {"query": "x"}, reference=datetime(2023, 5, 10))


def test_the_models_are_frozen_and_strict_when_built_directly():
    call = validate_tool_call("search_memories", {"query": "x"}, reference=REF)
    with pytest.raises(ValidationError):
        call.query = "y"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        CreateMemory(subject="a", memory_type="event", topic="go", occurred_at=datetime(2023, 5, 1))  # naive


# Schemas.


def _walk(node):
    yield node
    for child in node.values() if isinstance(node, dict) else node if isinstance(node, list) else ():
        yield from _walk(child)


def test_schemas_are_openai_functions_generated_from_the_models():
    schemas = tool_schemas()
    assert [s["function"]["name"] for s in schemas] == ["create_memory", "link_memories", "search_memories"]
    by_name = {s["function"]["name"]: s["function"] for s in schemas}
    for name, function in by_name.items():
        assert schemas[list(by_name).index(name)]["type"] == "function"
        assert function["description"] and function["parameters"]["type"] == "object"
        model_required = [k for k, f in TOOLS[name].model_fields.items() if f.is_required()]
        assert function["parameters"]["required"] == model_required
        assert function["parameters"]["additionalProperties"] is False
    create = by_name["create_memory"]["parameters"]
    assert create["required"] == ["subject", "memory_type", "topic"]
    assert create["properties"]["memory_type"]["enum"] == ["event", "fact", "relation", "opinion"]
    assert create["properties"]["importance"] == {
        "default": 0.5, "description": create["properties"]["importance"]["description"], "maximum": 1,
        "minimum": 0, "type": "number"}
    assert create["properties"]["attributes"]["additionalProperties"] == {"type": "string"}
    link = by_name["link_memories"]["parameters"]
    assert link["properties"]["relation_type"]["enum"] == [
        "memory_type", "core_relation", "attribute", "causality", "reference"]
    search = by_name["search_memories"]["parameters"]
    assert search["properties"]["max_results"]["maximum"] == 100 and search["properties"]["expand_depth"]["maximum"] == 2
    assert search["properties"]["mode"]["enum"] == ["fast", "deep", "auto"]
    assert {"type": "string"} in search["properties"]["time_range"]["anyOf"]


def test_schemas_are_self_contained_json():
    schemas = tool_schemas()
    text = json.dumps(schemas, ensure_ascii=False)
    assert "$ref" not in text and "$defs" not in text
    assert not any(isinstance(n, dict) and ("title" in n and isinstance(n["title"], str)) for n in _walk(schemas))
    assert not any(isinstance(n, dict) and n.get("type") == "null" for n in _walk(schemas))
    assert json.loads(text) == schemas


def test_valid_calls_conform_to_the_exported_schema():
    jsonschema = pytest.importorskip("jsonschema")
    by_name = {s["function"]["name"]: s["function"]["parameters"] for s in tool_schemas()}
    for name, arguments in [
        ("create_memory", {"subject": "Caroline", "memory_type": "event", "topic": "adopt", "object": "puppy",
                           "attributes": {"time": "yesterday"}, "importance": 0.8}),
        ("link_memories", {"source_memory_description": "a", "target_memory_description": "b",
                           "relation_type": "reference"}),
        ("search_memories", {"query": "x", "time_range": "last week", "memory_types": ["event"], "max_results": 5}),
        ("search_memories", {"query": "x", "time_range": {"start": "2023-05-01", "end": "yesterday"}}),
    ]:
        jsonschema.validate(arguments, by_name[name])
        validate_tool_call(name, arguments, reference=REF)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"subject": "a", "memory_type": "event", "topic": "go", "importance": 1.7},
                            by_name["create_memory"])


def test_write_tool_schemas_writes_the_seed_appendix_shape(tmp_path):
    path = write_tool_schemas(tmp_path / "tools.json")
    stored = json.loads(path.read_text(encoding="utf-8"))
    assert stored == {"tools": tool_schemas()}
    assert "事件" in path.read_text(encoding="utf-8")  # written as UTF-8, not \u escapes
