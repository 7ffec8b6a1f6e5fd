"""Forgetting a user (a mixin of :class:`palimpsest.Memory`): erasure by crypto-shredding."""

from __future__ import annotations

from datetime import UTC, datetime

from actors import commands as c
from actors.decide_erasure import NOT_ENCRYPTED
from events.commands import canonical_id, check_stream
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

        Ids are compared in Unicode NFC; a store written before that may hold the same id in another form (see
        docs/guides/user-ids.md): every such stream (on the shards that are up) is erased too, its outcome under
        ``"other_forms"``.
        """
        tenant, user_id = check_stream(tenant, user_id, what="forget")
        if not self.config.encrypted:
            raise InvalidInputError([("store", NOT_ENCRYPTED)], what="forget")
        streams = [(tenant, user_id), *self._other_forms(tenant, user_id)]
        shards = self.shards.cluster.lookup(streams)
        outcomes = [self._forget_stream(stream, shard) for stream, shard in zip(streams, shards)]
        outcome, others = outcomes[0], [o for o, s in zip(outcomes[1:], shards[1:]) if s is not None]
        if others:
            outcome = {**outcome, "other_forms": others}
        forget_text_caches()  # the graph rules ran here on the user's messages: their memos go too
        self._labels.clear()  # the graph labels and query texts this driver embedded: any user's, rebuilt on use
        self._query_vectors.clear()
        return outcome

    def _other_forms(self, tenant: str, user_id: str) -> list[tuple[str, str]]:
        """The streams stored under another Unicode form of (tenant, user_id) (written before ids were NFC)."""
        parts = _get(self.shards.on_live("query", [c.Streams()]))
        return sorted({(t, u) for [part] in parts for t, u in part if (t, u) != (tenant, user_id)
                       and (canonical_id(t), canonical_id(u)) == (tenant, user_id)})

    def _forget_stream(self, stream: tuple[str, str], shard: int | None) -> dict:
        if shard is None:  # unknown: nothing to erase, and nothing (not even a route) is written
            return {"tenant": stream[0], "user_id": stream[1], "forgotten": False,
                    "reason": "no such user in this store"}
        command = c.ForgetUser(tenant=stream[0], user_id=stream[1], now=datetime.now(UTC))
        return _get(self.shards.submit(shard, [command]))[0]
