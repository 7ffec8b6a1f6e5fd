"""The routing table: which shard owns (tenant, user). Plain Python, no Ray.

A new stream goes to a shard with the fewest streams, or at most
:func:`slack` more: among those, one that already holds users of the same
tenant, then one holding the fewest other tenants, then the fewest streams
(ties: the lowest index). With one tenant that is simply the shard with the
fewest streams, so users spread evenly whatever their ids; with several, a
tenant's users stay together on as few shards as the balance allows, apart
from the other tenants' where there are shards enough: one tenant's load
(a flood of reads and writes) then queues behind the shard's lock only its
own requests, not another tenant's. Every assignment is
appended to ``directory.jsonl`` in the store and fsynced before it is
returned, so a user lands on the same shard after any restart.

Reads never assign: :meth:`RoutingTable.lookup` answers ``None`` for a stream
seen for the first time. A lost or stale file is repaired from the shard logs,
which know their users (:meth:`RoutingTable.adopt`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from events.errors import StoreError

Stream = tuple[str, str]


def slack(lightest: int) -> int:
    """How many streams more than the least loaded shard's a shard may hold and still take a new stream:
    one, or a tenth of the lightest load once that is larger."""
    return max(1, lightest // 10)


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
                shard = int(row["shard"])
                if not 0 <= shard < self.num_shards:
                    raise StoreError(
                        f"{self.path} routes ({row['tenant']!r}, {row['user_id']!r}) to shard {shard}, but the "
                        f"store has {self.num_shards} shards; set num_shards in store.json back to the number of "
                        "shard logs in log/")
                self._shard_of[(row["tenant"], row["user_id"])] = shard
                good += len(line)
        if good < self.path.stat().st_size:
            # A torn last line was never acknowledged: cut it off so the next append starts a fresh line.
            with self.path.open("r+b") as fh:
                fh.truncate(good)
                os.fsync(fh.fileno())

    def route(self, streams: Sequence[Stream]) -> list[int]:
        """Shard of each stream, assigning (durably) the ones seen for the first time."""
        if all(stream in self._shard_of for stream in streams):  # the usual call: nothing to assign
            return [self._shard_of[s] for s in streams]
        new: dict[Stream, int] = {}
        load = [0] * self.num_shards
        tenants: list[set[str]] = [set() for _ in range(self.num_shards)]
        for (tenant, _), shard in self._shard_of.items():
            load[shard] += 1
            tenants[shard].add(tenant)
        for stream in streams:
            if stream in self._shard_of or stream in new:
                continue
            shard = self._pick(stream[0], load, tenants)
            load[shard] += 1
            tenants[shard].add(stream[0])
            new[stream] = shard
        if new:
            # Durable first: an assignment that did not reach the disk is not handed out.
            self._persist([{"tenant": t, "user_id": u, "shard": s} for (t, u), s in new.items()])
            self._shard_of.update(new)
        return [self._shard_of[s] for s in streams]

    def _pick(self, tenant: str, load: list[int], tenants: list[set[str]]) -> int:
        """The shard of a new stream of ``tenant`` (see the module's docstring)."""
        if all(held <= {tenant} for held in tenants):  # one tenant: the fewest streams
            return min(range(self.num_shards), key=lambda i: (load[i], i))
        room = min(load) + slack(min(load))
        return min((i for i in range(self.num_shards) if load[i] <= room),
                   key=lambda i: (tenant not in tenants[i], len(tenants[i] - {tenant}), load[i], i))

    def lookup(self, streams: Sequence[Stream]) -> list[int | None]:
        """Shard of each stream already assigned, ``None`` for the others; never writes."""
        return [self._shard_of.get(s) for s in streams]

    def adopt(self, held: Sequence[Sequence[Stream]]) -> int:
        """Record the streams each shard's log holds (``held[i]``: shard ``i``) that the file lacks.

        A stream the file routes to another shard than the log that holds it is
        refused: its messages would be split over two shards. Returns how many
        routes were added.
        """
        new: dict[Stream, int] = {}
        for shard, streams in enumerate(held):
            for stream in map(tuple, streams):
                known = self._shard_of.get(stream, new.get(stream))
                if known is None:
                    new[stream] = shard
                elif known != shard:
                    raise StoreError(
                        f"{self.path} routes {stream} to shard {known}, but the log of shard {shard} holds that "
                        "user; restore directory.jsonl from a backup, or delete it to rebuild it from the logs")
        if new:
            self._persist([{"tenant": t, "user_id": u, "shard": s} for (t, u), s in new.items()])
            self._shard_of.update(new)
        return len(new)

    def _persist(self, rows: list[dict]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
            fh.flush()
            os.fsync(fh.fileno())

    def assignments(self) -> dict[Stream, int]:
        return dict(self._shard_of)
