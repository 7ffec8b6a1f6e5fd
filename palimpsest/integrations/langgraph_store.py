"""A LangGraph long-term store on Palimpsest: :class:`PalimpsestStore`, a ``langgraph.store.base.BaseStore``.

    from palimpsest.integrations.langgraph_store import PalimpsestStore

    store = PalimpsestStore.open("./my-store")              # a local store (or PalimpsestStore(memory))
    store = PalimpsestStore.connect(url, api_key)           # or a served one: its key's tenant
    graph = builder.compile(store=store)                    # nodes read and write through `store`

A namespace is ``(tenant, user)`` or ``(tenant, user, collection)``; an item is one of the user's items
(:mod:`palimpsest.memory_items`): a put is the next version of its key (the previous one superseded, kept in
the log), a delete retracts it, nothing is erased but by forgetting the user. ``search(query=...)`` is the hybrid
search of the user's memory over the items' texts; ``filter`` matches their values (exact values, nested
objects, ``$eq``/``$ne``/``$gt``/``$gte``/``$lt``/``$lte``). Every item read back carries its provenance in
``value["_palimpsest"]``: the version's note id, the message search finds it by (memory id), the event ids,
its times and, from a search, its score and rank. That key is dropped from a value that is put.

What an item is found by: the texts in its value (all its strings), or the fields named by ``index_fields`` (or a
put's ``index``, LangGraph's field paths); ``index=False`` keeps it out of search (got by its key only). TTLs are
not supported (an item lives until deleted).

A batch is checked whole before its first write (:mod:`palimpsest.integrations.langgraph_batch`): a rejected batch
writes nothing. A search over every user of a tenant ranks their items together (``rank`` 1..n over the merged
list) from each user's best :data:`SEARCH_CAP` (with a query) or latest :data:`LIST_CAP`.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable, Mapping
from contextlib import nullcontext
from datetime import datetime
from pathlib import Path
from typing import Any

from events.errors import InvalidInputError
from palimpsest.integrations import ClosedError, missing

try:
    from langgraph.store.base import (
        BaseStore, GetOp, Item, ListNamespacesOp, MatchCondition, Op, PutOp, Result, SearchItem, SearchOp,
    )
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing("langgraph", "langgraph", "palimpsest.integrations.langgraph_store") from exc

from palimpsest.integrations.langgraph_batch import (  # noqa: E402 - needs langgraph, checked just above
    LIST_CAP, PROVENANCE, SEARCH_CAP, PartialBatchError, check_batch, found_by, index_problem, stored_value,
)

__all__ = ["LIST_CAP", "PROVENANCE", "SEARCH_CAP", "PalimpsestStore", "PartialBatchError"]


class PalimpsestStore(BaseStore):
    """LangGraph's store interface over a :class:`palimpsest.Memory` or a :class:`palimpsest.client.RemoteMemory`.

    ``index_fields`` are the field paths an item is found by (LangGraph's syntax: ``"text"``, ``"a.b"``,
    ``"tags[*]"``); None (the default): every string in the value. The store closes the memory it opened
    (:meth:`open`, :meth:`connect`), not one it was given.
    """

    supports_ttl = False

    def __init__(self, memory: Any, *, index_fields: list[str] | None = None, owned: bool = False) -> None:
        from palimpsest.client import RemoteMemory

        if problem := index_problem(index_fields, store=True):
            raise InvalidInputError([("index_fields", problem)], what="store")
        self.memory = memory
        self.index_fields = list(index_fields) if index_fields is not None else None
        self._owned = owned
        self._closed = False
        self._remote = isinstance(memory, RemoteMemory)
        # One kept-alive HTTP connection carries a RemoteMemory's calls: one at a time. A Memory takes any number.
        self._lock = threading.Lock() if self._remote else nullcontext()

    @classmethod
    def open(cls, path: str | Path, *, index_fields: list[str] | None = None, **options: Any) -> PalimpsestStore:
        """A store on the Palimpsest store at ``path`` (created if new; ``options`` go to :meth:`Memory.open`)."""
        from palimpsest.memory import Memory

        memory = Memory.open(path, **options)
        try:
            return cls(memory, index_fields=index_fields, owned=True)
        except BaseException:
            memory.close()
            raise

    @classmethod
    def connect(cls, url: str, api_key: str, *, index_fields: list[str] | None = None) -> PalimpsestStore:
        """A store on the server at ``url`` (``palimpsest serve``); namespaces name the key's tenant."""
        from palimpsest.client import RemoteMemory

        remote = RemoteMemory(url, api_key)
        try:
            return cls(remote, index_fields=index_fields, owned=True)
        except BaseException:
            remote.close()
            raise

    def close(self) -> None:
        """Close the store (and the memory it opened); using it afterwards is a :class:`ClosedError`."""
        if self._closed:
            return
        self._closed = True
        if self._owned:
            self.memory.close()

    def __enter__(self) -> PalimpsestStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- BaseStore ---------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Each operation in order (a put is durable before the next operation runs); their results in order.

        Every operation is checked before the first runs: a batch with a bad one is an :class:`InvalidInputError`
        and writes nothing. One that fails later, after puts were applied, is a :class:`PartialBatchError` naming
        them."""
        if self._closed:
            raise ClosedError("the store is closed (close() was called); open it again with PalimpsestStore.open, "
                              "PalimpsestStore.connect or PalimpsestStore(memory)")
        ops = list(ops)
        check_batch(ops, key_tenant=self._key_tenant() if any(isinstance(op, PutOp) for op in ops) else None)
        out: list[Result] = []
        written: list[int] = []
        for n, op in enumerate(ops):
            try:
                out.append(self._run(op))
            except Exception as exc:
                if written:
                    raise PartialBatchError(n, op, written, exc) from exc
                raise
            if isinstance(op, PutOp):
                written.append(n)
        return out

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` on a worker thread (the memory's calls block)."""
        return await asyncio.to_thread(self.batch, list(ops))

    # -- operations --------------------------------------------------------
    def _run(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, PutOp):
            return self._put(op)
        if isinstance(op, SearchOp):
            return self._search(op)
        return self._list_namespaces(op)

    def _get(self, op: GetOp) -> Item | None:
        tenant, user, collection = _where(op.namespace)
        found = self._read(lambda: self.memory.items(tenant, user, collection=collection or "", key=op.key, limit=1))
        return _item(found[0], Item, (tenant, user)) if found else None

    def _put(self, op: PutOp) -> None:
        tenant, user, collection = _where(op.namespace)
        with self._lock:
            if op.value is None:
                self.memory.delete_item(tenant, user, op.key, collection=collection)
                return None
            value = stored_value(op.value)
            text = found_by(value, op.index, self.index_fields)
            self.memory.put_item(tenant, user, op.key, value, collection=collection, text=text or None,
                                 index=op.index is not False and text != "")
        return None

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        collection = prefix[2] if len(prefix) >= 3 else None
        users = self._users(prefix)
        many = len(users) != 1
        cap = SEARCH_CAP if op.query else LIST_CAP
        # Several users: each one's first offset + limit (at most the cap), merged and ranked again below.
        wanted = min(cap, op.offset + op.limit) if many else op.limit
        skip = 0 if many else op.offset
        found: list[tuple[str, str, dict]] = []
        for tenant, user in users:
            if op.query:
                rows = self._read(lambda: self.memory.search_items(tenant, user, op.query, collection=collection,
                                                                   filter=op.filter, limit=wanted, offset=skip))
            else:
                rows = self._read(lambda: self.memory.items(tenant, user, collection=collection, filter=op.filter,
                                                            limit=wanted, offset=skip))
            if many and len(rows) == cap < op.offset + op.limit:  # this user may hold more that would rank in
                raise InvalidInputError([
                    ("offset", f"{op.offset} with limit {op.limit} reaches past the {cap} best items of user "
                               f"{user!r}, the most a search over several users ranks; page with offset + limit "
                               f"at most {cap}, or search one user's namespace (tenant, user)"),
                ], what="store search")
            found += [(tenant, user, row) for row in rows]
        if not many:
            return [_item(row, SearchItem, (tenant, user)) for tenant, user, row in found]
        # one ranking over the users: best score first (a search), else the latest put first
        found.sort(key=lambda f: -f[2]["score"] if op.query else f[2]["updated_at"], reverse=not op.query)
        window = found[op.offset:op.offset + op.limit]
        if op.query:  # the rank in the merged list (as one user's search numbers it: from offset + 1)
            window = [(t, u, {**row, "rank": op.offset + n}) for n, (t, u, row) in enumerate(window, 1)]
        return [_item(row, SearchItem, (tenant, user)) for tenant, user, row in window]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = list(op.match_conditions or ())
        prefix = next((tuple(c.path) for c in conditions if c.match_type == "prefix"), ())
        head = prefix[:prefix.index("*")] if "*" in prefix else prefix  # the tenant and user it names, if any
        namespaces = set()
        for tenant, user in self._users(head[:2]):
            for row in self._read(lambda: self.memory.item_collections(tenant, user)):
                namespaces.add((tenant, user, row["collection"]) if row["collection"] else (tenant, user))
        chosen = [ns for ns in namespaces if all(_matches(c, ns) for c in conditions)]
        if op.max_depth is not None:
            chosen = list({ns[:op.max_depth] for ns in chosen})
        return sorted(chosen)[op.offset:op.offset + op.limit]

    # -- helpers -----------------------------------------------------------
    def _key_tenant(self) -> str | None:
        """The one tenant a served store's key writes (None: a local store writes any)."""
        if not self._remote:
            return None
        with self._lock:
            return self.memory.tenant

    def _users(self, prefix: tuple[str, ...]) -> list[tuple[str, str]]:
        """The (tenant, user) pairs a namespace prefix spans: its own, or every user of its tenant."""
        if len(prefix) >= 2:
            return [(prefix[0], prefix[1])]
        if self._remote:
            with self._lock:
                tenant = self.memory.tenant
                if prefix and prefix[0] not in ("*", tenant):
                    return []
                return [(tenant, u) for u in self.memory.users()]
        if not prefix or prefix[0] == "*":
            raise InvalidInputError([("namespace", "no tenant; a store holds many: begin the prefix with the tenant, "
                                                   "e.g. ('acme',)")], what="store request")
        return [(prefix[0], u) for u in self.memory.users(prefix[0])]

    def _read(self, call):
        """A read of one user: a user the server does not hold has nothing (it answers 404 for such a user)."""
        from palimpsest.transport import ServerError

        with self._lock:
            try:
                return call()
            except ServerError as exc:
                if exc.status == 404 and any(field == "user_id" for field, _ in exc.problems):
                    return []
                raise


