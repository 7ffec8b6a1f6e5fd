"""Seed 001's ``create_memory`` by a language model: one user's new turns in, graph memories to stage out.

One call per record batch and user (``purpose="graph_memories"``). The model
sees the user's new dialogue lines, numbered, and answers ``{"memories":
[{source_message_index, subject, memory_type, topic, object, attributes,
importance, time_expression}]}``. Each proposal is checked on its own by
:func:`projections.rules.tool_calls.validate_tool_call` against its line's time, so a
relative time ("yesterday 8pm", "上周五") is resolved by
:mod:`projections.rules.timenorm` exactly as the offline rules resolve it, and
seed 001's Chinese type names are accepted. "I" / "我" as a subject becomes
the speaker's name, as in the offline rules, so both share subject nodes.

A proposal that fails is not staged: a ``graph_proposal_rejected`` event
records it and why. The staged memories say ``extractor="llm:<model>"`` and
name the call in ``llm_call_id``. When the call fails, or every proposal of
the reply fails, the offline rules' memories (``graph-rules-v2``, computed
by the driver beside the turn) are staged instead, each naming the call and
saying why in ``reason`` ("llm unavailable (...); offline rules: graph-rules-v2").

Labels are embedded with ``embed`` when one is given. A shard gives none: its
memories are staged without vectors, like the offline rules' ones, and the
driver embeds every such label in one pass before the next consolidation or
graph read (``graph_labels_embedded``), so the model's memories are found by
vector like any other; the vectors are recorded, and replay never embeds or asks.
The schema is loose on purpose: an enum would fail the whole reply for one
bad item, where the per-item check keeps the rest.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from actors.llm.client import StructuredLlm
from actors.llm.steps import ERROR_CHARS, clip, dialogue, llm_decider, unavailable
from events.errors import InvalidInputError
from events.graph_events import GraphMemoryStaged, GraphProposalRejected
from events.model import Event, LlmCallRecorded, MessageRecorded
from projections.decisions.graph_staging import staged_event
from projections.rules.graph_extract import EXTRACTOR_ID
from projections.rules.tool_calls import CreateMemory, validate_tool_call

PURPOSE = "graph_memories"
PROPOSAL_CHARS = 1000  # a rejected proposal, as kept in its event
FIRST_PERSON = frozenset({"i", "me", "myself", "user", "the user", "我", "我自己", "用户"})
Embed = Callable[[list[str]], Mapping[str, np.ndarray]]

SCHEMA: dict[str, Any] = {
    "title": "GraphMemories",
    "type": "object",
    "properties": {
        "memories": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "source_message_index": {"type": ["integer", "null"]},
                    "subject": {"type": ["string", "null"]},
                    "memory_type": {"type": ["string", "null"], "description": "event | fact | relation | opinion"},
                    "topic": {"type": ["string", "null"]},
                    "object": {"type": ["string", "null"]},
                    "attributes": {"type": ["object", "null"]},
                    "importance": {"type": ["number", "null"]},
                    "time_expression": {"type": ["string", "null"]},
                },
            },
        }
    },
    "required": ["memories"],
}

INSTRUCTIONS = """\
You build a memory graph from what a user says. For each new dialogue line, propose the memories it states, \
each as the arguments of one create_memory call:
- subject: who the memory is about. For "I", "me", "我" write the speaker's name (shown after the role); \
otherwise the person named ("Caroline's sister", "小明").
- memory_type: event (something that happened or will happen at a time), fact (a stable state, habit, like or \
dislike), relation (a relationship between people; object is the other person), opinion (a subjective judgement).
- topic: the action or state, ideally a verb ("adopt", "go", "吃饭", "情绪"). object: what it is about \
("puppy", "support group", "白米饭"), or null.
- attributes: details as string pairs (time, place, with, reason). Write times as said ("yesterday 8pm", \
"上周五"); they are resolved against the line's time.
- importance: 0.3 routine, 0.5 ordinary, 0.8 important, 1.0 critical.
- source_message_index: the [number] of the line the memory comes from.
Split a sentence stating several things into several memories. Skip questions, hypotheticals and small talk. \
Keep labels in the language of the conversation (do not translate).
Reply with {"memories": [...]} and nothing else; an empty list when the lines state nothing worth remembering."""


def llm_graph_memories(
    client: StructuredLlm,
    messages: Sequence[tuple[str, MessageRecorded]],
    offline: Sequence[Sequence[GraphMemoryStaged]],
    new_id: Callable[[], str],
    *,
    embed: Embed | None = None,
) -> tuple[list[tuple[str, Event]], list[tuple[GraphMemoryStaged, ...]]]:
    """(call record and rejections, the memories to stage for each message) for one user's new turns.

    ``messages`` are (event id, message) in order; ``offline`` holds, per
    message, the offline rules' memories with their label vectors (the
    fallback, and vectors already computed). ``new_id`` names the call, then
    each rejection. ``embed`` maps labels to vectors; without it, a label
    the offline rules did not embed is staged without a vector.
    """
    if len(offline) != len(messages):
        problem = f"{len(offline)} groups for {len(messages)} messages; pass one (possibly empty) group per message"
        raise InvalidInputError([("offline", problem)], what="graph extraction")
    if not messages:
        return [], []
    call_id = new_id()
    result = client.complete_json(PURPOSE, _prompt(messages), SCHEMA)
    event: LlmCallRecorded = result.event
    records: list[tuple[str, Event]] = [(call_id, event)]
    if result.parsed is None:
        return records, _offline(offline, call_id, unavailable(event) + EXTRACTOR_ID)
    decider = llm_decider(event)
    proposals = list(result.parsed["memories"])
    accepted: dict[tuple, tuple[int, CreateMemory]] = {}
    first_problem = None
    for proposal in proposals:
        read = _read(proposal, messages)
        if isinstance(read, tuple):
            index, call = read
            key = (index, call.memory_type, *(_folded(x) for x in (call.subject, call.topic, call.object)))
            if key not in accepted:
                accepted[key] = read
                continue
            read = f"repeats an earlier proposal for line {index} ({call.subject} {call.memory_type} {call.topic})"
        problem, index = read, _index(proposal, len(messages))
        first_problem = first_problem or problem
        shown = json.dumps(proposal, ensure_ascii=False, sort_keys=True, default=str)
        records.append((new_id(), GraphProposalRejected(
            llm_call_id=call_id, proposed="create_memory", proposal=clip(shown, PROPOSAL_CHARS), reason=problem,
            decider=decider, source_message_ids=(messages[index][0],) if index is not None else ())))
    if proposals and not accepted:
        first = clip(first_problem, ERROR_CHARS)
        reason = f"llm reply unusable ({len(proposals)} proposal(s) rejected, first: {first}); offline rules: "
        return records, _offline(offline, call_id, reason + EXTRACTOR_ID)
    vectors = _vectors([call for _, call in accepted.values()], offline, embed)
    staged: list[list[GraphMemoryStaged]] = [[] for _ in messages]
    for index, call in accepted.values():
        when = call.occurred_at or messages[index][1].occurred_at
        memory = staged_event(call.model_dump(), vectors, occurred_at=when, extractor=decider)
        staged[index].append(memory.model_copy(update={"llm_call_id": call_id}))
    return records, [tuple(group) for group in staged]


def _prompt(messages: Sequence[tuple[str, MessageRecorded]]) -> list[dict[str, str]]:
    content = f"New dialogue lines:\n{dialogue(messages)}"
    return [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": content}]


def _offline(offline: Sequence[Sequence[GraphMemoryStaged]], call_id: str,
             reason: str) -> list[tuple[GraphMemoryStaged, ...]]:
    """The offline rules' memories, each naming the call it replaces and saying why."""
    return [tuple(m.model_copy(update={"llm_call_id": call_id, "reason": reason}) for m in group) for group in offline]


