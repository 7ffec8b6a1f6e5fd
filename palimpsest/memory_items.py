"""Items: a user's keyed records, the :class:`palimpsest.Memory` writes (a mixin). The reads (``items``,
``item_collections``, ``search_items``) are shard readers declared in :mod:`palimpsest.operations`.

A put is the next version of the item of its key: its note is superseded, never removed, and the text the item
is found by is recorded as a message (role ``system``, conversation ``items`` or ``items:<collection>``), so
search, context and re-embedding see it like any memory (the message of a superseded version is archived). A
delete retracts the note (and archives its message). See
:mod:`projections.queries.items` for how an item is stored.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from actors import commands as c
from events.commands import MAX_TEXT_CHARS, canonical_id, id_problems, is_utf8, validate_messages
from events.errors import InvalidInputError
from palimpsest.remote import Shards
from projections.queries.items import MAX_COLLECTION_CHARS, MAX_ITEM_BYTES, MAX_KEY_CHARS, item_text

# The conversations the items' messages are recorded in: "items", and "items:<collection>" for a collection's.
ITEMS_CONVERSATION, ITEMS_PREFIX = "items", "items:"


def _where(tenant: Any, user_id: Any, key: Any, collection: Any, what: str) -> tuple[str, str, str, str]:
    """``(tenant, user_id, key, collection)`` checked (the collection ``""`` when none); every problem at once."""
    tenant, user_id = canonical_id(tenant), canonical_id(user_id)
    problems = id_problems([("tenant", tenant), ("user_id", user_id)])
    if not isinstance(key, str) or not key or len(key) > MAX_KEY_CHARS or not is_utf8(key):
        problems.append(("key", f"{key!r:.60}; give a non-empty text of at most {MAX_KEY_CHARS} characters"))
    if collection is None:
        collection = ""
    elif not isinstance(collection, str) or not collection or len(collection) > MAX_COLLECTION_CHARS \
            or "/" in collection or not is_utf8(collection):
        problems.append(("collection", f"{collection!r:.60}; give 1 to {MAX_COLLECTION_CHARS} characters without "
                                       "'/', or leave it out"))
    if problems:
        raise InvalidInputError(problems, what=what)
    return tenant, user_id, key, collection


def _value_json(value: Any) -> str:
    if not isinstance(value, dict):
        raise InvalidInputError([("value", f"a {type(value).__name__}; give a JSON object (a dict)")], what="put item")
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError([("value", f"not JSON ({exc}); give strings, numbers, booleans, null, lists and "
                                           "objects only (finite numbers)")], what="put item") from None
    if not is_utf8(text):
        raise InvalidInputError([("value", "holds a lone surrogate (an unpaired \\ud800-\\udfff), which is no "
                                           "character; give valid text")], what="put item")
    size = len(text.encode("utf-8"))
    if size > MAX_ITEM_BYTES:
        raise InvalidInputError([("value", f"{size} bytes as JSON, more than {MAX_ITEM_BYTES}; store large "
                                           "content elsewhere and keep a reference in the item")], what="put item")
    return text


class ItemsApiMixin:
    shards: Shards  # set by Memory.__init__

    def put_item(self, tenant: str, user_id: str, key: str, value: dict, *, collection: str | None = None,
                 text: str | None = None, index: bool = True) -> dict:
        """Put the item ``key`` (of ``collection``, if given): the next version of its note (version 1 when new),
        the previous version superseded and kept. With ``index`` (the default) the item is found by search through
        ``text`` (default: the strings in ``value``), recorded as a message. Returns the version's ``note_id``
        and ``version``, the message's ``memory_id`` (None unindexed) and the version it ``supersedes``."""
        tenant, user_id, key, collection = _where(tenant, user_id, key, collection, "put item")
        value_json = _value_json(value)
        text = item_text(value) if text is None else text
        if not isinstance(text, str) or not text.strip() or len(text) > MAX_TEXT_CHARS or not is_utf8(text):
            raise InvalidInputError([("text", f"{text!r:.60}; give a non-blank text of at most {MAX_TEXT_CHARS} "
                                              "characters, or leave it out (the value's texts)")], what="put item")
        now = datetime.now(UTC)
        command_id = c.new_command_id()
        message = vector = None
        if index:
            [message] = validate_messages([{
                "tenant": tenant, "user_id": user_id, "conversation_id": ITEMS_PREFIX + collection if collection else
                ITEMS_CONVERSATION, "role": "system", "text": text, "occurred_at": now, "client_message_id":
                f"item-put:{command_id}", "metadata": {"item_collection": collection, "item_key": key}}],
                label="item")
            vector = self.embedder.encode([message.index_text()])[0]
        return self.shards.send(tenant, user_id, c.PutItem(
            command_id=command_id, tenant=tenant, user_id=user_id, collection=collection, key=key,
            value_json=value_json, text=text, message=message, vector=vector, model_id=self.embedder.model_id,
            now=now))

    def delete_item(self, tenant: str, user_id: str, key: str, *, collection: str | None = None) -> dict:
        """Delete the item ``key`` (of ``collection``, if given): its active version is retracted (every version
        stays in the log; :meth:`forget` erases). ``deleted`` is False when it had none (nothing is written)."""
        tenant, user_id, key, collection = _where(tenant, user_id, key, collection, "delete item")
        return self.shards.send(tenant, user_id, c.DeleteItem(tenant=tenant, user_id=user_id, collection=collection,
                                                              key=key, now=datetime.now(UTC)))

    def users(self, tenant: str) -> list[str]:
        """The users the store holds of ``tenant``, by id."""
        parts = self.shards.ask_each(c.Streams())
        return sorted({u for streams in parts for t, u in streams if t == canonical_id(tenant)})
