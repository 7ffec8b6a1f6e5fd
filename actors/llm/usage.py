"""Seed 002's usage judgement with a language model: which retrieved memories a reply actually drew on.

One call per reply (``purpose="usage_judge"``). A memory counts as used
only when it shaped the reply: "the user likes cats" retrieved while the
assistant talks about the weather is not used; "the user is tense" answered
by "don't be so wound up" is, paraphrase and all (the offline judge misses
that). The model answers ``{"used_ids": [...]}``; ids that were not offered
are dropped and the rest are returned in the order offered.

When the call fails the offline :func:`projections.rules.usage.judge_usage`
decides (best score first). The caller records the returned ids as a
``memory_touched`` event with reason ``used``, which carries no reason or
judge id: the call record beside it is where the log shows which judge ran.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from actors.decision import new_event_id
from actors.llm.client import StructuredLlm
from actors.llm.steps import LINE_CHARS, clip
from events.errors import InvalidInputError
from events.model import LlmCallRecorded
from projections.rules.usage import judge_usage

PURPOSE = "usage_judge"

SCHEMA: dict[str, Any] = {
    "title": "UsageJudgement",
    "type": "object",
    "properties": {"used_ids": {"type": "array", "items": {"type": "string"}}},
    "required": ["used_ids"],
}

INSTRUCTIONS = """\
Memories were retrieved for an assistant before it replied. Decide which of them the reply actually drew on.
- Used: the memory shaped what the reply says, even in other words ("the user is tense" answered by "don't be so \
wound up").
- Not used: the memory is unrelated to what the reply says ("the user likes cats" while the reply talks about the \
weather), or merely on the same topic without affecting the reply.
Reply with {"used_ids": [...]} listing the ids of the used memories (an empty list when none was used), and \
nothing else."""


def llm_judge_usage(
    client: StructuredLlm,
    reply: str,
    items: Sequence[tuple[str, str]],
    *,
    new_id: Callable[[], str] = new_event_id,
) -> tuple[tuple[str, LlmCallRecorded], list[str]]:
    """(call record, ids of the ``items`` (id, text) that ``reply`` drew on).

    Raises ``InvalidInputError`` for a blank reply or no items: there is nothing to judge, so don't ask.
    """
    problems = [("reply", "blank")] if not reply.strip() else []
    problems += [("items", "empty; pass the retrieved (id, text) pairs")] if not items else []
    if problems:
        raise InvalidInputError(problems, what="usage judgement")
    call_id = new_id()
    listed = "\n".join(f"[{item_id}] {clip(text, 500)}" for item_id, text in items)
    prompt = f"Retrieved memories:\n{listed}\n\nThe assistant's reply:\n{clip(reply, LINE_CHARS)}"
    result = client.complete_json(
        PURPOSE, [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": prompt}], SCHEMA
    )
    if result.parsed is None:
        return (call_id, result.event), [item_id for item_id, _ in judge_usage(reply, items)]
    named = {i.strip() for i in result.parsed["used_ids"]}
    return (call_id, result.event), list(dict.fromkeys(item_id for item_id, _ in items if item_id in named))
