"""The public API's side of the shard actors: routing, one command or query to one shard or to all, results
(a shard's own errors raised as themselves), and "now"."""

from __future__ import annotations

from datetime import UTC, datetime

import ray

from actors.commands import Command, Query
from actors.runtime import ShardCluster
from events.errors import InvalidInputError, PalimpsestError


def get(refs):
    """``ray.get`` that raises a shard's own Palimpsest error as itself, without Ray's wrapping and traceback."""
    try:
        return ray.get(refs)
    except ray.exceptions.RayTaskError as exc:
        if isinstance(exc.cause, PalimpsestError):
            raise exc.cause from None
        raise


def aware(now: datetime | None, what: str) -> datetime:
    """``now`` or the current time; a naive datetime is ambiguous and refused."""
    if now is None:
        return datetime.now(UTC)
    if not isinstance(now, datetime) or now.tzinfo is None:
        raise InvalidInputError([("now", f"{now!r} is not a timezone-aware datetime; e.g. datetime.now(UTC)")], what=what)
    return now


class Shards:
    """Sends commands and queries to the shard that owns a (tenant, user), or to every shard.

    Routes come from the store's directory actor once per stream and are cached.
    """

    def __init__(self, cluster: ShardCluster) -> None:
        self.cluster = cluster
        self._routes: dict[tuple[str, str], int] = {}

    @property
    def actors(self) -> list:
        return self.cluster.shards

    def route(self, streams: list[tuple[str, str]]) -> list[int]:
        unknown = sorted({s for s in streams if s not in self._routes})
        if unknown:
            self._routes.update(zip(unknown, self.cluster.route(unknown)))
        return [self._routes[s] for s in streams]

    def of(self, tenant: str, user_id: str):
        return self.cluster.shards[self.route([(tenant, user_id)])[0]]

    def owning(self, tenant: str | None, user_id: str | None) -> list:
        """The user's shard when both are given, else every shard."""
        return [self.of(tenant, user_id)] if tenant and user_id else self.cluster.shards

    def send(self, tenant: str, user_id: str, command: Command):
        """One command to the user's shard; its outcome (a retry of the same command returns the same)."""
        return get(self.of(tenant, user_id).handle.remote([command]))[0]

    def ask(self, tenant: str, user_id: str, query: Query):
        return get(self.of(tenant, user_id).query.remote([query]))[0]

    def send_each(self, command: Command, tenant: str | None = None, user_id: str | None = None) -> list:
        """The command on the user's shard, or on every shard; one outcome per shard."""
        return [out for [out] in get([s.handle.remote([command]) for s in self.owning(tenant, user_id)])]

    def ask_each(self, query: Query, tenant: str | None = None, user_id: str | None = None) -> list:
        return [out for [out] in get([s.query.remote([query]) for s in self.owning(tenant, user_id)])]
