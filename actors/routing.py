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
        good = 0  # bytes of complete, acknowledged lines
        with self.path.open("rb") as fh:
            for line in fh:
                if not line.endswith(b"\n"):
                    break
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    break
                self._shard_of[(row["tenant"], row["user_id"])] = int(row["shard"])
                good += len(line)
        if good < self.path.stat().st_size:
            # A torn last line was never acknowledged: cut it off so the next append starts a fresh line.
            with self.path.open("r+b") as fh:
                fh.truncate(good)
                os.fsync(fh.fileno())

    def route(self, streams: Sequence[Stream]) -> list[int]:
        """Shard of each stream, assigning (durably) the ones seen for the first time."""
        new: dict[Stream, int] = {}
        load = [0] * self.num_shards
        for shard in self._shard_of.values():
            load[shard] += 1
        for stream in streams:
            if stream in self._shard_of or stream in new:
                continue
            shard = min(range(self.num_shards), key=lambda i: (load[i], i))
            load[shard] += 1
            new[stream] = shard
        if new:
            # Durable first: an assignment that did not reach the disk is not handed out.
            self._persist([{"tenant": t, "user_id": u, "shard": s} for (t, u), s in new.items()])
            self._shard_of.update(new)
        return [self._shard_of[s] for s in streams]

    def _persist(self, rows: list[dict]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
            fh.flush()
            os.fsync(fh.fileno())

    def assignments(self) -> dict[Stream, int]:
        return dict(self._shard_of)
