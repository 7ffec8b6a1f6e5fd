"""Seed 002's KnowledgeMonitor with a language model: new dialogue and active notes in, note operations out.

One call per batch (``purpose="note_operations"``). The model sees the new
dialogue lines, numbered, and the notes it may act on, with their ids, and
answers ``{"operations": [{op, target_note_id, category, text,
source_message_index, reason}]}``. Each proposal is checked on its own:

- ``op`` must be add / update / boost / delete / skip;
- ``source_message_index`` must name a dialogue line (it may be left out
  when the batch has one line);
- update / boost / delete need a ``target_note_id`` among the notes shown,
  not already closed by an earlier operation of the same reply;
- add / update need a non-empty ``text`` and a category among preference,
  decision, constraint, fact.

A proposal that fails is not applied: it is recorded as a ``skip`` saying
what was rejected and why, and the valid ones are kept. When every proposal
fails, the reply as a whole is unusable and the offline rules decide the
batch instead (each reason prefixed "llm reply unusable (...)"); when the
call fails, likewise with "llm unavailable (<error>); offline rules: ".
Offline operations keep decider ``rules-v1``; every operation names the
call in ``llm_call_id``, so the log shows which model answer (or failure)
each decision followed.

The schema leaves ``op`` and ``category`` as plain strings on purpose: an
enum would make the client re-ask (or fail) the whole reply for one bad
item, where a per-item check keeps the rest.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from actors.llm.client import StructuredLlm
from actors.llm.steps import ERROR_CHARS, clip, dialogue, llm_decider, unavailable
from events.model import NOTE_CATEGORIES, NOTE_OPS, Event, LlmCallRecorded, MessageRecorded, NoteContent, NoteOperation
from projections.decisions.note_ops import decide_note_operations
from projections.folds.notes import Note
from projections.rules.extraction import key_terms, polarity
from projections.rules.text import has_cjk

PURPOSE = "note_operations"
TARGETED = ("update", "boost", "delete")
REASON_CHARS = 500  # a model's reason, as kept in the event

SCHEMA: dict[str, Any] = {
    "title": "NoteOperations",
    "type": "object",
    "properties": {
        "operations": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "op": {"type": "string", "description": "add | update | boost | delete | skip"},
                    "target_note_id": {"type": ["string", "null"]},
                    "category": {
                        "type": ["string", "null"], "description": "preference | decision | constraint | fact"
                    },
                    "text": {"type": ["string", "null"]},
                    "source_message_index": {"type": ["integer", "null"]},
                    "reason": {"type": ["string", "null"]},
                },
                "required": ["op"],
            },
        }
    },
    "required": ["operations"],
}

INSTRUCTIONS = """\
You maintain the notes an assistant keeps about its user and the user's project. Read the new dialogue lines and \
the current notes, then decide memory operations:
- add: the user states something worth remembering for later: a preference, a decision, a constraint, or a fact \
about them. Give category and text.
- update: the user corrects a note, or replaces what it says (a new city, another database). Give target_note_id, \
category and the complete new text; the old note is closed, not erased.
- boost: a line restates or confirms a current note. Give target_note_id.
- delete: the user says a note is wrong or no longer holds, and nothing replaces it. Give target_note_id.
- skip: a line holds nothing worth remembering (small talk, questions, one-off requests).
Rules:
- Health, diet, allergy and safety statements ("I'm vegetarian", "I am allergic to peanuts", "我对花生过敏", \
"I have diabetes", "I can't swim") are constraints. A line that states several things gets one add per statement, \
so that the notes carry all of it ("I'm vegetarian and I hate cilantro": a constraint and a preference).
- A change over time is not a contradiction. "I was tense ten days ago" and "I am relaxed now" are both true, each \
at its own time: add the new state and leave the old note alone.
- Use only target_note_id values from the current notes. Never add a note that repeats a current note: boost it.
- Write each note as one standalone statement in the language of the conversation (a Chinese conversation gets \
Chinese notes; do not translate).
- source_message_index is the [number] of the line the operation comes from. Give a short reason for each operation.
Reply with {"operations": [...]} and nothing else; an empty list when nothing changes."""


def llm_note_operations(
    client: StructuredLlm,
    active: Sequence[Note],
    messages: Sequence[tuple[str, MessageRecorded]],
    new_id: Callable[[], str],
    *,
    previous_text: str | None = None,
) -> tuple[list[tuple[str, Event]], list[tuple[str, NoteOperation]]]:
    """(call records, note operations) for ``messages`` (event id, message), given the ``active`` notes.

    ``new_id`` names the call (first) and then each operation. Returns
    nothing, and asks nothing, when no message is a user message (only
    users state notes, as in the offline decider). ``active`` is what the
    model may act on: pass the notes relevant to the batch (for example
    the top hits of :meth:`projections.folds.notes.NoteState.search`) to bound the prompt.
    """
    if not any(message.role == "user" for _, message in messages):
        return [], []
    notes = {note.note_id: note for note in active if note.status == "active"}
    call_id = new_id()
    result = client.complete_json(PURPOSE, _prompt(notes, messages, previous_text), SCHEMA)
    event: LlmCallRecorded = result.event
    calls: list[tuple[str, Event]] = [(call_id, event)]
    if result.parsed is None:
        return calls, _offline(notes, messages, new_id, previous_text, unavailable(event), call_id)
    proposals = [p for p in result.parsed["operations"] if isinstance(p, Mapping)]
    ops, rejected = _read_all(proposals, notes, messages, llm_decider(event), call_id)
    if proposals and len(rejected) == len(proposals):
        prefix = f"llm reply unusable ({len(rejected)} operation(s) rejected, first: {rejected[0]}); offline rules: "
        return calls, _offline(notes, messages, new_id, previous_text, prefix, call_id)
    return calls, [(new_id(), op) for op in ops]  # ids minted only once the reply is known to be usable


def _prompt(
    notes: Mapping[str, Note], messages: Sequence[tuple[str, MessageRecorded]], previous_text: str | None
) -> list[dict[str, str]]:
    listed = "\n".join(
        f"[{n.note_id}] ({n.category}, since {n.valid_from.date().isoformat()}) {n.text}" for n in notes.values()
    )
    parts = [f"Current notes:\n{listed or '(none)'}"]
    if previous_text:
        parts.append(f"The line before (context only, already processed):\n{clip(previous_text, 500)}")
    parts.append(f"New dialogue lines:\n{dialogue(messages)}")
    return [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": "\n\n".join(parts)}]


def _offline(
    notes: Mapping[str, Note],
    messages: Sequence[tuple[str, MessageRecorded]],
    new_id: Callable[[], str],
    previous_text: str | None,
    prefix: str,
    call_id: str,
) -> list[tuple[str, NoteOperation]]:
    ops = decide_note_operations(list(notes.values()), messages, new_id, previous_text=previous_text)
    return [(op_id, op.model_copy(update={"reason": prefix + op.reason, "llm_call_id": call_id}))
            for op_id, op in ops]


def _index(proposal: Mapping[str, Any], count: int) -> int | None:
    index = proposal.get("source_message_index")
    if index is None and count == 1:
        return 0
    if isinstance(index, float) and index.is_integer():
        index = int(index)
    return index if isinstance(index, int) and not isinstance(index, bool) and 0 <= index < count else None


def _read_all(
    proposals: Sequence[Mapping[str, Any]],
    notes: Mapping[str, Note],
    messages: Sequence[tuple[str, MessageRecorded]],
    decider: str,
    call_id: str,
) -> tuple[list[NoteOperation], list[str]]:
    """The operations in dialogue order (a rejected proposal becomes a ``skip``), and the rejection reasons."""
    count = len(messages)
    indexed = [(_index(p, count), p) for p in proposals]
    indexed.sort(key=lambda pair: count if pair[0] is None else pair[0])  # stable: the reply's order within a line
    closed: set[str] = set()
    ops: list[NoteOperation] = []
    rejected: list[str] = []
    for index, proposal in indexed:
        source = messages[index] if index is not None else None
        read = _read(proposal, source, notes, closed)
        common = {"decider": decider, "llm_call_id": call_id,
                  "source_message_ids": (source[0],) if source else (),
                  "valid_from": (source or messages[0])[1].occurred_at}
        if isinstance(read, str):
            rejected.append(read)
            shown = clip(json.dumps(dict(proposal), ensure_ascii=False, sort_keys=True), ERROR_CHARS)
            ops.append(NoteOperation(op="skip", reason=f"rejected llm operation: {read}; proposed {shown}", **common))
            continue
        op, target, content, reason = read
        if op in ("update", "delete"):
            closed.add(target)
        ops.append(NoteOperation(op=op, target_note_id=target, note=content, reason=reason, **common))
    return ops, rejected


def _read(
    proposal: Mapping[str, Any],
    source: tuple[str, MessageRecorded] | None,
    notes: Mapping[str, Note],
    closed: set[str],
) -> tuple[str, str | None, NoteContent | None, str] | str:
    """(op, target, content, reason) from one proposal, or why it cannot be applied."""
    op = _text(proposal.get("op")).lower()
    if op not in NOTE_OPS:
        return f"op {op!r} is not one of {', '.join(NOTE_OPS)}"
    if source is None:
        return f"source_message_index {proposal.get('source_message_index')!r} names no dialogue line"
    target = _text(proposal.get("target_note_id")) or None
    if op in TARGETED:
        if target is None:
            return f"{op} needs a target_note_id"
        if target not in notes:
            return f"target_note_id {target!r} is not a current note"
        if target in closed:
            return f"note {target} was already closed by an earlier operation of this reply"
    elif op == "add" or target not in notes:
        target = None  # add never targets; a skip may name the note it left alone
    content = None
    if op in ("add", "update"):
        text, category = _text(proposal.get("text")), _text(proposal.get("category")).lower()
        if not text:
            return f"{op} needs a text"
        if category not in NOTE_CATEGORIES:
            return f"category {category!r} is not one of {', '.join(NOTE_CATEGORIES)}"
        _, message = source
        subject = notes[target].subject if target else (message.speaker if message.role == "user" else None)
        content = NoteContent(
            category=category, text=text, subject=subject or "user", key_terms=key_terms(text),
            polarity=polarity(text), language="zh" if has_cjk(text) else "en",
        )
    return op, target, content, clip(_text(proposal.get("reason")), REASON_CHARS) or f"the model chose {op}"


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""
