"""The active sessions of one user's tiers as a centroid matrix and keyword postings, kept over a run of a fold.

Placing a page scores it against every active session
(:func:`projections.folds.tiers.similarities`): a matrix of the sessions'
centroids, stacked anew for every page, and a Jaccard term per session. Over
a run of events (a replay folds a user's whole log in a few runs) the
sessions change little between two pages: one gains the page, a touch
re-creates a session with the same centroid and keywords. :class:`SessionIndex`
keeps the matrix and, per key term, the sessions holding it, and updates
only what changed (found by identity: sessions are immutable).

:meth:`SessionIndex.similarities` returns exactly what ``similarities`` does:
the cosines are one product of the same rows in the same order (the matrix
``np.stack`` would build), the Jaccard term the same expression, computed
only for the sessions that share a term with the page (the others add 0.0).
It holds no state of its own beyond a run: nothing here is in a snapshot.
"""

from __future__ import annotations

import math
from collections import Counter
from itertools import chain, compress, count
from operator import is_not

import numpy as np

from projections.folds.tier_model import Page, Session, TierConfig, TierState


class SessionIndex:
    def __init__(self) -> None:
        self.sessions: list[Session] = []  # the active sessions when last looked at, in order
        self.shape: tuple[int, ...] | None = None  # the vector shape the matrix is for
        self.rows: list[int] = []  # positions of the sessions with a centroid of that shape
        self.row_of: dict[int, int] = {}  # position → its row in the matrix
        self.matrix: np.ndarray | None = None
        self.postings: dict[str, set[int]] = {}  # key term → positions of the sessions whose keywords hold it
        self.term_at: dict[int, tuple] = {}  # id(keyword_counts) → (that tuple, term → its position in it)

    def _rebuild(self, sessions: list[Session], shape: tuple[int, ...] | None) -> None:
        self.sessions, self.shape = sessions, shape
        self.rows = [i for i, s in enumerate(sessions) if s.centroid is not None and s.centroid.shape == shape]
        self.row_of = {pos: row for row, pos in enumerate(self.rows)}
        self.matrix = np.stack([sessions[i].centroid for i in self.rows]) if self.rows else None
        self.postings = {}
        for i, s in enumerate(sessions):
            for term in s.terms:
                self.postings.setdefault(term, set()).add(i)

    def _sync(self, state: TierState, shape: tuple[int, ...] | None) -> list[Session]:
        """The active sessions, with the matrix and postings brought in line with them."""
        sessions = list(state.active.values())
        old = self.sessions
        if shape != self.shape or len(sessions) - len(old) not in (0, 1):
            self._rebuild(sessions, shape)
            return sessions
        # The positions whose session object changed (map and compress run in C: most pages change one or two).
        for i in compress(count(), map(is_not, old, sessions)):
            was, now = old[i], sessions[i]
            if was.session_id != now.session_id:
                self._rebuild(sessions, shape)
                return sessions
            if was.centroid is not now.centroid:
                row = self.row_of.get(i)
                usable = now.centroid is not None and now.centroid.shape == shape
                if (row is not None) != usable:  # a row appears or leaves: the matrix changes shape
                    self._rebuild(sessions, shape)
                    return sessions
                if row is not None:
                    self.matrix[row] = now.centroid
            if was.terms is not now.terms and was.terms != now.terms:
                for term in was.terms - now.terms:
                    self.postings[term].discard(i)
                for term in now.terms - was.terms:
                    self.postings.setdefault(term, set()).add(i)
        if len(sessions) > len(old):  # a session opened: it is the newest, last in order (zip stopped before it)
            self._append(sessions[-1], len(old))
        self.sessions = sessions
        return sessions

    def _append(self, session: Session, pos: int) -> None:
        """Add the session at position ``pos`` (the last): a row of the matrix, its terms' postings."""
        if session.centroid is not None and session.centroid.shape == self.shape:
            self.row_of[pos] = len(self.rows)
            self.rows.append(pos)
            row = session.centroid[np.newaxis]
            self.matrix = np.stack([session.centroid]) if self.matrix is None else np.concatenate([self.matrix, row])
        for term in session.terms:
            self.postings.setdefault(term, set()).add(pos)

    def similarities(self, state: TierState, page: Page, config: TierConfig) -> tuple[list[Session], np.ndarray]:
        """The active sessions and ``similarities(page, sessions, config)`` of them (NaN reads as -inf)."""
        vector = page.vector
        sessions = self._sync(state, None if vector is None else vector.shape)
        if vector is not None and self.rows:
            if vector.dtype != np.float64:  # a page's vector is float64 already (tiers._unit)
                vector = vector.astype(np.float64)
            product = self.matrix @ vector  # under the np.errstate tiers.fold_run holds
            if len(self.rows) == len(sessions):  # every session has a comparable centroid: the product is the row
                cos = product
            else:
                cos = np.zeros(len(sessions))
                cos[self.rows] = product
        else:
            cos = np.zeros(len(sessions))
        terms, weight = page.terms, config.keyword_weight
        jaccard = np.zeros(len(sessions))
        if terms:
            postings, empty = self.postings, ()
            common = Counter(chain.from_iterable([postings.get(term, empty) for term in terms]))
            n = len(terms)
            for i, c in common.items():
                jaccard[i] = weight * (c / (n + len(sessions[i].terms) - c))
        scores = cos + jaccard
        if np.isfinite(scores).all():  # nan_to_num would return a copy of the same values, after its checks
            return sessions, scores
        return sessions, np.nan_to_num(scores, nan=-math.inf)

    def counts_after(self, counts: tuple[tuple[str, int], ...], top: tuple[str, ...], keywords: tuple[str, ...],
                     limit: int) -> tuple[tuple[tuple[str, int], ...], tuple[str, ...]]:
        """A session's ``(keyword_counts, keywords)`` once a page with ``keywords`` joined it, as ``_with_page``
        computes them (``dict(counts)``, one more per keyword, ``tuple(items)``, :func:`_top_terms`).

        The counts are a tuple of (term, count) in first-seen order, often hundreds long: rather than a dict
        built from it and a tuple of new pairs per page, a copy of the tuple gets the page's few terms changed
        or appended, found through each term's position (kept for the run, handed from a session's counts to the
        ones that replace them). The new top terms are among the old ones and the page's: only those are sorted,
        by count then first-seen position (the order the stable sort of every term gives).
        """
        known = self.term_at.pop(id(counts), None)
        at = known[1] if known is not None and known[0] is counts else {t: i for i, (t, _) in enumerate(counts)}
        items = list(counts)
        for term in keywords:
            i = at.get(term)
            if i is None:
                at[term] = len(items)
                items.append((term, 1))
            else:
                items[i] = (term, items[i][1] + 1)
        new = tuple(items)
        self.term_at[id(new)] = (new, at)
        if (len(top) < limit and len(top) != len(counts)) or not all(t in at for t in top):  # not their top
            ranked = sorted(range(len(new)), key=lambda i: new[i][1], reverse=True)[:limit]
            return new, tuple(new[i][0] for i in ranked)
        ranked = sorted({at[t] for t in top}.union(at[t] for t in keywords))  # candidates, in first-seen order
        ranked = sorted(ranked, key=lambda i: new[i][1], reverse=True)[:limit]
        return new, tuple(new[i][0] for i in ranked)
