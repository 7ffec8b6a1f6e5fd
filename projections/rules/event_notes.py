"""First-person event and fact notes (``events-v1``): "I went to a support group yesterday" →
"Caroline went to a support group yesterday (2023-05-07)".

The preference / decision / constraint / slot-fact rules of
:mod:`projections.rules.extraction` cover how people state stable things; most of
what people tell about their lives are events ("I adopted a puppy", "我昨天去了
瑜伽课"). This module reads those through the subject–verb–object rules of
:mod:`projections.rules.graph_extract` and renders each stated clause as a
standalone fact in the speaker's words: the first person becomes the
speaker's name and a relative time gets its absolute date. Used for a
message only when the note rules found nothing in it. Pure and deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

from projections.rules.extraction import CandidateNote, key_terms
from projections.rules.graph_extract import CandidateGraphMemory, extract_graph_memories
from projections.rules.text import has_cjk

EXTRACTOR_ID = "events-v1"
NOTE_TYPES = ("event", "fact", "relation")  # opinions are not facts
_EN_PRONOUNS = (
    (re.compile(r"\bI'm\b"), "{s} is"), (re.compile(r"\bI've\b"), "{s} has"), (re.compile(r"\bI'll\b"), "{s} will"),
    (re.compile(r"\bI'd\b"), "{s} would"), (re.compile(r"\bI\b"), "{s}"), (re.compile(r"\b[Mm]y\b"), "{s}'s"),
    (re.compile(r"\b[Mm]e\b"), "{s}"), (re.compile(r"\b[Mm]yself\b"), "{s}"),
)


def _third_person(clause: str, speaker: str) -> str:
    if has_cjk(clause):
        return re.sub(r"我(?!们)", speaker, clause)  # "我们" (we) stays: the speaker is one of them
    for pattern, template in _EN_PRONOUNS:
        clause = pattern.sub(template.format(s=speaker), clause)
    return clause[0].upper() + clause[1:] if clause else clause


def event_notes(text: str, *, speaker: str | None, occurred_at: datetime,
                reading: Sequence[CandidateGraphMemory] | None = None) -> tuple[CandidateNote, ...]:
    """Fact notes for the events and facts a message states in the first person (one per clause).

    ``reading`` is what :func:`extract_graph_memories` read from the same
    message (same text, speaker and time) when the caller already has it: it
    is used instead of reading the text again.
    """
    subject = speaker or "user"
    out: dict[str, CandidateNote] = {}
    if reading is None:
        reading = extract_graph_memories(text, speaker=speaker, occurred_at=occurred_at)
    for memory in reading:
        if memory.memory_type not in NOTE_TYPES or not memory.evidence or memory.evidence in out:
            continue
        statement = _third_person(memory.evidence.strip(" ,.!?;:，。！？；："), subject)
        if memory.when is not None:
            statement = f"{statement} ({memory.when.iso})"
        terms = tuple(t for t in key_terms(statement) if t != subject.lower())
        if not terms:
            continue
        out[memory.evidence] = CandidateNote(
            category="fact", text=statement, subject=subject, key_terms=terms, polarity="positive",
            confidence=0.6, language="zh" if has_cjk(statement) else "en", evidence=memory.evidence,
            extractor=EXTRACTOR_ID,
        )
    return tuple(out.values())
