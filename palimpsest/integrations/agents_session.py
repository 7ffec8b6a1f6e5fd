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

The tenant, user and session ids are checked when the session is made. A session id may not be one the store's
items are recorded in (:data:`~palimpsest.memory_items.ITEMS_CONVERSATION`, or one beginning ``items:``), so a
session never reads or withdraws a LangGraph store's items.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from contextlib import nullcontext
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from events.commands import MAX_ID_CHARS, canonical_id, id_problems
from events.errors import InvalidInputError
from palimpsest.integrations import ClosedError, missing
from palimpsest.integrations.agents_items import check_items, item_of, messages_of, text_of_message
from palimpsest.memory_items import ITEMS_CONVERSATION, ITEMS_PREFIX

try:
    from agents import FunctionTool, function_tool
    from agents.memory import SessionSettings
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing("openai-agents", "agents", "palimpsest.integrations.agents_session") from exc

RECALL_HEADER = "What you remember about this user (from earlier conversations; use it if it helps):\n"
POPPED, CLEARED = "popped from the agent session", "the agent session was cleared"


class PalimpsestSession:
    """The session ``session_id`` of ``user_id`` (of ``tenant``) in ``memory``: a :class:`palimpsest.Memory` or a
    :class:`palimpsest.client.RemoteMemory` (its key's tenant). ``recall_budget``: the tokens of recalled memory
    given with each user turn; ``judge_feedback``: judge each user turn as feedback on the reply before it."""

    def __init__(self, memory: Any, tenant: str, user_id: str, session_id: str, *, recall_budget: int = 600,
                 judge_feedback: bool = True, session_settings: SessionSettings | None = None,
                 owned: bool = False) -> None:
        from palimpsest.client import RemoteMemory

        tenant, user_id = canonical_id(tenant), canonical_id(user_id)
        _check(tenant, user_id, session_id, recall_budget)
        self.memory, self.tenant, self.user_id, self.session_id = memory, tenant, user_id, session_id
        self.recall_budget, self.judge = recall_budget, judge_feedback
        self.session_settings = session_settings
        self._owned = owned
        self._closed = False
        self._remote = isinstance(memory, RemoteMemory)
        self._lock = threading.Lock() if self._remote else nullcontext()  # one HTTP connection: one call at a time
        self._recalled: dict[str, Any] = {}  # the recall item's text → the context it came from (not stored)
        self._given = None  # the context the coming reply was given
        self._last: tuple[str, Any] | None = None  # (the last reply, its context): judged by the next user turn

    @classmethod
    def open(cls, path: str | Path, tenant: str, user_id: str, session_id: str, *, recall_budget: int = 600,
             judge_feedback: bool = True, session_settings: SessionSettings | None = None,
             **options: Any) -> PalimpsestSession:
        """A session on the store at ``path`` (created if new; opened here, closed by :meth:`close`). The session's
        own options are named; ``options`` go to :meth:`Memory.open` (``embedder``, ``num_shards``, ...)."""
        from palimpsest.memory import Memory

        _check(canonical_id(tenant), canonical_id(user_id), session_id, recall_budget)  # before opening anything
        memory = Memory.open(path, **options)
        try:
            return cls(memory, tenant, user_id, session_id, recall_budget=recall_budget,
                       judge_feedback=judge_feedback, session_settings=session_settings, owned=True)
        except BaseException:
            memory.close()
            raise

    @classmethod
    def connect(cls, url: str, api_key: str, user_id: str, session_id: str, *, recall_budget: int = 600,
                judge_feedback: bool = True, session_settings: SessionSettings | None = None) -> PalimpsestSession:
        """A session on the server at ``url`` (``palimpsest serve``), in the key's tenant."""
        from palimpsest.client import RemoteMemory

        remote = RemoteMemory(url, api_key)
        try:
            return cls(remote, remote.tenant, user_id, session_id, recall_budget=recall_budget,
                       judge_feedback=judge_feedback, session_settings=session_settings, owned=True)
        except BaseException:
            remote.close()
            raise

    def close(self) -> None:
        """Close the session (and the memory it opened); using it afterwards is a :class:`ClosedError`."""
        if self._closed:
            return
        self._closed = True
        if self._owned:
            self.memory.close()

    # -- the SDK's Session protocol -------------------------------------------
    async def get_items(self, limit: int | None = None) -> list[dict]:
        """The session's items, oldest first (the latest ``limit`` of them, or ``session_settings.limit``)."""
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool)):
            raise InvalidInputError([("limit", f"{limit!r:.40}; give an integer (the latest items), or None for "
                                               "all of them")], what="session items")
        if limit is not None and limit <= 0:
            return []
        rows = await self._call(self._conversation, limit)
        return [item_of(row) for row in rows]

    async def add_items(self, items: list[dict]) -> None:
        """Record the items as the conversation's next messages (the recall item this session made is skipped);
        a reply that follows recalled memory is reported with it (``record_reply``). Every item is checked first:
        a bad one (not a dict, not JSON, too large) is an :class:`InvalidInputError` naming it, and none is
        recorded."""
        fields = messages_of(items)
        kept = [(i, f) for i, f in zip(items, fields) if text_of_message(i) not in self._recalled]
        if not kept:
            return
        items = [i for i, _ in kept]
        now = datetime.now(UTC)
        messages = [{"conversation_id": self.session_id, "client_message_id": uuid.uuid4().hex,
                     "occurred_at": (now + timedelta(microseconds=n)).isoformat(), **f}
                    for n, (_, f) in enumerate(kept)]
        await self._call(lambda: self.memory.add_messages(messages, tenant=self.tenant, user_id=self.user_id))
        reply = "\n".join(t for i in items if i.get("role") == "assistant" and (t := text_of_message(i)))
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
        return item_of(rows[0])

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
        check_items(history, "history")
        check_items(new_items, "new_items")
        query = "\n".join(t for i in new_items if i.get("role") == "user" and (t := text_of_message(i)))
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
        if self._closed:
            raise ClosedError("the session is closed (close() was called); open it again with "
                              "PalimpsestSession.open, PalimpsestSession.connect or PalimpsestSession(memory, ...)")

        def run():
            with self._lock:
                return function(*args)

        return await asyncio.to_thread(run)


def _check(tenant: Any, user_id: Any, session_id: Any, recall_budget: Any) -> None:
    """Refuse a session whose ids or budget the memory would refuse (or that names the store's items)."""
    problems = id_problems([("tenant", tenant), ("user_id", user_id)])
    if not isinstance(session_id, str) or not 1 <= len(session_id) <= MAX_ID_CHARS:
        problems.append(("session_id", f"{session_id!r:.60}; give a text of 1 to {MAX_ID_CHARS} characters"))
    elif session_id == ITEMS_CONVERSATION or session_id.startswith(ITEMS_PREFIX):
        problems.append(("session_id", f"{session_id!r:.60} is where the store keeps the user's items (the "
                                       f"conversation {ITEMS_CONVERSATION!r} and those beginning "
                                       f"{ITEMS_PREFIX!r}); give the session another id, e.g. 'support-42'"))
    if not isinstance(recall_budget, int) or isinstance(recall_budget, bool) or recall_budget < 1:
        problems.append(("recall_budget", f"{recall_budget!r:.40}; give a positive integer number of tokens "
                                          "(default 600)"))
    if problems:
        raise InvalidInputError(problems, what="agent session")
