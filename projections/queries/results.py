"""What a search and a context assembly answer: plain frozen records, no computation.

Kept apart from :mod:`projections.queries.retrieval` and :mod:`projections.queries.context` so that a
client of a served store (``palimpsest --server URL search ...``) rebuilds the same objects from their
JSON without importing the retrieval stack (numpy, jieba, the rules).
"""

from __future__ import annotations

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
        }


@dataclass(frozen=True, slots=True)
class ContextItem:
    memory_id: str
    turn_id: str | None
    conversation_id: str
    line: str
    tokens: int
    score: float
    provenance: dict


@dataclass(frozen=True, slots=True)
class Context:
    query: str
    budget: int
    tokens: int
    items: tuple[ContextItem, ...]

    @property
    def text(self) -> str:
        return "\n".join(item.line for item in self.items)

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
                }
                for i in self.items
            ],
        }
