"""Context assembly: the text an agent puts in its prompt, cut to a token budget,
with the provenance of every line kept.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from projections.retrieval import Hit


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


def format_line(hit: Hit) -> str:
    who = f"{hit.speaker}: " if hit.speaker else f"{hit.role}: "
    return f"[{hit.occurred_at.date().isoformat()}] {who}{hit.text}"


def assemble(
    query: str, hits: list[Hit], budget: int, count_tokens: Callable[[list[str]], list[int]]
) -> Context:
    """Fill the budget greedily in rank order; a line that does not fit is skipped, smaller ones may follow."""
    lines = [format_line(h) for h in hits]
    sizes = count_tokens(lines) if lines else []
    items: list[ContextItem] = []
    used = 0
    for hit, line, size in zip(hits, lines, sizes):
        if used + size > budget:
            continue
        used += size
        items.append(
            ContextItem(
                memory_id=hit.memory_id,
                turn_id=hit.turn_id,
                conversation_id=hit.conversation_id,
                line=line,
                tokens=size,
                score=hit.score,
                provenance=hit.provenance,
            )
        )
    return Context(query=query, budget=budget, tokens=used, items=tuple(items))
