"""Tolerant JSON parsing and schema validation of model replies: a table of malformed replies and what they mean."""

from __future__ import annotations

import math
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from actors.llm.parsing import (
    MalformedOutputError,
    json_schema_of,
    parse_lenient,
    parse_structured,
    schema_name,
    schema_problems,
    validate,
)
from events.errors import LlmError, PalimpsestError

REPAIRS = [
    ("clean object", '{"a": 1, "b": [true, null]}', {"a": 1, "b": [True, None]}),
    ("json fence", '```json\n{"a": 1}\n```', {"a": 1}),
    ("bare fence", '```\n{"a": 1}\n```', {"a": 1}),
    ("fence never closed", '```json\n{"a": 1}', {"a": 1}),
    ("prose around", 'Sure! Here it is:\n{"a": 1}\nLet me know if you need more.', {"a": 1}),
    ("prose with a stray brace before", 'I {think} the answer is {"x": false}', {"x": False}),
    ("trailing commas", '{"a": [1, 2,], "b": {"c": "x",},}', {"a": [1, 2], "b": {"c": "x"}}),
    ("single quotes", "{'a': 'b', 'n': 2}", {"a": "b", "n": 2}),
    ("apostrophe inside single quotes", "{'a': 'it's fine'}", {"a": "it's fine"}),
    ("double quote inside single quotes", """{'a': 'say "hi"'}""", {"a": 'say "hi"'}),
    ("apostrophe inside double quotes", '{"a": "it\'s fine"}', {"a": "it's fine"}),
    ("escaped apostrophe", '{"a": "it\\\'s"}', {"a": "it's"}),
    ("python literals", "{'ok': True, 'no': False, 'none': None}", {"ok": True, "no": False, "none": None}),
    ("literal words inside strings stay", '{"a": "True or None"}', {"a": "True or None"}),
    ("raw newline in a string", '{"a": "line\nbreak"}', {"a": "line\nbreak"}),
    ("extra closing braces", '{"a": 1}}}', {"a": 1}),
    ("missing final brace", '{"a": {"b": [1, 2]}', {"a": {"b": [1, 2]}}),
    ("forgotten inner closer", '{"a": [1, 2}', {"a": [1, 2]}),
    ("truncated after a string", '{"a": "x", "b": "y"', {"a": "x", "b": "y"}),
    ("truncated inside a string", '{"a": 1, "b": "the user lik', {"a": 1}),
    ("truncated after a number", '{"a": 1, "b": 2', {"a": 1}),
    ("truncated after a key", '{"a": 1, "b"', {"a": 1}),
    ("truncated after a colon", '{"a": 1, "b":', {"a": 1}),
    ("truncated inside a nested list", '{"a": 1, "b": [1, 2', {"a": 1, "b": [1]}),
    ("truncated list item dropped, not emptied", '[{"a": 1}, {"a": 2', [{"a": 1}]),
    ("chinese text kept", '```json\n{"note": "我喜欢咖啡",}\n```', {"note": "我喜欢咖啡"}),
    ("top-level array", "[1, 2, 3,]", [1, 2, 3]),
]


@pytest.mark.parametrize(("text", "expected"), [case[1:] for case in REPAIRS], ids=[case[0] for case in REPAIRS])
def test_parse_lenient_repairs(text, expected):
    assert parse_lenient(text) == expected


UNRECOVERABLE = [
    ("empty", ""),
    ("whitespace", "  \n "),
    ("prose only", "I could not find any preferences in this dialogue."),
    ("nan is not json", '{"a": NaN}'),
    ("infinity is not json", '{"a": Infinity}'),
    ("cut inside the first string", '{"summ'),
    ("garbage inside", '{"a": 1 2 3}'),
]


@pytest.mark.parametrize("text", [case[1] for case in UNRECOVERABLE], ids=[case[0] for case in UNRECOVERABLE])
def test_parse_lenient_refuses_what_it_cannot_repair(text):
    with pytest.raises(MalformedOutputError) as caught:
        parse_lenient(text)
    assert isinstance(caught.value, LlmError) and isinstance(caught.value, PalimpsestError)
    assert caught.value.problems


NOTE_SCHEMA = {
    "title": "note extraction",
    "type": "object",
    "properties": {
        "category": {"type": "string", "enum": ["preference", "decision", "constraint", "fact"]},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "count": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "note": {"type": ["string", "null"]},
    },
    "required": ["category", "confidence"],
    "additionalProperties": False,
}