def _where(namespace: tuple[str, ...]) -> tuple[str, str, str | None]:
    """``(tenant, user, collection or None)`` of an item's namespace (its shape checked by :func:`check_batch`)."""
    return namespace[0], namespace[1], namespace[2] if len(namespace) == 3 else None


def _item(row: Mapping[str, Any], kind: type, stream: tuple[str, str]) -> Item:
    """A LangGraph item of an item the memory answered, its provenance in ``value["_palimpsest"]``."""
    provenance = {k: row[k] for k in ("note_id", "memory_id", "event_ids", "version", "created_at", "updated_at")}
    if "score" in row:
        provenance.update(score=row["score"], rank=row["rank"])
    value = {**row["value"], PROVENANCE: provenance}
    namespace = (*stream, *([row["collection"]] if row["collection"] else []))
    times = {"created_at": datetime.fromisoformat(row["created_at"]),
             "updated_at": datetime.fromisoformat(row["updated_at"])}
    if kind is SearchItem:
        return SearchItem(namespace, row["key"], value, score=row.get("score"), **times)
    return Item(value=value, key=row["key"], namespace=namespace, **times)


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """Whether ``namespace`` begins (``prefix``) or ends (``suffix``) with the condition's path (``*``: any)."""
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    part = namespace[:len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path):]
    return all(p in ("*", n) for p, n in zip(path, part))
