"""A LangGraph store batch checked whole before its first write (for :mod:`palimpsest.integrations.langgraph_store`).

LangGraph hands a store a batch of operations; the memory writes one put at a time. So every operation of a batch
is checked here first (its namespace, key, value as a JSON object and its size, ``index``, a search's window), and
a batch with any problem is refused before anything is written, each problem named by its operation. A write that
still fails once the batch runs (the store went away, a server refused) is a :class:`PartialBatchError` that says
which operations were applied.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from events.commands import canonical_id, id_problems, is_utf8
from events.errors import InvalidInputError, PalimpsestError
from palimpsest.integrations import missing
from palimpsest.operations import OPERATIONS
from projections.queries.items import MAX_COLLECTION_CHARS, MAX_ITEM_BYTES, MAX_KEY_CHARS

try:
    from langgraph.store.base import GetOp, ListNamespacesOp, Op, PutOp, SearchOp, get_text_at_path, tokenize_path
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing("langgraph", "langgraph", "palimpsest.integrations.langgraph_batch") from exc

PROVENANCE = "_palimpsest"  # the key of the provenance in a value read back (dropped from a value put)
NAMESPACE_FIX = "give (tenant, user) or (tenant, user, collection), e.g. ('acme', 'alice', 'memories')"


def _most(operation: str) -> int:
    """The largest ``limit`` one user's read ``operation`` answers (its declaration in palimpsest.operations)."""
    return next(p.le for p in OPERATIONS[operation].params if p.name == "limit")


SEARCH_CAP = _most("search_items")  # one user's items found by a query
LIST_CAP = _most("items")  # one user's items listed (no query)


class PartialBatchError(PalimpsestError):
    """A batch stopped at an operation after earlier puts were applied (they are durable; the rest did not run)."""

    def __init__(self, failed: int, op: Op, written: list[int], cause: BaseException) -> None:
        self.failed, self.written = failed, tuple(written)
        why = "; ".join(f"{loc}: {msg}" for loc, msg in cause.problems) if isinstance(cause, InvalidInputError) \
            else f"{type(cause).__name__}: {cause}"
        applied = ", ".join(f"ops[{i}]" for i in written)
        super().__init__(f"store batch stopped at ops[{failed}] ({type(op).__name__}: {why}); written and kept: "
                         f"{applied} (puts and deletes); not run: ops[{failed}] and after. Fix ops[{failed}] and send "
                         "it and the operations after it again")


def stored_value(value: Mapping[str, Any]) -> dict:
    """The value a put stores: its own fields, the provenance of a value read back left out."""
    return {k: v for k, v in value.items() if k != PROVENANCE}


def found_by(value: dict, index: Any, index_fields: list[str] | None) -> str | None:
    """What the item is found by: None (the value's strings), a text, or "" (nothing: not indexed)."""
    fields = index_fields if index is None else index
    if fields is False or fields is None or list(fields) == ["$"]:
        return None
    texts = [t for path in fields for t in get_text_at_path(value, tokenize_path(path)) if t.strip()]
    return "\n".join(texts)


def index_problem(index: Any, *, store: bool = False) -> str | None:
    """Why ``index`` is not what a put's ``index`` may be (False, None or a list of field paths), or the store's
    ``index_fields`` (``store``: None or a list of field paths)."""
    if index is None or (index is False and not store):
        return None
    if isinstance(index, (list, tuple)) and all(isinstance(p, str) and p for p in index):
        return None
    choices = "None (every string of the value)" if store else \
        "False (not searchable), None (the store's index_fields)"
    return f"{index!r:.60}; give {choices} or a list of field paths such as ['text', 'tags[*]']"


def check_batch(ops: list[Any], *, key_tenant: str | None = None) -> None:
    """Refuse ``ops`` (an :class:`InvalidInputError` listing every problem) unless each can run; ``key_tenant``:
    the only tenant a served store's key may write."""
    problems: list[tuple[str, str]] = []
    for n, op in enumerate(ops):
        at = f"ops[{n}]." if len(ops) > 1 else ""
        problems += [(at + field, fix) for field, fix in _problems(op, key_tenant)]
    if problems:
        kinds = {GetOp: "get", PutOp: "put", SearchOp: "search", ListNamespacesOp: "namespace listing"}
        kind = kinds.get(type(ops[0]), "batch") if len(ops) == 1 else "batch"
        raise InvalidInputError(problems, what=f"store {kind}")


