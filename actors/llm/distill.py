"""Long-term profile distillation (MemoryOS, seed 004) by a language model, with the offline distiller as fallback.

One call per hot session (``purpose="profile_distillation"``): the model
reads the session's pages and answers ``{"traits": {name: value},
"user_knowledge": [...], "assistant_knowledge": [...]}`` — the user's
profile, private facts about the user, and what the assistant itself did or
said. Trait values that are numbers become strings; empty names, empty or
non-scalar values and empty statements are dropped, and statements are
de-duplicated as the profile projection compares them
(:func:`projections.folds.profile.knowledge_key`).

When the call fails the offline :func:`projections.decisions.distill.distill_offline`
decides, with distiller ``rules-v1``; ``ProfileDistilled`` has no reason
field, so the event's ``llm_call_id`` names the failed call (whose ``error``
says why) while its distiller says who decided.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

from actors.decision import new_event_id
from actors.llm.client import LlmResult, StructuredLlm
from actors.llm.steps import OFFLINE_ID, dialogue, llm_decider
from events.errors import InvalidInputError
from events.model import LlmCallRecorded, MessageRecorded, ProfileDistilled
from projections.decisions.distill import distill_offline
from projections.folds.profile import knowledge_key

PURPOSE = "profile_distillation"
MAX_TRAIT_NAME = 64

SCHEMA: dict[str, Any] = {
    "title": "ProfileDistillation",
    "type": "object",
    "properties": {
        "traits": {"type": "object", "additionalProperties": {"type": "string"}},
        "user_knowledge": {"type": "array", "items": {"type": "string"}},
        "assistant_knowledge": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["traits", "user_knowledge", "assistant_knowledge"],
}

INSTRUCTIONS = """\
You distil one conversation session into an assistant's long-term memory. From the pages (dialogue lines), extract:
- traits: the user's profile: stable personal attributes and personality preferences, as {"name": "value"}. Names \
are short English snake_case keys (name, residence, occupation, employer, birthday, age, origin, \
favourite:<thing>, ...). When a line names its speaker, key the trait "<speaker>/<name>", so two people's profiles \
never merge.
- user_knowledge: personal information, preferences, or private facts about the user, each a standalone statement.
- assistant_knowledge: explicit statements about what the assistant did, provided, or demonstrated, each a \
standalone statement, so the assistant stays consistent later.
Only what the pages state; no guesses. Values and statements keep the language of the conversation (do not \
translate). Use empty values when nothing qualifies.
Reply with {"traits": {...}, "user_knowledge": [...], "assistant_knowledge": [...]} and nothing else."""


def llm_distill_profile(
    client: StructuredLlm,
    session_id: str,
    pages: Sequence[tuple[str, MessageRecorded]],
    heat: float,
    at: datetime,
    *,
    new_id: Callable[[], str] = new_event_id,
) -> tuple[tuple[str, LlmCallRecorded], ProfileDistilled]:
    """(call record, distillation) of the session's ``pages`` (page id, message), in page order.

    Raises ``InvalidInputError`` when ``pages`` is empty (nothing to distil).
    """
    messages = distill_prompt(pages)
    call_id = new_id()
    result = client.complete_json(PURPOSE, messages, SCHEMA)
    return (call_id, result.event), distillation_from_answer(session_id, pages, heat, at, result, call_id)


def distill_prompt(pages: Sequence[tuple[str, MessageRecorded]]) -> list[dict[str, str]]:
    """The messages asking to distil the session's ``pages`` (page id, message), in page order.

    Raises ``InvalidInputError`` when ``pages`` is empty (nothing to distil).
    """
    if not pages:
        raise InvalidInputError([("pages", "empty; pass the session's (page id, message) pairs")],
                                what="session to distil")
    prompt = f"Session pages, oldest first:\n{dialogue(pages, numbered=False)}"
    return [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": prompt}]


def distillation_from_answer(
    session_id: str, pages: Sequence[tuple[str, MessageRecorded]], heat: float, at: datetime, result: LlmResult,
    call_id: str,
) -> ProfileDistilled:
    """The distillation the answer ``result`` (recorded as ``call_id``) makes; the offline rules' when it failed.
    Pure: a replayed answer gives the same event."""
    if result.parsed is None:
        traits, user_knowledge, assistant_knowledge = distill_offline(pages)
        distiller = OFFLINE_ID
    else:
        traits = _traits(result.parsed["traits"])
        user_knowledge = _statements(result.parsed["user_knowledge"])
        assistant_knowledge = _statements(result.parsed["assistant_knowledge"])
        distiller = llm_decider(result.event)
    return ProfileDistilled(
        session_id=session_id, page_ids=tuple(page_id for page_id, _ in pages), traits=traits,
        user_knowledge=user_knowledge, assistant_knowledge=assistant_knowledge, heat=heat, at=at,
        distiller=distiller, llm_call_id=call_id,
    )


def _traits(raw: dict[str, Any]) -> dict[str, str]:
    traits = {}
    for name, value in raw.items():
        name = name.strip()
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)
        if name and len(name) <= MAX_TRAIT_NAME and isinstance(value, str) and value.strip():
            traits[name] = value.strip()
    return traits


def _statements(raw: Iterable[str]) -> tuple[str, ...]:
    kept: dict[str, str] = {}
    for text in raw:
        text = " ".join(text.split())
        if knowledge_key(text):
            kept.setdefault(knowledge_key(text), text)
    return tuple(kept.values())
