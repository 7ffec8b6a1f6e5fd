"""Item deciders: a put is a new version of the item's note (and the message search finds it by); a delete
retracts the note. Items are read from the notes (:mod:`projections.queries.items`); nothing is erased but by
forgetting the user.

A put appends, in one transaction: the message (recorded, classified, embedded: as any message, so search,
context and re-embedding treat it as one) and a ``note_operation`` ``add`` (first version) or ``update``
(superseding the active version) whose source is that message. The message of a version that is superseded or
deleted is archived by hand (``memory_archived``, reason ``manual``): the memory's default search and contexts
hold an item's current version only, the archive and the log every one. A delete of an item that has no active
version is already satisfied: no event.
"""

from __future__ import annotations

import numpy as np

from actors.commands import DeleteItem, PutItem
from actors.decide_reembed import user_model
from actors.decision import Decision, Deps, new_event_id
from actors.deciders import decide_record
from events.envelope import PendingEvent
from events.errors import InvalidInputError
from events.model import MemoryArchived, NoteContent, NoteOperation
from projections.folds.state import ShardState
from projections.queries.items import ITEM_DECIDER, current, slot
from projections.rules.text import has_cjk


def decide_put(state: ShardState, cmd: PutItem, deps: Deps) -> Decision:
    """The item's next version; the outcome names it (note id, version) and its message (memory id, or None)."""
    memory = state.user(cmd.tenant, cmd.user_id)
    pending: list[PendingEvent] = []
    memory_id = None
    if cmd.message is not None:
        expected = user_model(memory, deps)
        if cmd.model_id != expected:
            raise InvalidInputError([("model_id", f"{cmd.model_id!r} differs from {expected!r}, the model "
                                                  f"{cmd.tenant}/{cmd.user_id} is searched by; embed with the "
                                                  "store's model")], what="put item")
        pending, outcomes = decide_record(state, [cmd.message], np.asarray([cmd.vector]), cmd.model_id, deps.dim)
        memory_id = outcomes[0]["memory_id"]
    previous = current(memory.notes, cmd.collection, cmd.key) if memory is not None else None
    content = NoteContent(category="fact", text=cmd.text, slot=slot(cmd.collection, cmd.key), value=cmd.value_json,
                          confidence=1.0, language="zh" if has_cjk(cmd.text) else "en", lifecycle="system")
    where = f"{cmd.collection}/{cmd.key}" if cmd.collection else cmd.key
    operation = NoteOperation(
        op="update" if previous else "add", target_note_id=previous.note_id if previous else None, note=content,
        source_message_ids=(memory_id,) if memory_id else (), valid_from=cmd.now, decider=ITEM_DECIDER,
        reason=f"put of item {where!r}" + (f", superseding version {previous.version}" if previous else ""),
    )
    note_id = new_event_id()
    pending.append(PendingEvent(cmd.tenant, cmd.user_id, note_id, operation, causation_id=memory_id,
                                correlation_id=memory_id or note_id))
    if previous is not None:
        pending += _withdrawn(memory, previous, cmd, f"item {where!r}: superseded by version {previous.version + 1}",
                              note_id)
    return Decision(pending, {"collection": cmd.collection, "key": cmd.key, "note_id": note_id,
                              "version": previous.version + 1 if previous else 1, "memory_id": memory_id,
                              "supersedes": previous.note_id if previous else None})


def decide_delete(state: ShardState, cmd: DeleteItem, deps: Deps) -> Decision:
    """Retract the item's active version; the outcome says whether there was one (and which)."""
    memory = state.user(cmd.tenant, cmd.user_id)
    previous = current(memory.notes, cmd.collection, cmd.key) if memory is not None else None
    outcome = {"collection": cmd.collection, "key": cmd.key, "deleted": previous is not None,
               "note_id": previous.note_id if previous else None}
    if previous is None:
        return Decision([], outcome)
    where = f"{cmd.collection}/{cmd.key}" if cmd.collection else cmd.key
    operation = NoteOperation(op="delete", target_note_id=previous.note_id, valid_from=cmd.now,
                              decider=ITEM_DECIDER, reason=f"delete of item {where!r}")
    op_id = new_event_id()
    return Decision([PendingEvent(cmd.tenant, cmd.user_id, op_id, operation, causation_id=previous.note_id),
                     *_withdrawn(memory, previous, cmd, f"item {where!r}: deleted", op_id)], outcome)


def _withdrawn(memory, version, cmd: PutItem | DeleteItem, why: str, cause: str) -> list[PendingEvent]:
    """The archival of a closed version's message (none when it has none, or it is archived already)."""
    ids = tuple(m for m in version.source_message_ids if not memory.archive.is_archived(m))
    if not ids:
        return []
    event = MemoryArchived(memory_ids=ids, reason="manual", at=cmd.now, detail=why)
    return [PendingEvent(cmd.tenant, cmd.user_id, new_event_id(), event, causation_id=cause)]
