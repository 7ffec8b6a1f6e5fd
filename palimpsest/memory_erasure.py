"""Forgetting a user (a mixin of :class:`palimpsest.Memory`): erasure by crypto-shredding."""

from __future__ import annotations

from datetime import UTC, datetime

from actors import commands as c
from actors.decide_erasure import NOT_ENCRYPTED
from events.commands import check_stream
from events.errors import InvalidInputError
from palimpsest.query_vectors import QueryVectors
from palimpsest.remote import Shards
from palimpsest.remote import get as _get
from projections.rules.extraction import forget_text_caches


class ErasureApiMixin:
    shards: Shards  # set by Memory.__init__
    config: object  # palimpsest.config.StoreConfig
    _labels: dict  # set by Memory.__init__: graph label → vector
    _query_vectors: QueryVectors

    def forget(self, tenant: str, user_id: str) -> dict:
        """Erase one user of one tenant; cannot be undone.

        Appends a ``user_forgotten`` event, destroys the user's data keys (so its events in the log, sealed
        under them, can never be read again), and removes its projections, LanceDB rows (older table versions
        cleaned up) and snapshot. Other users are untouched. A later message for the same user id starts a
        fresh key. Returns ``{"forgotten": True, "through_seq", "key_generation", "event_id", ...}``, or
        ``{"forgotten": False, "reason"}`` for an unknown user or one with nothing stored since its last
        erasure. A plaintext store (created before encryption) refuses with how to migrate.
        """
        check_stream(tenant, user_id, what="forget")
        if not self.config.encrypted:
            raise InvalidInputError([("store", NOT_ENCRYPTED)], what="forget")
        [shard] = self.shards.cluster.lookup([(tenant, user_id)])
        if shard is None:  # unknown: nothing to erase, and nothing (not even a route) is written
            return {"tenant": tenant, "user_id": user_id, "forgotten": False, "reason": "no such user in this store"}
        command = c.ForgetUser(tenant=tenant, user_id=user_id, now=datetime.now(UTC))
        outcome = _get(self.shards.cluster.shards[shard].handle.remote([command]))[0]
        forget_text_caches()  # the graph rules ran here on the user's messages: their memos go too
        self._labels.clear()  # the graph labels and query texts this driver embedded: any user's, rebuilt on use
        self._query_vectors.clear()
        return outcome
