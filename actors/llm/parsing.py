"""Tolerant reading of the JSON a model replies with, then validation against the expected shape.

Models, local ones especially, wrap JSON in ```json fences and prose, leave
trailing commas, use single quotes or Python's True/False/None, and stop
mid-object when they run out of tokens. ``parse_lenient`` repairs exactly
those slips and nothing more; ``validate`` then checks the result against a
JSON-schema subset or a pydantic model. Pure functions, no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, ValidationError

from events.errors import LlmError

SchemaOrModel = dict[str, Any] | type[BaseModel]

_FENCE = re.compile(r"```[ \t]*(?:json5?|JSON)?[ \t]*\r?\n?(.*?)(?:```|\Z)", re.DOTALL)
_CLOSER = {"{": "}", "[": "]"}
_LITERALS = {"True": "true", "False": "false", "None": "null"}
_MAX_STARTS = 8  # candidate openings tried when prose before the JSON holds a stray brace
_MAX_CUTS = 64  # truncation cut points tried, latest first (bounds the work on long replies)
_FAILED = object()
_SINGLE_QUOTE_END = re.compile(r"\s*(?:[,:}\]]|\Z)")  # what may follow the quote that closes a '...' string


class MalformedOutputError(LlmError):
    """A reply held no recoverable JSON, or JSON of the wrong shape; ``problems`` says what was wrong."""

    def __init__(self, problems: list[str] | str) -> None:
        self.problems = (problems,) if isinstance(problems, str) else tuple(problems)
        super().__init__("; ".join(self.problems))


def parse_lenient(text: str) -> Any:
    """The JSON value in ``text``, repaired if slightly malformed; raises ``MalformedOutputError`` otherwise.

    A reply cut off by a token limit yields the longest prefix of complete
    values (an unterminated string, trailing number or unfinished container
    is dropped, never guessed). NaN and Infinity are rejected: they are not JSON.
    """
    for value in _candidates(text):
        return value
    raise _nothing_found(text)


def parse_structured(text: str, schema_or_model: SchemaOrModel) -> Any:
    """The first repair of ``text`` that passes ``validate``, longest first; raises ``MalformedOutputError``.

    Trying shorter cuts of a truncated reply lets a list keep its complete
    items when the last one was cut off mid-object.
    """
    first_problem: MalformedOutputError | None = None
    for value in _candidates(text):
        try:
            return validate(value, schema_or_model)
        except MalformedOutputError as exc:
            first_problem = first_problem or exc
    raise first_problem or _nothing_found(text)


def validate(value: Any, schema_or_model: SchemaOrModel) -> Any:
    """``value`` checked against a JSON schema (returned as is) or a pydantic model (returned as an instance).

    Raises ``MalformedOutputError`` listing the first problems found.
    """
    if isinstance(schema_or_model, type) and issubclass(schema_or_model, BaseModel):
        try:
            return schema_or_model.model_validate(value)
        except ValidationError as exc:
            raise MalformedOutputError(
                [f"$.{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:5]]
            ) from None
    problems = schema_problems(value, schema_or_model)
    if problems:
        raise MalformedOutputError(problems[:5])
    return value


def json_schema_of(schema_or_model: SchemaOrModel) -> dict[str, Any]:
    """The JSON schema to send to the server for a schema dict or a pydantic model."""
    if isinstance(schema_or_model, type) and issubclass(schema_or_model, BaseModel):
        return schema_or_model.model_json_schema()
    if not isinstance(schema_or_model, dict):
        raise LlmError(f"expected a JSON schema dict or a pydantic model class, got {type(schema_or_model).__name__}")
    return schema_or_model


def schema_name(schema_or_model: SchemaOrModel) -> str:
    """A name the OpenAI API accepts (``[A-Za-z0-9_-]{1,64}``) for the schema."""
    if isinstance(schema_or_model, type):
        raw = schema_or_model.__name__
    else:
        raw = str(schema_or_model.get("title") or "response")
    return re.sub(r"[^A-Za-z0-9_-]", "_", raw)[:64] or "response"


def schema_problems(value: Any, schema: dict[str, Any], path: str = "$") -> list[str]:
    """Where ``value`` breaks ``schema`` (type, enum, minimum, maximum, properties, required,
    ``additionalProperties: false``, items); other keywords are ignored, as the server enforces them."""
    types = schema.get("type")
    if types is not None:
        allowed = (types,) if isinstance(types, str) else tuple(types)
        if not any(_is_type(value, t) for t in allowed):
            return [f"{path}: expected {' or '.join(allowed)}, got {_json_type(value)}"]
    problems: list[str] = []
    if "enum" in schema and not any(_same(value, option) for option in schema["enum"]):
        problems.append(f"{path}: {value!r} is not one of {schema['enum']!r}")
    if _is_type(value, "number"):
        if "minimum" in schema and value < schema["minimum"]:
            problems.append(f"{path}: {value} is less than the minimum {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            problems.append(f"{path}: {value} is greater than the maximum {schema['maximum']}")
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        problems += [f"{path}: missing required property {k!r}" for k in schema.get("required", ()) if k not in value]
        if schema.get("additionalProperties") is False:
            problems += [f"{path}: unexpected property {k!r}" for k in value if k not in properties]
        for key, sub in properties.items():
            if key in value:
                problems += schema_problems(value[key], sub, f"{path}.{key}")
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            problems += schema_problems(item, schema["items"], f"{path}[{i}]")
    return problems


def _is_type(value: Any, name: str) -> bool:
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    return {
        "object": isinstance(value, dict),
        "array": isinstance(value, list),
        "string": isinstance(value, str),
        "number": is_number,
        # JSON Schema counts 1.0 as an integer
        "integer": is_number and (isinstance(value, int) or float(value).is_integer()),
        "boolean": isinstance(value, bool),
        "null": value is None,
    }.get(name, False)


def _json_type(value: Any) -> str:
    names = ("null", "boolean", "integer", "number", "string", "array", "object")
    return next((name for name in names if _is_type(value, name)), type(value).__name__)


def _same(a: Any, b: Any) -> bool:
    # Python's True == 1 would let a boolean pass an enum of numbers
    return a == b and isinstance(a, bool) == isinstance(b, bool)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _candidates(text: str) -> Iterator[Any]:
    """Every value recoverable from ``text``, most faithful first: as is, then repaired from each opening."""
    if not isinstance(text, str) or not text.strip():
        raise MalformedOutputError("the reply is empty")
    body = _unfence(text)
    value = _try(body)
    if value is not _FAILED:
        yield value
    for start in [i for i, ch in enumerate(body) if ch in _CLOSER][:_MAX_STARTS]:
        yield from _repairs_from(body, start)


def _unfence(text: str) -> str:
    """The body of the first ```-fenced block that holds an object or array, else ``text``."""
    for match in _FENCE.finditer(text):
        if any(ch in match.group(1) for ch in _CLOSER):
            return match.group(1).strip()
    return text.strip()


def _repairs_from(text: str, start: int) -> Iterator[Any]:
    """The value that begins at ``text[start]`` after repairs; for a truncated reply, one per cut, longest first.

    One pass copies tokens into ``out``: strings re-quoted as JSON, Python literals translated,
    trailing commas dropped. ``cuts`` remembers where the prefix ends after a complete value
    (before a comma or an opener, after a closer) and which containers are open there.
    """
    out: list[str] = []
    stack: list[str] = []
    cuts: list[tuple[int, tuple[str, ...]]] = []
    i, n, closed = start, len(text), False
    while i < n:
        ch = text[i]
        if ch in "\"'":
            token, i = _read_string(text, i)
            if token is None:  # unterminated: the reply was cut inside a string
                break
            out.append(token)
            continue
        if ch in _CLOSER:
            if stack:  # cutting before an unfinished container drops it instead of inventing an empty one
                cuts.append((len(out), tuple(stack)))
            stack.append(_CLOSER[ch])
            out.append(ch)
        elif ch in "}]":
            if ch in stack:  # a closer that skips an inner one closes that one too
                while stack:
                    _drop_trailing_comma(out)
                    closer = stack.pop()
                    out.append(closer)
                    if closer == ch:
                        break
                if not stack:
                    closed = True
                    break
                cuts.append((len(out), tuple(stack)))
            # a closer with no opener is a stray character: skipped
        elif ch == ",":
            cuts.append((len(out), tuple(stack)))
            out.append(ch)
        elif ch.isalpha() or ch == "_":
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            out.append(_LITERALS.get(text[i:j], text[i:j]))
            i = j
            continue
        else:
            out.append(ch)
        i += 1
    if closed:
        value = _try("".join(out))
        if value is not _FAILED:
            yield value
        return
    candidates = []
    tail = "".join(out).rstrip()
    if tail.endswith(('"', "}", "]", "true", "false", "null")):  # a complete last token: close what is open
        candidates.append((len(out), tuple(stack)))
    candidates += reversed(cuts[-_MAX_CUTS:])
    for length, open_stack in candidates:
        prefix = out[:length]
        _drop_trailing_comma(prefix)
        value = _try("".join(prefix) + "".join(reversed(open_stack)))
        if value is not _FAILED:
            yield value


def _read_string(text: str, i: int) -> tuple[str | None, int]:
    """The string literal starting at ``text[i]`` as a JSON string, and the index after it.

    Single-quoted strings end only at a quote followed by ``, : } ]`` or the
    end, so an apostrophe inside (``'it's'``) stays text. Raw control
    characters are escaped, and ``\\'`` becomes ``'``. Returns
    ``(None, len(text))`` when unterminated.
    """
    quote, chars, j, n = text[i], [], i + 1, len(text)
    while j < n:
        ch = text[j]
        if ch == "\\" and j + 1 < n:
            nxt = text[j + 1]
            chars.append("'" if nxt == "'" else ch + nxt)  # \' is never valid JSON
            j += 2
            continue
        if ch == quote and (quote == '"' or _SINGLE_QUOTE_END.match(text, j + 1)):
            return '"' + "".join(chars) + '"', j + 1
        if ch == '"':  # only reachable inside a single-quoted string
            chars.append('\\"')
        elif ord(ch) < 0x20:
            chars.append(json.dumps(ch)[1:-1])
        else:
            chars.append(ch)
        j += 1
    return None, n


def _drop_trailing_comma(out: list[str]) -> None:
    while out and out[-1].isspace():
        out.pop()
    if out and out[-1] == ",":
        out.pop()


def _try(text: str) -> Any:
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except ValueError:
        return _FAILED


def _nothing_found(text: str, limit: int = 120) -> MalformedOutputError:
    flat = " ".join(text.split())
    snippet = flat if len(flat) <= limit else flat[:limit] + "…"
    return MalformedOutputError(f"no JSON object or array could be recovered from the reply {snippet!r}")
