"""The fusion's candidate rows, kept cheap: which memories a search may surface, their order, the episodes ranked.

A search scores a few hundred candidate rows ``[score, -seq, memory_id, breakdown]`` and re-orders them after each
ranking stage; these helpers give the same answers as the plain expressions they replace (named in each), with
the per-user figures they need derived once and kept between queries:

- :func:`order`: best score first, ties by log order (``rows.sort(key=lambda s: (-s[0], s[1]))``), as two sorts
  on one field each.
- :func:`scope_filter`: whether a memory may be surfaced (known, in the scope, recorded by ``now``, not
  invalidated), comparing each turn's recording time as integer microseconds kept per turn.
- :func:`ranked_episodes`: the user's episodes by centroid cosine to the query, their centroids stacked once per
  state of the episode projection.

Derived caches only: never folded or saved; each is used only while the projection it was read from is unchanged.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from datetime import datetime
from operator import is_, itemgetter

import numpy as np

from projections.folds.episodes import Episode, EpisodeState
from projections.folds.retention import epoch_micros  # an aware time as integer epoch microseconds (exact order)
from projections.folds.state import UserMemory

_SCORE, _SEQ = itemgetter(0), itemgetter(1)


def order(rows: list[list]) -> None:
    """Sort rows best first, ties by ``-seq`` (the earlier turn first): ``sort(key=lambda s: (-s[0], s[1]))``.

    A stable sort on ``-seq`` then a stable reverse sort on the score (a reverse sort keeps equal items in their
    order): the same order, without a key tuple per row."""
    rows.sort(key=_SEQ)
    rows.sort(key=_SCORE, reverse=True)


def scope_filter(memory: UserMemory, scope: str, now: datetime | None, times: dict[str, int],
                 hidden: Callable[[str], bool] | None, newest: int | None = None) -> Callable[[str], bool]:
    """``allowed(memory_id)``: a turn the projections know, in ``scope`` (``all``, or archived exactly when the scope
    is ``archive``), recorded at or before ``now`` (when given), and not ``hidden`` (when given).

    ``times`` is the user's turn -> recording time in :func:`epoch_micros`, filled here if missing (a turn's time
    never changes); ``newest``, when known, is the latest of every turn's time: a ``now`` at or after it leaves
    nobody out. With a naive ``now`` the times are compared as datetimes (which refuses mixing them)."""
    by_id, archived = memory.messages.by_id, memory.archive.archived
    any_scope, archive = scope == "all", scope == "archive"
    limit = epoch_micros(now) if now is not None and now.tzinfo is not None else None
    if limit is not None and newest is not None and limit >= newest:
        if hidden is None and (any_scope or (not archive and not archived)):
            return by_id.__contains__  # every known turn (the usual question: about now, nothing archived)
        limit = None
        now = None

    def allowed(memory_id: str) -> bool:
        msg = by_id.get(memory_id)
        if msg is None or (not any_scope and (memory_id in archived) != archive):
            return False
        if limit is not None:
            at = times.get(memory_id)
            if at is None:
                at = times[memory_id] = epoch_micros(msg.occurred_at)
            if at > limit:
                return False
        elif now is not None and not msg.occurred_at <= now:
            return False
        return hidden is None or not hidden(memory_id)

    return allowed


class _EpisodeMatrices:
    """Per episode projection: its episodes and their centroids stacked, while its closed and open parts stand."""

    def __init__(self) -> None:
        self._cache: dict[int, tuple[weakref.ref, tuple, list[Episode], np.ndarray | None]] = {}

    def get(self, state: EpisodeState) -> tuple[list[Episode], np.ndarray | None]:
        tail = [*state.open_members, *(m for m, _ in state.pending)]
        seen = (list(state.closed), tail, state.open_reason, state.config)
        cached = self._cache.get(id(state))
        if cached is not None and cached[0]() is state and _same(cached[1], seen):
            return cached[2], cached[3]
        episodes = [e for e in state.episodes() if e.centroid is not None]
        matrix = np.stack([e.centroid for e in episodes]) if episodes else None
        if len(self._cache) > 1024:
            self._cache = {k: v for k, v in self._cache.items() if v[0]() is not None}
        self._cache[id(state)] = (weakref.ref(state), seen, episodes, matrix)
        return episodes, matrix


def _same(a: tuple, b: tuple) -> bool:
    """The same closed episodes and open members (the very objects: they are immutable), reason and config."""
    return (len(a[0]) == len(b[0]) and len(a[1]) == len(b[1]) and all(map(is_, a[0], b[0]))
            and all(map(is_, a[1], b[1])) and a[2] == b[2] and a[3] is b[3])


EPISODES = _EpisodeMatrices()


def ranked_episodes(memory: UserMemory, query_vector: np.ndarray, limit: int) -> list[tuple[Episode, float]]:
    """The user's episodes closest to the query by centroid cosine, best first (ties: log order)."""
    episodes, matrix = EPISODES.get(memory.episodes)
    if not episodes or limit < 1:
        return []
    sims = matrix @ np.asarray(query_vector, dtype=np.float64)
    top = np.argsort(-sims, kind="stable")[:limit]
    return [(episodes[i], float(sims[i])) for i in top]

