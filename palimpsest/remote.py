"""The public API's side of the shard actors: routing, one command or query to one shard or to all, results
(a shard's own errors raised as themselves), and "now"."""

from __future__ import annotations

import os
import threading
import time
from datetime import UTC, datetime

import ray

from actors.commands import AdminCommand, Command, Query
from actors.read_channel import ChannelBroken, ChannelClient, ChannelFailed
from actors.runtime import ShardCluster
from events.commands import canonical_id, check_stream
from events.errors import InvalidInputError, PalimpsestError, ShardUnavailableError
from events.log import ScanFilter
from palimpsest.phases import add, timed


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


def positive(value: object, name: str, what: str, fix: str) -> int:
    """``value`` if it is a positive int (not a bool, not a string), else a clear refusal."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInputError([(name, f"{value!r}; {fix}")], what=what)
    return value


def scan_filter(tenant, user_id, from_seq, to_seq, since, until, kinds, limit) -> ScanFilter:
    """The filter of an ``events`` call, each bound checked: a wrong one is named with its fix."""
    problems = []
    for name, value in (("since", since), ("until", until)):
        if value is not None and (not isinstance(value, datetime) or value.tzinfo is None):
            problems.append((name, f"{value!r} is not a timezone-aware datetime; e.g. datetime(2024, 5, 1, tzinfo=UTC)"))
    for name, value in (("from_seq", from_seq), ("to_seq", to_seq), ("limit", limit)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            problems.append((name, f"{value!r}; give a non-negative integer or leave it out"))
    if isinstance(kinds, str) or (kinds is not None and not all(isinstance(k, str) for k in kinds)):
        problems.append(("kinds", f"{kinds!r}; give a list of event kinds, e.g. ['message_recorded']"))
    if problems:
        raise InvalidInputError(problems, what="events")
    return ScanFilter(canonical_id(tenant), canonical_id(user_id), from_seq, to_seq, since, until,
                      tuple(kinds) if kinds else None)


class Shards:
    """Sends commands and queries to the shard that owns a (tenant, user), or to every shard.

    Routes come from the store's directory actor once per stream and are cached.
    Only writes assign a shard to a new (tenant, user): a read of an unknown one
    goes to shard 0, which holds nothing of it and answers empty, and the
    directory is left unchanged.
    """

    def __init__(self, cluster: ShardCluster) -> None:
        self.cluster = cluster
        self._routes: dict[tuple[str, str], int] = {}
        self.channels = ReadChannels()

    def actor(self, index: int):
        """The actor of shard ``index``; a shard that could not start raises its own error (naming file and fix)."""
        why = self.cluster.down.get(index)
        if why is not None:
            raise ShardUnavailableError(f"shard {index} is down: {why}")
        return self.cluster.shards[index]

    def all(self) -> list:
        """Every shard's actor; a store-wide call with a shard down raises that shard's error."""
        return [self.actor(i) for i in range(len(self.cluster.shards))]

    def live(self) -> list:
        """The actors of the shards that started (a shard that could not start is left out, not raised)."""
        return [a for i, a in enumerate(self.cluster.shards) if i not in self.cluster.down]

    def route(self, streams: list[tuple[str, str]]) -> list[int]:
        unknown = sorted({s for s in streams if s not in self._routes})
        if unknown:
            self._routes.update(zip(unknown, self.cluster.route(unknown)))
        return [self._routes[s] for s in streams]

    def of(self, tenant: str, user_id: str, *, assign: bool = False):
        """The actor of the user's shard; ``assign``: route a new user durably (writes only)."""
        return self.actor(self.index_of(tenant, user_id, assign=assign))

    def index_of(self, tenant: str, user_id: str, *, assign: bool = False) -> int:
        stream = check_stream(tenant, user_id, what=f"call for ({str(tenant)[:40]!r}, {str(user_id)[:40]!r})")
        if assign:
            return self.route([stream])[0]
        if stream not in self._routes:
            [shard] = self.cluster.lookup([stream])
            if shard is None:
                # unknown: any running shard answers empty, and nothing is written
                return min(set(range(len(self.cluster.shards))) - set(self.cluster.down))
            self._routes[stream] = shard
        return self._routes[stream]

    def owning(self, tenant: str | None, user_id: str | None) -> list:
        """The user's shard when both are given, else every shard (a user id alone is refused: ids are per tenant)."""
        if user_id is not None and tenant is None:
            raise InvalidInputError([("tenant", f"missing for user {str(user_id)[:60]!r}; user ids are per tenant: "
                                                "give the tenant too")], what="call")
        return [self.of(tenant, user_id)] if tenant and user_id else self.all()

    # -- calls that do not wait, and maintenance calls: every actor call of the driver goes through here ----
    def submit(self, index: int, commands: list[Command]):
        """Commands to shard ``index`` without waiting for them: :func:`get` gives their outcomes."""
        return self.actor(index).handle.remote(list(commands))

    def submit_queries(self, index: int, queries: list[Query]):
        """Queries to shard ``index`` without waiting (over Ray, not the read channel): :func:`get` answers."""
        return self.actor(index).query.remote(list(queries))

    def submit_admin(self, index: int, commands: list[AdminCommand]):
        """Admin commands (a backup, a replay) to shard ``index`` without waiting: :func:`get` gives their results."""
        return self.actor(index).admin.remote(list(commands))

    def admin_each(self, command: AdminCommand) -> list:
        """The admin command on every shard, in parallel; one result per shard."""
        return [out for [out] in get([self.submit_admin(i, [command]) for i in range(len(self.cluster.shards))])]

    def on_live(self, method: str, *args) -> list:
        """Start a maintenance call (``quiet``, ``idle_work``, ``load_dictionaries``, or ``query`` with a list of
        queries) on every live shard; its pending results, for :func:`get` (or none awaited)."""
        return [getattr(actor, method).remote(*args) for actor in self.live()]

    def send(self, tenant: str, user_id: str, command: Command):
        """One command to the user's shard; its outcome (a retry of the same command returns the same)."""
        with timed("shard"):
            return get(self.of(tenant, user_id, assign=True).handle.remote([command]))[0]

    def ask(self, tenant: str, user_id: str, query: Query):
        """One query to the user's shard: over its read channel when it has one here, else (or if that fails) Ray."""
        spent: dict[str, float] = {}
        try:
            with timed("shard"):
                return self._ask(tenant, user_id, query, spent)
        finally:
            for phase, ms in spent.items():
                add(phase, ms)

    def _ask(self, tenant: str, user_id: str, query: Query, spent: dict[str, float]):
        index = self.index_of(tenant, user_id)
        actor = self.actor(index)
        client = self.channels.client(index, actor)
        if client is not None:
            try:
                return client.call([query], spent)[0]
            except ChannelBroken:
                self.channels.drop(index)
            except ChannelFailed:
                pass  # Ray reports the shard's error the usual way
        return get(actor.query.remote([query]))[0]

    def close(self) -> None:
        self.channels.close()

    def send_each(self, command: Command, tenant: str | None = None, user_id: str | None = None) -> list:
        """The command on the user's shard, or on every shard; one outcome per shard."""
        return [out for [out] in get([s.handle.remote([command]) for s in self.owning(tenant, user_id)])]

    def ask_each(self, query: Query, tenant: str | None = None, user_id: str | None = None) -> list:
        return [out for [out] in get([s.query.remote([query]) for s in self.owning(tenant, user_id)])]


