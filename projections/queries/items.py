"""Items: a user's keyed records (a LangGraph store's, an application's), read from the notes they are.

An item is a note whose operations name it by its collection and key: a put records the item's text as a
message (what search finds) and a note operation on the note of that key, ``add`` for the first version and
``update`` for every later one (the previous version is superseded, never removed); a delete retracts the
note (``delete``). The message of a closed version is archived by hand, so the memory's default search holds
each item's current version only. Such a note has:

- ``slot`` ``item:<collection>/<key>`` (the collection is ``""`` outside any collection and has no ``/``);
- ``value`` the item's value as JSON text, ``text`` the text it is found by, ``lifecycle`` ``system`` (it never
  decays, so the note reviewer leaves it alone), ``decider`` :data:`ITEM_DECIDER`;
- ``source_message_ids`` the message of the put (none when the item was put unindexed).

The note deciders leave item notes alone (:func:`is_item`): only a put or a delete of its key changes an item.
Pure functions of the folded notes: no clock, no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from events.errors import InvalidInputError
from projections.folds.notes import Note, NoteState
from projections.folds.state import UserMemory

ITEM_DECIDER = "items"  # the decider of every item's note operations
SLOT_PREFIX = "item:"
MAX_ITEM_BYTES = 100_000  # an item's value as JSON (UTF-8)
MAX_KEY_CHARS = 500
MAX_COLLECTION_CHARS = 200
FILTER_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


def slot(collection: str, key: str) -> str:
    """The note slot of the item ``key`` in ``collection``."""
    return f"{SLOT_PREFIX}{collection}/{key}"


def parse_slot(value: str | None) -> tuple[str, str] | None:
    """``(collection, key)`` of an item's slot, None for any other slot."""
    if not value or not value.startswith(SLOT_PREFIX):
        return None
    collection, sep, key = value[len(SLOT_PREFIX):].partition("/")
    return (collection, key) if sep else None


def is_item(note: Note) -> bool:
    return note.decider == ITEM_DECIDER and parse_slot(note.slot) is not None


def active_items(notes: NoteState, collection: str | None = None) -> Iterator[Note]:
    """The active item notes (of ``collection``; of every collection when None), in log order."""
    for note in notes.active():
        where = parse_slot(note.slot) if note.decider == ITEM_DECIDER else None
        if where is not None and (collection is None or where[0] == collection):
            yield note


def current(notes: NoteState, collection: str, key: str) -> Note | None:
    """The active version of the item ``key`` in ``collection``, None if it has none (never put, or deleted)."""
    wanted = slot(collection, key)
    return next((n for n in notes.notes.values()
                 if n.status == "active" and n.slot == wanted and n.decider == ITEM_DECIDER), None)


def item_view(memory: UserMemory, note: Note) -> dict:
    """One item version as the API answers it: where it is, its value, and where it comes from in the log."""
    collection, key = parse_slot(note.slot)
    first = memory.notes.history(note.note_id)[0]
    memory_id = note.source_message_ids[0] if note.source_message_ids else None
    return {
        "collection": collection,
        "key": key,
        "value": json.loads(note.value or "{}"),
        "text": note.text,
        "indexed": memory_id is not None,
        "version": note.version,
        "status": note.status,
        "created_at": first.valid_from.isoformat(),
        "updated_at": note.valid_from.isoformat(),
        "valid_to": note.valid_to.isoformat() if note.valid_to else None,
        "note_id": note.note_id,  # this version's id: the event id of the put that made it
        "memory_id": memory_id,  # the message of the put: the memory a search finds
        "event_ids": [note.note_id, *([memory_id] if memory_id else [])],
    }


# -- the text an item is found by ------------------------------------------------
def item_text(value: Any) -> str:
    """The texts of a value (its strings, in order, one per line); the value as JSON when it holds none."""
    texts = [t for t in _strings(value) if t.strip()]
    return "\n".join(texts) if texts else json.dumps(value, ensure_ascii=False)


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


# -- filters on values (LangGraph's: exact matches and $eq/$ne/$gt/$gte/$lt/$lte) ----
def check_filter(flt: dict | None, where: str = "filter") -> list[tuple[str, str]]:
    """The problems of a filter (an unknown operator, a comparison with no number), each with its fix."""
    problems: list[tuple[str, str]] = []
    for name, wanted in (flt or {}).items():
        if isinstance(wanted, dict):
            ops = [k for k in wanted if k.startswith("$")]
            for op in ops:
                if op not in FILTER_OPERATORS:
                    problems.append((f"{where}.{name}", f"unknown operator {op!r}; use one of "
                                                        f"{', '.join(FILTER_OPERATORS)}"))
                elif op in ("$gt", "$gte", "$lt", "$lte") and not _number(wanted[op]):
                    problems.append((f"{where}.{name}.{op}", f"{wanted[op]!r}; compare with a number"))
            if not ops:
                problems += check_filter(wanted, f"{where}.{name}")
    return problems


def matches(value: dict, flt: dict | None) -> bool:
    """Whether ``value`` passes ``flt``: every named field equals the wanted value (nested objects field by
    field), or passes its operators; a comparison with a missing or non-numeric field fails."""
    return all(_matches(value.get(name) if isinstance(value, dict) else None, wanted)
               for name, wanted in (flt or {}).items())


def _matches(found: Any, wanted: Any) -> bool:
    if isinstance(wanted, dict):
        if any(k.startswith("$") for k in wanted):
            return all(_compare(found, op, operand) for op, operand in wanted.items())
        return isinstance(found, dict) and all(_matches(found.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, (list, tuple)):
        return (isinstance(found, (list, tuple)) and len(found) == len(wanted)
                and all(_matches(f, w) for f, w in zip(found, wanted)))
    return found == wanted


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _compare(found: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return found == operand
    if op == "$ne":
        return found != operand
    if not (_number(found) and _number(operand)):
        return False
    return {"$gt": found > operand, "$gte": found >= operand, "$lt": found < operand,
            "$lte": found <= operand}[op]