def _problems(op: Any, key_tenant: str | None) -> list[tuple[str, str]]:
    if isinstance(op, PutOp):
        return _namespace(op.namespace, key_tenant) + _key(op.key) + _put(op)
    if isinstance(op, GetOp):
        return _namespace(op.namespace, None) + ([] if isinstance(op.key, str) else
                                                 [("key", f"{op.key!r:.60}; give the item's key (a text)")])
    if isinstance(op, SearchOp):
        return _search(op)
    if isinstance(op, ListNamespacesOp):
        return []
    return [("op", f"{type(op).__name__}; give a GetOp, PutOp, SearchOp or ListNamespacesOp")]


def _namespace(namespace: Any, key_tenant: str | None) -> list[tuple[str, str]]:
    if not isinstance(namespace, (tuple, list)) or not 2 <= len(namespace) <= 3:
        return [("namespace", f"{namespace!r:.80}; {NAMESPACE_FIX}")]
    problems = id_problems([(f"namespace[{i}] ({name})", canonical_id(part))
                            for i, (name, part) in enumerate(zip(("tenant", "user"), namespace))])
    if len(namespace) == 3:
        collection = namespace[2]
        if not isinstance(collection, str) or not collection or len(collection) > MAX_COLLECTION_CHARS \
                or "/" in collection or not is_utf8(collection):
            problems.append(("namespace[2] (collection)", f"{collection!r:.60}; give 1 to "
                             f"{MAX_COLLECTION_CHARS} characters of text without '/', or leave the collection out"))
    if key_tenant is not None and not problems and canonical_id(namespace[0]) != key_tenant:
        problems.append(("namespace[0] (tenant)", f"{namespace[0]!r:.60}, but your key is tenant "
                                                  f"{key_tenant!r}; name that tenant, or use that tenant's key"))
    return problems


def _key(key: Any) -> list[tuple[str, str]]:
    if isinstance(key, str) and key and len(key) <= MAX_KEY_CHARS and is_utf8(key):
        return []
    return [("key", f"{key!r:.60}; give a non-empty text of at most {MAX_KEY_CHARS} characters")]


def _put(op: PutOp) -> list[tuple[str, str]]:
    problems = []
    if op.ttl is not None:
        problems.append(("ttl", f"{op.ttl!r}; this store keeps an item until it is deleted: leave ttl out"))
    if op.value is None:  # a delete
        return problems
    if problem := index_problem(op.index):
        problems.append(("index", problem))
    if not isinstance(op.value, Mapping):
        return [*problems, ("value", f"{op.value!r:.60} (a {type(op.value).__name__}); give a dict (a JSON "
                                     "object), e.g. {'text': 'Alice likes tea'}")]
    try:
        text = json.dumps(stored_value(op.value), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        return [*problems, ("value", f"not JSON ({exc}); give strings, numbers, booleans, None, lists and dicts "
                                     "only (finite numbers)")]
    if not is_utf8(text):
        return [*problems, ("value", "holds a lone surrogate (not valid Unicode text); give valid text")]
    if (size := len(text.encode("utf-8"))) > MAX_ITEM_BYTES:
        problems.append(("value", f"{size} bytes as JSON, more than {MAX_ITEM_BYTES}; store large content "
                                  "elsewhere and keep a reference in the item"))
    return problems


def _search(op: SearchOp) -> list[tuple[str, str]]:
    problems = []
    prefix = op.namespace_prefix
    if not isinstance(prefix, (tuple, list)) or len(prefix) > 3:
        problems.append(("namespace_prefix", f"{prefix!r:.80}: namespaces here are (tenant, user) or (tenant, "
                                             "user, collection); give one of those or a part of it, e.g. ('acme',)"))
    if not isinstance(op.offset, int) or isinstance(op.offset, bool) or op.offset < 0:
        problems.append(("offset", f"{op.offset!r:.40}; give an integer, at least 0"))
    cap = SEARCH_CAP if op.query else LIST_CAP
    if not isinstance(op.limit, int) or isinstance(op.limit, bool) or not 1 <= op.limit <= cap:
        problems.append(("limit", f"{op.limit!r:.40}; give an integer from 1 to {cap}"
                                  + (" (a search with a query)" if op.query else "")))
    return problems
