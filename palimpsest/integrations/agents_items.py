"""The Agents SDK's items as recorded messages, and back (for :mod:`palimpsest.integrations.agents_session`).

An item is recorded as one message: its role, its text (the longest of what it says) and, in the message's
metadata, the rest of the item as JSON with where the text goes back, so it reads back unchanged. Items are
checked here before any is recorded: every bad one is named by its index, and none of the batch is written.
"""

from __future__ import annotations

import json
from typing import Any

from events.commands import MAX_METADATA_BYTES
from events.errors import InvalidInputError

ITEM_KEY = "agents_item"  # the message metadata holding the item (its text left out), as JSON
TEXT_AT = "agents_text_at"  # where the message's text goes back into the item, as a JSON list of keys ("": none)
TEXT_KEYS = ("content", "text", "output", "arguments", "refusal")  # item fields that hold what was said or done
LABEL_KEYS = ("id", "type", "role", "status", "call_id", "name")  # never the text of an item


class Unrecordable(ValueError):
    """Why one item cannot be recorded (not a dict, not JSON, too large); :func:`messages_of` names the item."""


def check_items(items: Any, field: str) -> None:
    """Refuse ``items`` unless it is a list of dicts (the SDK's items); each bad one named ``field[i]``."""
    _check_list(items, field)
    problems = [(f"{field}[{n}]", _not_a_dict(item)) for n, item in enumerate(items) if not isinstance(item, dict)]
    if problems:
        raise InvalidInputError(problems, what="session items")


def messages_of(items: list[dict]) -> list[dict]:
    """The message fields of each item (see :func:`message_of`); every item that cannot be recorded is named."""
    _check_list(items, "items")
    out, problems = [], []
    for n, item in enumerate(items):
        try:
            if not isinstance(item, dict):
                raise Unrecordable(_not_a_dict(item))
            out.append(message_of(item))
        except Unrecordable as exc:
            problems.append((f"items[{n}]", str(exc)))
    if problems:
        raise InvalidInputError(problems, what="session items")
    return out


def message_of(item: dict) -> dict:
    """The message fields of an item: its role, its text (the longest of what it says) and, in the metadata, the
    rest of it and where the text goes back. :class:`Unrecordable` says why an item cannot be recorded."""
    try:
        encoded = json.dumps(item, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise Unrecordable(f"not JSON ({exc}); give strings, numbers, booleans, None, lists and dicts only (the "
                           "SDK's items are JSON)") from None
    try:
        encoded.encode("utf-8")
    except UnicodeEncodeError:
        raise Unrecordable("holds a lone surrogate (not valid Unicode text); give valid text") from None
    skeleton = json.loads(encoded)  # the item as it will read back (keys as JSON's: texts)
    leaves = [(p, t) for p, t in _leaves(skeleton) if t.strip() and not any(k in LABEL_KEYS for k in p if
                                                                               isinstance(k, str))]
    said = [(p, t) for p, t in leaves if any(k in TEXT_KEYS for k in p if isinstance(k, str))] or leaves
    path, text = max(said, key=lambda pt: len(pt[1])) if said else ((), "")
    if path:
        _set(skeleton, path, "")
    else:
        text = f"[{item.get('type') or item.get('role') or 'item'}]"
    metadata = {ITEM_KEY: json.dumps(skeleton, ensure_ascii=False),
                TEXT_AT: json.dumps(list(path), ensure_ascii=False) if path else ""}
    if len(json.dumps(metadata, ensure_ascii=False).encode("utf-8")) > MAX_METADATA_BYTES:
        raise Unrecordable(f"a {item.get('type') or 'message'} item holds more than {MAX_METADATA_BYTES} bytes "
                         "besides its text; keep large data out of the conversation (a file or a store item) and "
                         "refer to it")
    return {"role": _role(item), "text": text, "metadata": metadata}


def item_of(row: dict) -> dict:
    """The item a recorded message holds (its text put back), or a plain message for one recorded otherwise."""
    metadata = row.get("metadata") or {}
    if ITEM_KEY not in metadata:
        return {"role": row["role"] if row["role"] != "tool" else "assistant", "content": row["text"]}
    item = json.loads(metadata[ITEM_KEY])
    if metadata.get(TEXT_AT):
        _set(item, tuple(json.loads(metadata[TEXT_AT])), row["text"])
    return item


def text_of_message(item: dict) -> str:
    """What a message item says: its content (a text, or its parts' texts); "" for other items."""
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _leaves(value: Any, path: tuple = ()):
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _leaves(v, (*path, i))


def _role(item: dict) -> str:
    role = item.get("role")
    if role in ("user", "assistant", "system"):
        return role
    if role == "developer":
        return "system"
    return "tool" if str(item.get("type", "")).endswith("_output") else "assistant"


def _set(value: Any, path: tuple, text: str) -> None:
    for key in path[:-1]:
        value = value[key]
    value[path[-1]] = text


def _check_list(items: Any, field: str) -> None:
    if not isinstance(items, (list, tuple)):
        raise InvalidInputError([(field, f"{items!r:.60} (a {type(items).__name__}); give a list of the SDK's "
                                         "items (dicts), e.g. [{'role': 'user', 'content': 'hi'}]")],
                                what="session items")


def _not_a_dict(item: Any) -> str:
    return f"{item!r:.60} (a {type(item).__name__}); give the SDK's item (a dict), e.g. {{'role': 'user', " \
           "'content': 'hi'}"