SCHEMA_CASES = [
    ("valid", {"category": "fact", "confidence": 0.5, "tags": ["a"], "note": None}, []),
    ("integer given as 2.0", {"category": "fact", "confidence": 1, "count": 2.0}, []),
    ("not an object", ["fact"], ["$: expected object, got array"]),
    ("missing required", {"category": "fact"}, ["$: missing required property 'confidence'"]),
    ("enum", {"category": "opinion", "confidence": 0.5}, ["$.category: 'opinion' is not one of"]),
    ("below minimum", {"category": "fact", "confidence": -0.1}, ["$.confidence: -0.1 is less than the minimum 0"]),
    ("above maximum", {"category": "fact", "confidence": 1.5}, ["$.confidence: 1.5 is greater than the maximum 1"]),
    ("boolean is not a number", {"category": "fact", "confidence": True}, ["$.confidence: expected number"]),
    ("float is not an integer", {"category": "fact", "confidence": 1, "count": 1.5}, ["$.count: expected integer"]),
    ("array items", {"category": "fact", "confidence": 1, "tags": ["a", 3]}, ["$.tags[1]: expected string, got int"]),
    ("unexpected property", {"category": "fact", "confidence": 1, "extra": 1}, ["$: unexpected property 'extra'"]),
    ("nullable type", {"category": "fact", "confidence": 1, "note": 3}, ["$.note: expected string or null"]),
]


@pytest.mark.parametrize(("value", "expected"), [c[1:] for c in SCHEMA_CASES], ids=[c[0] for c in SCHEMA_CASES])
def test_schema_problems(value, expected):
    problems = schema_problems(value, NOTE_SCHEMA)
    assert len(problems) == len(expected)
    for problem, start in zip(problems, expected, strict=True):
        assert problem.startswith(start)


def test_enum_does_not_confuse_booleans_with_numbers():
    assert schema_problems(True, {"enum": [1, 0]})
    assert schema_problems(1, {"enum": [True]})
    assert not schema_problems(1, {"enum": [1.0]})


def test_validate_returns_the_value_or_raises_with_every_problem():
    value = {"category": "fact", "confidence": 0.9}
    assert validate(value, NOTE_SCHEMA) is value
    with pytest.raises(MalformedOutputError) as caught:
        validate({"category": "opinion", "confidence": 2}, NOTE_SCHEMA)
    assert len(caught.value.problems) == 2
    assert "category" in str(caught.value) and "maximum" in str(caught.value)


class Note(BaseModel):
    category: Literal["preference", "decision", "constraint", "fact"]
    text: str = Field(min_length=1)
    confidence: float = Field(ge=0, le=1)


class Extraction(BaseModel):
    notes: list[Note]


def test_validate_against_a_pydantic_model_returns_an_instance():
    text = "{'notes': [{'category': 'preference', 'text': '喜欢咖啡', 'confidence': 0.8,}]}"
    parsed = parse_structured(text, Extraction)
    assert parsed == Extraction(notes=[Note(category="preference", text="喜欢咖啡", confidence=0.8)])
    with pytest.raises(MalformedOutputError) as caught:
        parse_structured('{"notes": [{"category": "mood", "text": "x", "confidence": 0.5}]}', Extraction)
    assert caught.value.problems[0].startswith("$.notes.0.category")


def test_truncated_list_keeps_its_complete_items_when_the_last_one_was_cut():
    text = (
        '{"notes": [{"category": "fact", "text": "uses PostgreSQL", "confidence": 0.9}, '
        '{"category": "decision", "text": "switch to My'
    )
    parsed = parse_structured(text, Extraction)
    assert [n.text for n in parsed.notes] == ["uses PostgreSQL"]


def test_parse_structured_reports_the_first_problem_when_no_repair_fits():
    with pytest.raises(MalformedOutputError, match="missing required property 'confidence'"):
        parse_structured('```json\n{"category": "fact"}\n```', NOTE_SCHEMA)
    with pytest.raises(MalformedOutputError, match="no JSON object or array"):
        parse_structured("no json here", NOTE_SCHEMA)


def test_numbers_stay_finite():
    assert math.isfinite(parse_lenient('{"a": 1e308}')["a"])


def test_schema_helpers():
    assert schema_name(NOTE_SCHEMA) == "note_extraction"
    assert schema_name({"type": "object"}) == "response"
    assert schema_name(Extraction) == "Extraction"
    assert json_schema_of(NOTE_SCHEMA) is NOTE_SCHEMA
    assert json_schema_of(Extraction)["required"] == ["notes"]
    with pytest.raises(LlmError, match="JSON schema dict or a pydantic model"):
        json_schema_of("not a schema")
