"""What an ingest reports, in a module light enough for the server client (no Ray, no pydantic)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class IngestReport:
    received: int = 0
    created: int = 0
    duplicates: int = 0
    memory_ids: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def messages_per_s(self) -> float:
        return self.received / self.seconds if self.seconds else 0.0
