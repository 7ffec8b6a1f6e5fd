"""The users a shard keeps in memory: all of them, or at most ``cap`` (least recently used leave first).

:class:`ResidentUsers` is the ``users`` mapping of a shard's
:class:`~projections.folds.state.ShardState`. It knows every stream the log holds;
a stream that is not resident is loaded on first use by ``load`` (snapshot
plus the log's tail), and when more than ``cap`` are resident the least
recently used one is handed to ``evict`` (which writes its snapshot if it is
behind) and dropped. Pinned streams are never evicted: the runner pins the
streams of a batch from before its append until after its fold, so a user is
never reloaded from a log that already holds events not yet folded.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from types import MappingProxyType

from projections.folds.state import UserMemory

Stream = tuple[str, str]


class ResidentUsers(MutableMapping):
    def __init__(self, known: Iterable[Stream], load: Callable[[Stream], UserMemory],
                 evict: Callable[[Stream, UserMemory], None], cap: int | None = None) -> None:
        if cap is not None and cap < 1:
            raise ValueError(f"cap must be at least 1 resident user, got {cap}")
        self._known: set[Stream] = set(known)
        self._resident: OrderedDict[Stream, UserMemory] = OrderedDict()
        self._pinned: dict[Stream, int] = {}
        self._load = load
        self._evict = evict
        self.cap = cap
        self.loads = 0  # cold loads since start
        self.evictions = 0

    # -- mapping ---------------------------------------------------------
    def __getitem__(self, stream: Stream) -> UserMemory:
        memory = self._resident.get(stream)
        if memory is not None:
            self._resident.move_to_end(stream)
            return memory
        if stream not in self._known:
            raise KeyError(stream)
        memory = self._resident[stream] = self._load(stream)
        self.loads += 1
        self.trim()
        return memory

    def __setitem__(self, stream: Stream, memory: UserMemory) -> None:
        self._known.add(stream)
        self._resident[stream] = memory
        self._resident.move_to_end(stream)
        self.trim()

    def __delitem__(self, stream: Stream) -> None:
        self._known.discard(stream)
        self._resident.pop(stream, None)

    def __contains__(self, stream: object) -> bool:
        return stream in self._known

    def __iter__(self) -> Iterator[Stream]:
        return iter(sorted(self._known))

    def __len__(self) -> int:
        return len(self._known)

    # -- residency -------------------------------------------------------
    def drop(self, stream: Stream) -> None:
        """Let ``stream``'s memory go without evicting it (no snapshot); it stays known, loaded again on next use."""
        self._resident.pop(stream, None)

    @property
    def resident(self) -> Mapping[Stream, UserMemory]:
        """The users in memory now (a read-only view, no copy: the runner asks on every commit)."""
        return MappingProxyType(self._resident)

    @contextmanager
    def pinned(self, streams: Iterable[Stream]):
        """Keep ``streams`` resident (loading the known ones now) until the block ends."""
        streams = list(dict.fromkeys(streams))
        for s in streams:
            self._pinned[s] = self._pinned.get(s, 0) + 1
        try:
            for s in streams:
                if s in self._known:
                    self[s]
            yield
        finally:
            for s in streams:
                self._pinned[s] -= 1
                if not self._pinned[s]:
                    del self._pinned[s]
            self.trim()

    def trim(self) -> None:
        if self.cap is None:
            return
        while len(self._resident) > self.cap:
            victim = next((s for s in self._resident if s not in self._pinned), None)
            if victim is None:
                return  # everything resident is pinned: over the cap until the batch is folded
            memory = self._resident.pop(victim)
            self._evict(victim, memory)
            self.evictions += 1
