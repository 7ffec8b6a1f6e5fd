"""Which earlier turns a new turn leaves behind (``turn-change-v1``): ``message_superseded`` events, and the
retraction of the notes that still state the old value.

A user turn that states a change naming the old value (:mod:`projections.rules.turn_change`: "I've switched
from oolong tea to hot chocolate", "数据库从 PostgreSQL 换成 MySQL") supersedes the earlier turns that state
that value: the same speaker's, and the assistant's (a reply repeating it). A turn that also states every term of
the new value is not left behind (it already says what holds now); a turn already superseded keeps its first
record. An active note read from a superseded turn that states the old value is retracted (``delete``), with
the change as its reason: it would otherwise keep stating the old value in every context.

Pure: the user's folded state and the new messages in, events out; their ids come from ``new_id``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from events.model import MessageRecorded, MessageSuperseded, NoteOperation
from projections.folds.state import UserMemory
from projections.rules.extraction import key_terms
from projections.rules.turn_change import CHANGE_RULES_ID, Change, changes


def _said(change: Change) -> str:
    return " / ".join(" ".join(part) for part in change.old)


def decide_turn_supersessions(
    memory: UserMemory | None, messages: Sequence[tuple[str, MessageRecorded]], new_id: Callable[[], str],
) -> list[tuple[str, MessageSuperseded | NoteOperation]]:
    """(event id, event) pairs for ``messages`` (event id, message, in order): one ``message_superseded`` per
    change that leaves earlier turns behind, then the retraction of the notes that state the old value."""
    stated = [changes(message.text) if message.role == "user" else () for _, message in messages]
    if not any(stated):  # most turns state no change: the user's history is not read
        return []
    earlier: list[tuple[str, MessageRecorded]] = []
    if memory is not None:
        earlier = [(m, memory.messages.by_id[m]) for m in memory.messages.order]
    taken = set(memory.notes.turns) if memory is not None else set()
    out: list[tuple[str, MessageSuperseded | NoteOperation]] = []
    retracted: set[str] = set()
    for (message_id, message), found in zip(messages, stated):
        for change in found:
            left = [m for m, old in earlier
                    if m not in taken and old.occurred_at <= message.occurred_at
                    and (old.role == "assistant" or old.speaker == message.speaker)
                    and change.stated_in(old.text, set(key_terms(old.text)))]
            if not left:
                continue
            taken.update(left)
            reason = f"{CHANGE_RULES_ID}: '{change.clause}' leaves {_said(change)} behind"
            out.append((new_id(), MessageSuperseded(message_event_ids=tuple(left), by_message_event_id=message_id,
                                                    valid_from=message.occurred_at, reason=reason,
                                                    decider=CHANGE_RULES_ID)))
            for note in memory.notes.active() if memory is not None else ():
                terms = set(note.key_terms) | set(key_terms(note.text))
                if note.note_id not in retracted and set(note.source_message_ids) & set(left) and change.stated_in(
                        note.text, terms):
                    out.append((new_id(), NoteOperation(
                        op="delete", target_note_id=note.note_id, source_message_ids=(message_id,),
                        valid_from=message.occurred_at, reason=f"{reason}: the note states the old value",
                        decider=CHANGE_RULES_ID)))
                    retracted.add(note.note_id)
        earlier.append((message_id, message))
    return out
