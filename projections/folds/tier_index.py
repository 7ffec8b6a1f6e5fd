"""The active sessions of one user's tiers as a centroid matrix and keyword postings, kept over a run of a fold.

Placing a page scores it against every active session
(:func:`projections.folds.tiers.similarities`): a matrix of the sessions'
centroids, stacked anew for every page, and a Jaccard term per session. Over
a run of events (a replay folds a user's whole log in a few runs) the
sessions change little between two pages: one gains the page, or a new one
joins at the end and the least used one leaves (LFU eviction), and a touch
re-creates a session with the same centroid and keywords. :class:`SessionIndex`
keeps the matrix and, per key term, the ids of the sessions holding it, and
updates only what changed (found by identity: sessions are immutable): rows
and postings of the sessions that left are dropped, those of new ones added;
anything else (a reordering) rebuilds it.

:meth:`SessionIndex.similarities` returns exactly what ``similarities`` does:
the cosines are one product of the same rows in the same order (the matrix
``np.stack`` would build), the Jaccard term the same expression, computed
only for the sessions that share a term with the page (the others add 0.0).
It holds no state of its own beyond a run: nothing here is in a snapshot.
"""

from __future__ import annotations

import math

import numpy as np

from projections.folds.tier_model import Page, Session, TierConfig, TierState


class SessionIndex:
    def __init__(self) -> None:
        self.sessions: list[Session] = []  # the active sessions when last looked at, in order
        self.shape: tuple[int, ...] | None = None  # the vector shape the matrix is for
        self.rows: list[int] = []  # positions of the sessions with a centroid of that shape
        self.row_of: dict[int, int] = {}  # position → its row in the matrix
        self.position: dict[str, int] = {}  # session id → its position
        self.matrix: np.ndarray | None = None
        self.postings: dict[str, set[str]] = {}  # key term → ids of the sessions whose keywords hold it

    def _usable(self, session: Session) -> bool:
        return session.centroid is not None and session.centroid.shape == self.shape

    def _positions(self, sessions: list[Session]) -> None:
        self.sessions = sessions
        self.rows = [i for i, s in enumerate(sessions) if self._usable(s)]
        self.row_of = {pos: row for row, pos in enumerate(self.rows)}
        self.position = {s.session_id: i for i, s in enumerate(sessions)}

    def _rebuild(self, sessions: list[Session], shape: tuple[int, ...] | None) -> None:
        self.shape = shape
        self._positions(sessions)
        self.matrix = np.stack([sessions[i].centroid for i in self.rows]) if self.rows else None
        self.postings = {}
        for s in sessions:
            for term in s.terms:
                self.postings.setdefault(term, set()).add(s.session_id)

    def _sync(self, state: TierState, shape: tuple[int, ...] | None) -> list[Session]:
        """The active sessions, with the matrix and postings brought in line with them."""
        sessions = list(state.active.values())
        if shape != self.shape or not self._update(sessions):
            self._rebuild(sessions, shape)
        return sessions

    def _update(self, sessions: list[Session]) -> bool:
        """Update in place for what a page or a touch does between two looks: sessions changed where they stand,
        some left, new ones joined at the end. False (nothing touched) for anything else: the caller rebuilds."""
        old, live = self.sessions, {s.session_id for s in sessions}
        kept = [i for i, s in enumerate(old) if s.session_id in live]  # old positions that stay, in order
        if len(kept) == len(old) == len(sessions) and all(a is b for a, b in zip(old, sessions)):
            return True
        if len(sessions) < len(kept) or any(old[i].session_id != sessions[j].session_id for j, i in enumerate(kept)):
            return False  # reordered: not what a page or a touch does
        for j, i in enumerate(kept):
            was, now = old[i], sessions[j]
            if was.centroid is not now.centroid and (i in self.row_of) != self._usable(now):
                return False  # a row appears or leaves among the kept ones
        gone = [self.row_of[i] for i, s in enumerate(old) if s.session_id not in live and i in self.row_of]
        for s in old:
            if s.session_id not in live:
                for term in s.terms:
                    self.postings[term].discard(s.session_id)
        matrix = np.delete(self.matrix, gone, axis=0) if gone else self.matrix
        row = 0
        for j, i in enumerate(kept):
            was, now = old[i], sessions[j]
            if i in self.row_of:
                if was.centroid is not now.centroid:
                    matrix[row] = now.centroid
                row += 1
            if was.terms is not now.terms and was.terms != now.terms:
                for term in was.terms - now.terms:
                    self.postings[term].discard(now.session_id)
                for term in now.terms - was.terms:
                    self.postings.setdefault(term, set()).add(now.session_id)
        joined = sessions[len(kept):]
        for s in joined:
            for term in s.terms:
                self.postings.setdefault(term, set()).add(s.session_id)
        new_rows = [s.centroid for s in joined if self._usable(s)]
        if new_rows:
            matrix = np.vstack([matrix, np.stack(new_rows)]) if matrix is not None and len(matrix) else np.stack(new_rows)
        self.matrix = matrix
        if gone or joined:
            self._positions(sessions)
        else:
            self.sessions = sessions
        return True

    def similarities(self, state: TierState, page: Page, config: TierConfig) -> tuple[list[Session], np.ndarray]:
        """The active sessions and ``similarities(page, sessions, config)`` of them (NaN reads as -inf)."""
        vector = page.vector
        sessions = self._sync(state, None if vector is None else vector.shape)
        cos = np.zeros(len(sessions))
        if vector is not None and self.rows:
            with np.errstate(invalid="ignore", over="ignore"):
                cos[self.rows] = self.matrix @ vector.astype(np.float64)
        terms, weight = page.terms, config.keyword_weight
        jaccard = np.zeros(len(sessions))
        if terms:
            n, common = len(terms), {}
            postings = self.postings
            for term in terms:
                for sid in postings.get(term, ()):
                    common[sid] = common.get(sid, 0) + 1
            position = self.position
            for sid, c in common.items():
                i = position[sid]
                jaccard[i] = weight * (c / (n + len(sessions[i].terms) - c))
        return sessions, np.nan_to_num(cos + jaccard, nan=-math.inf)
