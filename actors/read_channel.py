"""A shard's direct read channel: queries from a process on the same machine over a Unix socket, beside Ray.

Why: a read is a few milliseconds of shard work, and a Ray actor call adds
its own round trip on top, with a long tail on a busy machine (measured
with a 3 ms query at load 8 on 2 cores: Ray p50 5.0 / p95 11.4–16.0 ms,
this socket p50 3.2–3.3 / p95 3.4–8.0 ms; README, "The read channel").
Ray stays the control plane: it creates, names, restarts and closes the
shard; commands (writes) and every call from another machine go through
Ray. Only queries take the channel, and any failure of the channel sends
the query through Ray instead (a query's only effect, its touches, is
recorded when it is answered: a query that got no answer recorded none).

Wire format: each frame is an 8-byte big-endian length and a pickle. A
request is a list of queries; a reply is ``("ok", answers)`` (or
``("ok", answers, spent)``: where the shard's time went, phase → ms),
``("error", PalimpsestError)`` (raised as itself by the client, as
:func:`palimpsest.remote.get` does for Ray) or ``("failed", text)`` for
anything else (the client raises :class:`ChannelFailed`; the caller asks
Ray, which reports the error in its usual way).

Who may connect: the socket lives in a directory only the shard's user can
enter (0700), the socket file is 0600, and each connection's peer must run
as that same user (``SO_PEERCRED``). A frame larger than
:data:`MAX_FRAME` or one that does not unpickle closes that connection
only; the shard goes on serving the others.
"""

from __future__ import annotations

import os
import pickle
import shutil
import socket
import struct
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import structlog

from events.errors import PalimpsestError

logger = structlog.get_logger("palimpsest.read_channel")

HEADER = struct.Struct("!Q")
MAX_FRAME = 1 << 30  # 1 GiB: far above any answer (a graph export of a big user is tens of MB)
CONNECT_TIMEOUT_S = 2.0


class ChannelBroken(Exception):
    """The channel is gone (the shard process restarted or closed): ask Ray, and look the channel up again."""


class ChannelFailed(Exception):
    """The shard raised something other than a Palimpsest error: ask Ray, which reports it in its usual way."""


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if k == 0:
            raise EOFError("the other end closed the connection")
        got += k
    return bytes(buf)


def _send(sock: socket.socket, obj: object) -> None:
    body = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(HEADER.pack(len(body)) + body)


def _receive(sock: socket.socket) -> object:
    (n,) = HEADER.unpack(_recv_exact(sock, HEADER.size))
    if n > MAX_FRAME:
        raise ValueError(f"frame of {n} bytes is over the {MAX_FRAME}-byte limit")
    return pickle.loads(_recv_exact(sock, n))


def _peer_uid(sock: socket.socket) -> int | None:
    """The connecting process's user id (Linux ``SO_PEERCRED``); ``None`` where the platform has no such option."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i")))
    return uid


class ChannelServer:
    """Serves ``handler(queries) -> answers`` on a fresh Unix socket, one thread per connection; with ``spent``,
    each answer goes with ``spent()`` called in the handler's thread right after it (where its time went: phase
    name → ms, e.g. the wait for the shard's lock and the read)."""

    def __init__(self, handler: Callable[[list], list], name: str = "shard",
                 spent: Callable[[], dict[str, float]] | None = None) -> None:
        self.handler, self.spent = handler, spent
        self.directory = Path(tempfile.mkdtemp(prefix="plm-read-"))  # mode 0700: only this user enters it
        self.path = str(self.directory / name)
        self._closed = threading.Event()
        self._connections: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(self.path)
        os.chmod(self.path, 0o600)
        self._listener.listen(64)
        threading.Thread(target=self._accept, name="read-channel", daemon=True).start()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return  # closed
            uid = _peer_uid(conn)
            if uid is not None and uid != os.getuid():
                logger.warning("read_channel_refused", peer_uid=uid)
                conn.close()
                continue
            with self._lock:
                if self._closed.is_set():
                    conn.close()
                    return
                self._connections.add(conn)
            threading.Thread(target=self._serve, args=(conn,), name="read-channel-conn", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            self._answer(conn)
        finally:
            with self._lock:
                self._connections.discard(conn)
            conn.close()

    def _answer(self, conn: socket.socket) -> None:
        while not self._closed.is_set():
            try:
                queries = _receive(conn)
            except (EOFError, OSError):
                return  # the caller went away, or the shard is closing
            except Exception as exc:  # noqa: BLE001 - a bad frame ends this connection, not the shard
                logger.warning("read_channel_bad_frame", error=str(exc)[:200])
                return
            try:
                if not isinstance(queries, list):
                    raise TypeError(f"a request is a list of queries, not {type(queries).__name__}")
                answers = self.handler(queries)
                reply = ("ok", answers, self.spent()) if self.spent is not None else ("ok", answers)
            except PalimpsestError as exc:
                reply = ("error", exc)
            except Exception as exc:  # noqa: BLE001 - reported to the client, which asks Ray instead
                reply = ("failed", f"{type(exc).__name__}: {exc}"[:2000])
            try:
                _send(conn, reply)
            except OSError:
                return
            except Exception as exc:  # noqa: BLE001 - an answer that does not pickle: the client asks Ray
                _send(conn, ("failed", f"answer could not be sent: {type(exc).__name__}: {exc}"[:2000]))

    def close(self) -> None:
        """Stop listening, end every open connection (their callers turn to Ray), remove the socket."""
        with self._lock:
            self._closed.set()
            connections, self._connections = list(self._connections), set()
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        try:
            try:
                self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread
            except OSError:
                pass
            self._listener.close()
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)


class ChannelClient:
    """The calling side: a few open connections to one shard's socket, one per calling thread at a time."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._idle: list[socket.socket] = []
        self._lock = threading.Lock()
        self.closed = False

    def _connection(self) -> socket.socket:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(CONNECT_TIMEOUT_S)
        try:
            sock.connect(self.path)
        except OSError as exc:
            sock.close()
            raise ChannelBroken(f"cannot connect to {self.path}: {exc}") from None
        sock.settimeout(None)  # a long query (a counterfactual re-fold) may take its time
        return sock

    def call(self, queries: list, spent: dict[str, float] | None = None) -> list:
        """The shard's answers to ``queries``; raises a Palimpsest error as itself, else Channel{Broken,Failed}.
        ``spent``, when given, is filled with where the shard says its time went (nothing if it does not say)."""
        if self.closed:
            raise ChannelBroken("the channel was closed")
        sock = self._connection()
        try:
            _send(sock, queries)
            status, value, *said = _receive(sock)
        except (OSError, EOFError, ValueError, pickle.UnpicklingError) as exc:
            sock.close()
            raise ChannelBroken(f"read channel {self.path}: {exc}") from None
        with self._lock:
            if self.closed:
                sock.close()
            else:
                self._idle.append(sock)
        if status == "ok":
            if spent is not None and said and isinstance(said[0], dict):
                spent.update(said[0])
            return value
        if status == "error":
            raise value
        raise ChannelFailed(value)

    def close(self) -> None:
        with self._lock:
            self.closed = True
            idle, self._idle = self._idle, []
        for sock in idle:
            sock.close()
