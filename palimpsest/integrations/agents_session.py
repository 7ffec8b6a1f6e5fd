"""An OpenAI Agents SDK session on Palimpsest: :class:`PalimpsestSession`, the SDK's conversation memory with
long-term recall and the learning loop.

    from agents import Agent, RunConfig, Runner
    from palimpsest.integrations.agents_session import PalimpsestSession

    session = PalimpsestSession(memory, "acme", "alice", "support-42")   # a Memory or a RemoteMemory
    result = await Runner.run(agent, "I'm allergic to peanuts", session=session,
                              run_config=RunConfig(session_input_callback=session.recall))

The session is one conversation of the user (its id is the conversation's): every item the SDK adds is a
recorded message (its role, its text; the whole item in the message's metadata, so it reads back unchanged), and
the user's turns feed the long-term memory like any conversation's (notes, episodes, the profile). A popped item,
and the items of a cleared session, are archived by hand (withdrawn: out of the history and of recall, kept in the
log; ``restore`` brings them back); nothing is erased but by forgetting the user.

Long-term recall: :meth:`PalimpsestSession.recall`, given as the run's ``session_input_callback``, puts a system
item with what the user's memory holds about the new input (a token-budgeted context of every conversation)
before it; that item is never stored. :meth:`PalimpsestSession.recall_tool` gives the agent the same as a tool it
may call. Either way the learning loop is closed: the reply that follows is reported with the memories it was given
(``record_reply``: those it used are reinforced), and the user's next turn is judged as feedback on that reply.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from contextlib import nullcontext
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from events.commands import MAX_METADATA_BYTES
from events.errors import InvalidInputError
from palimpsest.integrations import missing

try:
    from agents import FunctionTool, function_tool
    from agents.memory import SessionSettings
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing("openai-agents", "agents", "palimpsest.integrations.agents_session") from exc

ITEM_KEY = "agents_item"  # the message metadata holding the item (its text left out), as JSON
TEXT_AT = "agents_text_at"  # where the message's text goes back into the item, as a JSON list of keys ("": none)
RECALL_HEADER = "What you remember about this user (from earlier conversations; use it if it helps):\n"
TEXT_KEYS = ("content", "text", "output", "arguments", "refusal")  # item fields that hold what was said or done
LABEL_KEYS = ("id", "type", "role", "status", "call_id", "name")  # never the text of an item
POPPED, CLEARED = "popped from the agent session", "the agent session was cleared"


class PalimpsestSession:
    """The session ``session_id`` of ``user_id`` (of ``tenant``) in ``memory``: a :class:`palimpsest.Memory` or a
    :class:`palimpsest.client.RemoteMemory` (its key's tenant). ``recall_budget``: the tokens of recalled memory
    given with each user turn; ``judge_feedback``: judge each user turn as feedback on the reply before it."""

    def __init__(self, memory: Any, tenant: str, user_id: str, session_id: str, *, recall_budget: int = 600,
                 judge_feedback: bool = True, session_settings: SessionSettings | None = None,
                 owned: bool = False) -> None:
        from palimpsest.client import RemoteMemory

        self.memory, self.tenant, self.user_id, self.session_id = memory, tenant, user_id, session_id
        self.recall_budget, self.judge = recall_budget, judge_feedback
        self.session_settings = session_settings
        self._owned = owned
        self._remote = isinstance(memory, RemoteMemory)
        self._lock = threading.Lock() if self._remote else nullcontext()  # one HTTP connection: one call at a time
        self._recalled: dict[str, Any] = {}  # the recall item's text → the context it came from (not stored)
        self._given = None  # the context the coming reply was given
        self._last: tuple[str, Any] | None = None  # (the last reply, its context): judged by the next user turn

    @classmethod
    def open(cls, path: str | Path, tenant: str, user_id: str, session_id: str, **options: Any) -> PalimpsestSession:
        """A session on the store at ``path`` (opened here, closed by :meth:`close`)."""
        from palimpsest.memory import Memory

        return cls(Memory.open(path), tenant, user_id, session_id, owned=True, **options)

    @classmethod
    def connect(cls, url: str, api_key: str, user_id: str, session_id: str, **options: Any) -> PalimpsestSession:
        """A session on the server at ``url`` (``palimpsest serve``), in the key's tenant."""
        from palimpsest.client import RemoteMemory

        remote = RemoteMemory(url, api_key)
        return cls(remote, remote.tenant, user_id, session_id, owned=True, **options)

    def close(self) -> None:
        if self._owned:
            self.memory.close()

    # -- the SDK's Session protocol -------------------------------------------
    async def get_items(self, limit: int | None = None) -> list[dict]:
        """The session's items, oldest first (the latest ``limit`` of them, or ``session_settings.limit``)."""
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        if limit is not None and limit <= 0:
            return []
        rows = await self._call(self._conversation, limit)
        return [_item_of(row) for row in rows]

    async def add_items(self, items: list[dict]) -> None:
        """Record the items as the conversation's next messages (the recall item this session made is skipped);
        a reply that follows recalled memory is reported with it (``record_reply``)."""
        items = [i for i in items if _text_of_message(i) not in self._recalled]
        if not items:
            return
        now = datetime.now(UTC)
        messages = [{"conversation_id": self.session_id, "client_message_id": uuid.uuid4().hex,
                     "occurred_at": (now + timedelta(microseconds=n)).isoformat(), **_message_of(item)}
                    for n, item in enumerate(items)]
        await self._call(lambda: self.memory.add_messages(messages, tenant=self.tenant, user_id=self.user_id))
        reply = "\n".join(t for i in items if i.get("role") == "assistant" and (t := _text_of_message(i)))
        if reply and self._given is not None:
            given, self._given = self._given, None
            await self._call(lambda: self.memory.record_reply(self.tenant, self.user_id, reply, given))
            self._last = (reply, given)

    async def pop_item(self) -> dict | None:
        """Withdraw the latest item (archived by hand: out of the history and of recall, kept in the log)."""
        rows = await self._call(self._conversation, 1)
        if not rows:
            return None
        await self._call(lambda: self.memory.archive(self.tenant, self.user_id, [rows[0]["memory_id"]],
                                                     reason=POPPED))
        return _item_of(rows[0])

    async def clear_session(self) -> None:
        """Withdraw every item of the session (archived by hand: kept in the log, restorable)."""
        rows = await self._call(self._conversation, None)
        if rows:
            await self._call(lambda: self.memory.archive(self.tenant, self.user_id, [r["memory_id"] for r in rows],
                                                         reason=CLEARED))

    # -- long-term recall ------------------------------------------------------
    async def recall(self, history: list[dict], new_items: list[dict]) -> list[dict]:
        """A ``session_input_callback``: the history, then a system item with what the memory holds about the new
        user input (when it holds anything), then the new input. The user input is first judged as feedback on
        the reply before it, if that reply was given recalled memory."""
        query = "\n".join(t for i in new_items if i.get("role") == "user" and (t := _text_of_message(i)))
        if not query.strip():
            return [*history, *new_items]
        if self.judge and self._last is not None:
            (reply, given), self._last = self._last, None
            await self._call(lambda: self.memory.judge_feedback(self.tenant, self.user_id, query, reply,
                                                                retrieved=given))
        context = self._given = await self._context(query)
        if context is None:
            return [*history, *new_items]
        text = RECALL_HEADER + context.text
        self._recalled = {text: context}
        return [*history, {"role": "system", "content": text}, *new_items]

    def recall_tool(self) -> FunctionTool:
        """A tool the agent may call to search the user's long-term memory (the context it answers is reported
        with the reply that follows, as :meth:`recall`'s is)."""

        @function_tool(name_override="recall_memories")
        async def recall_memories(query: str) -> str:
            """Search what you remember about the user from earlier conversations.

            Args:
                query: what to look for, in the user's words (e.g. "allergies", "where they live").
            """
            context = await self._context(query)
            if context is None:
                return "Nothing is remembered about that."
            self._given = context
            return context.text

        return recall_memories

    async def _context(self, query: str):
        """The user's context for ``query`` (None when the memory holds nothing of the user, or nothing for it)."""
        from palimpsest.transport import ServerError

        try:
            context = await self._call(lambda: self.memory.build_context(self.tenant, self.user_id, query,
                                                                         token_budget=self.recall_budget))
        except ServerError as exc:
            if exc.status == 404:  # a user the server does not hold yet
                return None
            raise
        return context if context.items else None

    # -- helpers --------------------------------------------------------------
    def _conversation(self, limit: int | None) -> list[dict]:
        from palimpsest.transport import ServerError

        try:
            return self.memory.conversation(self.tenant, self.user_id, self.session_id, limit=limit)
        except ServerError as exc:
            if exc.status == 404 and any(field == "user_id" for field, _ in exc.problems):
                return []
            raise

    async def _call(self, function, *args):
        """``function(*args)`` on a worker thread (the memory's calls block), one at a time over HTTP."""

        def run():
            with self._lock:
                return function(*args)

        return await asyncio.to_thread(run)


# -- an item as a message, and back ----------------------------------------------
def _text_of_message(item: dict) -> str:
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


def _message_of(item: dict) -> dict:
    """The message fields of an item: its role, its text (the longest of what it says) and, in the metadata, the
    rest of it and where the text goes back."""
    if not isinstance(item, dict):
        raise InvalidInputError([("items", f"a {type(item).__name__}; give the SDK's input items (dicts)")],
                                what="session items")
    leaves = [(p, t) for p, t in _leaves(item) if t.strip() and not any(k in LABEL_KEYS for k in p if
                                                                           isinstance(k, str))]
    said = [(p, t) for p, t in leaves if any(k in TEXT_KEYS for k in p if isinstance(k, str))] or leaves
    path, text = max(said, key=lambda pt: len(pt[1])) if said else ((), "")
    skeleton = json.loads(json.dumps(item))
    if path:
        _set(skeleton, path, "")
    else:
        text = f"[{item.get('type') or item.get('role') or 'item'}]"
    metadata = {ITEM_KEY: json.dumps(skeleton, ensure_ascii=False),
                TEXT_AT: json.dumps(list(path), ensure_ascii=False) if path else ""}
    if len(json.dumps(metadata, ensure_ascii=False).encode("utf-8")) > MAX_METADATA_BYTES:
        raise InvalidInputError([("items", f"a {item.get('type') or 'message'} item holds more than "
                                           f"{MAX_METADATA_BYTES} bytes besides its text; keep large data out of "
                                           "the conversation (a file or a store item) and refer to it")],
                                what="session items")
    return {"role": _role(item), "text": text, "metadata": metadata}


def _item_of(row: dict) -> dict:
    """The item a recorded message holds (its text put back), or a plain message for one recorded otherwise."""
    metadata = row.get("metadata") or {}
    if ITEM_KEY not in metadata:
        return {"role": row["role"] if row["role"] != "tool" else "assistant", "content": row["text"]}
    item = json.loads(metadata[ITEM_KEY])
    if metadata.get(TEXT_AT):
        _set(item, tuple(json.loads(metadata[TEXT_AT])), row["text"])
    return item


def _set(value: Any, path: tuple, text: str) -> None:
    for key in path[:-1]:
        value = value[key]
    value[path[-1]] = text
