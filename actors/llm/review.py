"""Seed 002's MemoryReviewer with a language model: PROMOTE / KEEP / DELETE for the notes due a review.

Which notes are reviewed, and when, is decided exactly as offline: the
reviews :func:`projections.decisions.review.review_notes` returns at ``now`` (a
promotion review at importance 2.5, a retraction review below 0.5). Only the
decision and its reason come from the model, :data:`NOTES_PER_CALL` notes per
call (``purpose="note_review"``), each shown with its importance, history
and up to :data:`RELATED_NOTES` related notes (BM25 over the notes, as the
seed's "related memories").

A note the model leaves out, or gives a decision the trigger does not allow
(a retraction review cannot promote), keeps the offline decision, its reason
prefixed "llm gave no usable decision (...)"; a failed call keeps the offline
decisions of its notes, prefixed "llm unavailable (<error>)". Every review
names its call in ``llm_call_id``; ``reviewer`` says who decided.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from actors.decision import new_event_id
from actors.llm.client import StructuredLlm
from actors.llm.steps import clip, llm_decider, unavailable
from events.model import LlmCallRecorded, NoteReviewed
from projections.decisions.review import review_notes
from projections.folds.notes import DEFAULT_NOTE_POLICY, NotePolicy, NoteState

PURPOSE = "note_review"
NOTES_PER_CALL = 10
RELATED_NOTES = 5
ALLOWED = {"promotion": ("promote", "keep", "delete"), "retraction": ("keep", "delete")}

SCHEMA: dict[str, Any] = {
    "title": "NoteReviews",
    "type": "object",
    "properties": {
        "reviews": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "note_id": {"type": "string"},
                    "decision": {"type": "string", "description": "promote | keep | delete"},
                    "reason": {"type": "string"},
                },
                "required": ["note_id", "decision"],
            },
        }
    },
    "required": ["reviews"],
}

INSTRUCTIONS = """\
You review notes an assistant keeps about its user. Each note below crossed an importance threshold.
Promotion review (importance reached the promotion threshold): decide whether the note becomes a core memory, \
which never fades.
- Core: long-lived, important facts: the user's name or birthday, stable preferences, important agreements.
- Not core: temporary states ("the user is tired today"), short-term plans, things only talked about a lot lately.
- promote: make it core; keep: leave it as it is; delete: it is wrong or useless.
Retraction review (importance fell below the retraction threshold): is the note still of value? Has a newer note \
replaced it? Would deleting it make the assistant forget something important?
- keep: it stays, and its importance restarts; delete: it is retracted (promote is not allowed here).
Reply with {"reviews": [{"note_id": ..., "decision": "promote" | "keep" | "delete", "reason": ...}]}, one item per \
note, and nothing else."""


def llm_review_notes(
    client: StructuredLlm,
    state: NoteState,
    now: datetime,
    policy: NotePolicy = DEFAULT_NOTE_POLICY,
    *,
    new_id: Callable[[], str] = new_event_id,
    notes_per_call: int = NOTES_PER_CALL,
) -> tuple[list[tuple[str, LlmCallRecorded]], list[NoteReviewed]]:
    """(call records, reviews) due at ``now``: one review per due note, in log order; nothing asked when none is due."""
    due = review_notes(state, now, policy)
    calls: list[tuple[str, LlmCallRecorded]] = []
    reviews: list[NoteReviewed] = []
    for start in range(0, len(due), notes_per_call):
        chunk = due[start:start + notes_per_call]
        call_id = new_id()
        result = client.complete_json(PURPOSE, _prompt(state, chunk, now), SCHEMA)
        calls.append((call_id, result.event))
        reviews += _decide(chunk, result.parsed, result.event, call_id)
    return calls, reviews


def _prompt(state: NoteState, due: Sequence[NoteReviewed], now: datetime) -> list[dict[str, str]]:
    blocks = []
    for review in due:
        note = state.notes[review.note_id]
        related = [state.notes[i] for i, _ in state.search(note.text, RELATED_NOTES + 1) if i != note.note_id]
        last = note.last_reinforced.date().isoformat() if note.last_reinforced else "never"
        lines = [
            f"[{note.note_id}] {review.trigger} review, importance {review.importance:.3f}",
            f"  {note.category}: {clip(note.text, 500)}",
            f"  stated {note.valid_from.date().isoformat()}, reinforced {note.reinforcements} time(s), "
            f"last reinforced {last}",
        ]
        lines += [f"  related [{r.note_id}] {clip(r.text, 200)}" for r in related[:RELATED_NOTES]]
        blocks.append("\n".join(lines))
    content = f"Today is {now.date().isoformat()}.\n\nNotes to review:\n" + "\n\n".join(blocks)
    return [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": content}]


def _decide(
    due: Sequence[NoteReviewed], parsed: Mapping[str, Any] | None, event: LlmCallRecorded, call_id: str
) -> list[NoteReviewed]:
    if parsed is None:
        prefix = unavailable(event)
        return [r.model_copy(update={"reason": prefix + r.reason, "llm_call_id": call_id}) for r in due]
    answers: dict[str, Mapping[str, Any]] = {}
    for item in parsed["reviews"]:
        if isinstance(item, Mapping) and isinstance(item.get("note_id"), str):
            answers.setdefault(item["note_id"].strip(), item)  # the first answer for a note wins
    out = []
    for offline in due:
        answer = answers.get(offline.note_id)
        decision = answer.get("decision") if answer else None
        decision = decision.strip().lower() if isinstance(decision, str) else decision
        if decision in ALLOWED[offline.trigger]:
            reason = answer.get("reason")
            reason = clip(reason, 500) if isinstance(reason, str) and reason.strip() else f"the model chose {decision}"
            side = "≥ promotion" if offline.trigger == "promotion" else "< retraction"
            out.append(offline.model_copy(update={
                "decision": decision, "reason": f"importance {offline.importance:.3f} {side} threshold: {reason}",
                "reviewer": llm_decider(event), "llm_call_id": call_id,
            }))
            continue
        why = "no answer for this note" if answer is None else (
            f"decision {decision!r} is not allowed in a {offline.trigger} review")
        out.append(offline.model_copy(update={
            "reason": f"llm gave no usable decision ({why}); offline rules: {offline.reason}", "llm_call_id": call_id,
        }))
    return out
