"""What a search and a context assembly answer: plain frozen records, no computation.

Kept apart from :mod:`projections.queries.retrieval` and :mod:`projections.queries.context` so that a
client of a served store (``palimpsest --server URL search ...``) rebuilds the same objects from their
JSON without importing the retrieval stack (numpy, jieba, the rules).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class Hit:
    """One retrieved memory with its score breakdown and provenance."""

    memory_id: str
    rank: int
    score: float
    text: str
    speaker: str | None
    role: str
    occurred_at: datetime
    conversation_id: str
    turn_id: str | None
    breakdown: dict
    provenance: dict
    # The fused score split into its terms (projections.queries.score_terms), computed by the shard with the fusion
    # it ranked with (learned and feedback-adjusted), so the terms add up to the score; None where not asked for.
    terms: dict | None = None

    def to_dict(self) -> dict:
        return {
            "memory_id": self.memory_id,
            "rank": self.rank,
            "score": self.score,
            "text": self.text,
            "speaker": self.speaker,
            "role": self.role,
            "occurred_at": self.occurred_at.isoformat(),
            "conversation_id": self.conversation_id,
            "turn_id": self.turn_id,
            "breakdown": self.breakdown,
            "provenance": self.provenance,
            **({"terms": self.terms} if self.terms is not None else {}),
        }


@dataclass(frozen=True, slots=True)
class ContextItem:
    """One line of a context: a note (its line is ``[category] text``), or a turn (``occurred_at`` set; its line is
    ``[day] who: text``).

    ``tokens`` is what the item adds to the context's text: a turn's line without its date, plus its day's
    header when it is the first turn of that day the context took (in the order it took them); a note's text, plus its
    category's header when it is the first note of that category the context took."""

    memory_id: str
    turn_id: str | None
    conversation_id: str
    line: str
    tokens: int
    score: float
    provenance: dict
    occurred_at: datetime | None = None

    @property
    def day(self) -> str | None:
        return None if self.occurred_at is None else self.occurred_at.date().isoformat()


def day_header(day: str) -> str:
    return f"[{day}]"


def category_header(category: str) -> str:
    return f"[{category}]"


# A note's line (``[fact] Maya switched to coffee``): its category's header, then its text.
_NOTE_LINE = re.compile(r"(\[[a-z_]+\]) (.*)", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Context:
    query: str
    budget: int
    tokens: int
    items: tuple[ContextItem, ...]

    @property
    def text(self) -> str:
        """The notes grouped by category, then the turns grouped by day: each category's and each day's header once,
        its lines under it; categories in the order of their first note and the notes within one in order; days and
        the turns within a day in time order (turns at the same time: first taken first). ``items`` stay in the order
        the context took them."""
        groups: dict[str, list[str]] = {}
        for item in self.items:
            if item.occurred_at is None:
                line = _NOTE_LINE.fullmatch(item.line)
                header, text = line.groups() if line else ("", item.line)
                groups.setdefault(header, []).append(text)
        lines = [line for header, texts in groups.items() for line in ([header] if header else []) + texts]
        turns = sorted((item for item in self.items if item.occurred_at is not None), key=lambda i: i.occurred_at)
        shown = None
        for item in turns:
            if item.day != shown:
                lines.append(day_header(item.day))
                shown = item.day
            lines.append(item.line.removeprefix(day_header(item.day) + " "))
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {
            "query": self.query,
            "budget": self.budget,
            "tokens": self.tokens,
            "text": self.text,
            "items": [
                {
                    "memory_id": i.memory_id,
                    "turn_id": i.turn_id,
                    "conversation_id": i.conversation_id,
                    "line": i.line,
                    "tokens": i.tokens,
                    "score": i.score,
                    "provenance": i.provenance,
                    "occurred_at": None if i.occurred_at is None else i.occurred_at.isoformat(),
                }
                for i in self.items
            ],
        }