class ReadChannels:
    """The shards' read channels (:mod:`actors.read_channel`) this process can use, looked up once per incarnation.

    A shard on another Ray node, an actor without a channel, or a socket this
    process cannot see has none: its queries go through Ray. After a channel
    breaks (the shard restarted or closed) queries use Ray for
    ``RETRY_AFTER_S`` before the new incarnation's channel is looked up.
    ``PALIMPSEST_READ_CHANNEL=0`` sends every query through Ray.
    """

    RETRY_AFTER_S = 1.0

    def __init__(self) -> None:
        self.enabled = os.environ.get("PALIMPSEST_READ_CHANNEL", "1") != "0"
        self._clients: dict[int, ChannelClient | None] = {}
        self._retry_at: dict[int, float] = {}
        self._lock = threading.Lock()

    def client(self, index: int, actor) -> ChannelClient | None:
        if not self.enabled:
            return None
        if index in self._clients:
            return self._clients[index]
        if time.monotonic() < self._retry_at.get(index, 0.0):
            return None
        client = None
        try:
            where = ray.get(actor.channel.remote())
            if where["node_id"] == ray.get_runtime_context().get_node_id() and os.path.exists(where["path"]):
                client = ChannelClient(where["path"])
        except Exception:  # noqa: BLE001 - no channel (an older actor, a dead one): Ray it is
            client = None
        with self._lock:
            self._clients[index] = client
        return client

    def drop(self, index: int) -> None:
        with self._lock:
            client = self._clients.pop(index, None)
            self._retry_at[index] = time.monotonic() + self.RETRY_AFTER_S
        if client is not None:
            client.close()

    def close(self) -> None:
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            if client is not None:
                client.close()
