"""The routing table: which shard owns (tenant, user). Plain Python, no Ray.

A new stream goes to the shard with the fewest streams (ties: the lowest
index), so users spread evenly whatever their ids. Every assignment is
appended to ``directory.jsonl`` in the store and fsynced before it is
returned, so a user lands on the same shard after any restart.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

Stream = tuple[str, str]


class RoutingTable:
    def __init__(self, path: Path, num_shards: int) -> None:
        if num_shards < 1:
            raise ValueError(f"num_shards must be at least 1, got {num_shards}")
        self.path = path
        self.num_shards = num_shards
        self._shard_of: dict[Stream, int] = {}
        self._load()

    def _load(self) -> None:
        if not self.path.exists():
            return
        with self.path.open(encoding="utf-8") as fh:
            for line in fh:
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    break  # a torn last line: that assignment was never acknowledged
                self._shard_of[(row["tenant"], row["user_id"])] = int(row["shard"])

    def route(self, streams: Sequence[Stream]) -> list[int]:
        """Shard of each stream, assigning (durably) the ones seen for the first time."""
        new: list[dict] = []
        load = [0] * self.num_shards
        for shard in self._shard_of.values():
            load[shard] += 1
        for stream in streams:
            if stream in self._shard_of:
                continue
            shard = min(range(self.num_shards), key=lambda i: (load[i], i))
            load[shard] += 1
            self._shard_of[stream] = shard
            new.append({"tenant": stream[0], "user_id": stream[1], "shard": shard})
        if new:
            self._persist(new)
        return [self._shard_of[s] for s in streams]

    def _persist(self, rows: list[dict]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
            fh.flush()
            os.fsync(fh.fileno())

    def assignments(self) -> dict[Stream, int]:
        return dict(self._shard_of)