def _folded(label: str | None) -> str:
    return " ".join((label or "").casefold().split())


def _index(proposal: Any, count: int) -> int | None:
    index = proposal.get("source_message_index") if isinstance(proposal, Mapping) else None
    if index is None and count == 1:
        return 0
    if isinstance(index, float) and index.is_integer():
        index = int(index)
    return index if isinstance(index, int) and not isinstance(index, bool) and 0 <= index < count else None


def _read(proposal: Any, messages: Sequence[tuple[str, MessageRecorded]]) -> tuple[int, CreateMemory] | str:
    """(message index, validated call) from one proposal, or why it cannot be staged."""
    if not isinstance(proposal, Mapping):
        return f"a proposal must be an object of create_memory arguments, got {type(proposal).__name__}"
    index = _index(proposal, len(messages))
    if index is None:
        return f"source_message_index {proposal.get('source_message_index')!r} names no dialogue line"
    _, message = messages[index]
    arguments = {k: v for k, v in proposal.items() if k != "source_message_index" and v is not None}
    if isinstance(arguments.get("attributes"), Mapping):  # a model writes {"count": 2}: a detail all the same
        arguments["attributes"] = {k: v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
                                   for k, v in arguments["attributes"].items() if v is not None}
    subject = arguments.get("subject")
    if isinstance(subject, str) and subject.strip().casefold() in FIRST_PERSON:
        arguments["subject"] = message.speaker or "user"
    try:
        return index, validate_tool_call("create_memory", arguments, reference=message.occurred_at)
    except InvalidInputError as exc:
        return "; ".join(f"{field}: {why}" for field, why in exc.problems)


def _vectors(calls: Sequence[CreateMemory], offline: Sequence[Sequence[GraphMemoryStaged]],
             embed: Embed | None) -> dict[str, np.ndarray]:
    """Label → vector for the accepted memories: the offline rules' vectors first, the rest from ``embed``."""
    known: dict[str, np.ndarray] = {}
    for group in offline:
        for m in group:
            for label in (m.topic, m.object):
                vector = m.vector(label) if label else None
                if vector is not None:
                    known.setdefault(label, vector)
    labels = list(dict.fromkeys(label for c in calls for label in (c.topic, c.object) if label))
    missing = [label for label in labels if label not in known]
    if missing and embed is not None:
        known.update(embed(missing))
    return {label: known[label] for label in labels if label in known}
