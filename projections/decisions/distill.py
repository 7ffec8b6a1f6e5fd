"""The offline profile distiller (``rules-v1``, seed 004): what a ``profile_distilled`` event records.

The shard runs it on a hot session's unanalysed pages before recording the
event (an LLM distiller, when configured, records its own ``distiller`` id
instead); :mod:`projections.folds.profile` folds the event and never distils.
It reads each page with :func:`projections.rules.extraction.extract_notes`
(English and Chinese):

- user-role pages: positive one-valued slot facts (name, residence, birthday,
  occupation, employer, age, origin, identity, ``favourite:*``) become traits,
  keyed ``<slot>``, or ``<speaker>/<slot>`` when the message names its speaker
  (a dialogue between two named people must not merge their profiles); every
  other candidate note (preferences, decisions, constraints, other facts,
  negated slot facts) becomes a user-knowledge statement;
- assistant-role pages: the notes the assistant states about itself, else up
  to two asserted sentences with at least two key terms, quoted as
  "The assistant said: …" / "助手说：…", become assistant knowledge;
- system and tool pages are skipped.
"""

from __future__ import annotations

from collections.abc import Sequence

from events.model import MessageRecorded
from projections.folds.profile import knowledge_key
from projections.rules.extraction import (
    EXCLUSIVE_SLOTS,
    extract_notes,
    key_terms,
    split_statements,
)
from projections.rules.text import has_cjk

DISTILLER_ID = "rules-v1"
TRAIT_SLOTS: frozenset[str] = frozenset(EXCLUSIVE_SLOTS) | {"identity"}
TRAIT_PREFIXES: tuple[str, ...] = ("favourite:",)
ASSISTANT_STATEMENTS_PER_PAGE = 2
MIN_STATEMENT_TERMS = 2


def is_trait_slot(slot: str | None) -> bool:
    return slot is not None and (slot in TRAIT_SLOTS or slot.startswith(TRAIT_PREFIXES))


def trait_name(slot: str, speaker: str | None) -> str:
    return f"{speaker}/{slot}" if speaker else slot


def _assistant_statements(message: MessageRecorded, previous: str | None) -> list[str]:
    zh = has_cjk(message.text)
    subject = message.speaker or ("助手" if zh else "The assistant")
    notes = extract_notes(message.text, speaker=subject, previous=previous)
    if notes:
        return [note.text for note in notes]
    clauses = [c for c in split_statements(message.text) if len(key_terms(c)) >= MIN_STATEMENT_TERMS]
    said = f"{subject}说：" if zh else f"{subject} said: "
    return [said + clause for clause in clauses[:ASSISTANT_STATEMENTS_PER_PAGE]]


def distill_offline(
    pages: Sequence[tuple[str, MessageRecorded]],
) -> tuple[dict[str, str], tuple[str, ...], tuple[str, ...]]:
    """(traits, user knowledge, assistant knowledge) stated in ``pages`` (page id, message), in page order.

    Deterministic: the same pages always give the same result. A later page
    overrides an earlier page's trait; statements are de-duplicated.
    """
    traits: dict[str, str] = {}
    user: dict[str, str] = {}
    assistant: dict[str, str] = {}
    previous: str | None = None
    for _, message in pages:
        if message.role == "user":
            for note in extract_notes(message.text, speaker=message.speaker, previous=previous):
                if is_trait_slot(note.slot) and note.polarity == "positive" and note.value:
                    traits[trait_name(note.slot, message.speaker)] = note.value  # type: ignore[arg-type]
                else:
                    user.setdefault(knowledge_key(note.text), note.text)
        elif message.role == "assistant":
            for text in _assistant_statements(message, previous):
                assistant.setdefault(knowledge_key(text), text)
        previous = message.text
    return traits, tuple(user.values()), tuple(assistant.values())
