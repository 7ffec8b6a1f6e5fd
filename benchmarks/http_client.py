"""A lean HTTP/1.1 client for the overload benchmark's load generator (:mod:`benchmarks.serve_overload`).

The generator runs on the machine it measures: every microsecond of CPU it spends on a request is taken from the
server's cores. aiohttp spends about 350 µs of CPU per request here (a fixed 503 answered by a trivial server,
750 requests/s); this client, keep-alive connections over asyncio protocols and requests encoded to bytes before
the level starts, about half of that. It speaks just what the benchmark needs: requests with a JSON body or none,
answers with a ``Content-Length`` or chunked, kept-alive connections (a new one when the server closes one), at most
``limit`` requests in flight.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    headers: dict[bytes, bytes]  # names lower-cased
    body: bytes

    def header(self, name: str) -> str:
        return self.headers.get(name.lower().encode("latin-1"), b"").decode("latin-1")


def encode(host: str, method: str, path: str, body=None, headers: dict | None = None) -> bytes:
    """One request as the bytes sent: a JSON ``body`` (or none) and ``headers``."""
    data = b"" if body is None else json.dumps(body).encode()
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}", f"Content-Length: {len(data)}"]
    if body is not None:
        lines.append("Content-Type: application/json")
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + data


def parse(buf: bytearray) -> tuple[int, Answer] | None:
    """The first whole answer in ``buf`` and the bytes it took, or None while it is incomplete."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None
    head = bytes(buf[:end]).split(b"\r\n")
    status = int(head[0].split(b" ", 2)[1])
    headers = {}
    for line in head[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
    start = end + 4
    if headers.get(b"transfer-encoding", b"").lower() == b"chunked":
        body, at = bytearray(), start
        while True:
            eol = buf.find(b"\r\n", at)
            if eol < 0:
                return None
            size = int(bytes(buf[at:eol]).split(b";")[0], 16)
            if len(buf) < eol + 2 + size + 2:
                return None
            body += buf[eol + 2:eol + 2 + size]
            at = eol + 2 + size + 2
            if size == 0:
                return at, Answer(status, headers, bytes(body))
    n = int(headers.get(b"content-length", b"0"))
    if len(buf) < start + n:
        return None
    return start + n, Answer(status, headers, bytes(buf[start:start + n]))


class _Connection(asyncio.Protocol):
    def __init__(self) -> None:
        self.buf = bytearray()
        self.waiter: asyncio.Future | None = None
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buf += data
        parsed = parse(self.buf) if self.waiter is not None else None
        if parsed is not None:
            used, answer = parsed
            del self.buf[:used]
            waiter, self.waiter = self.waiter, None
            if not waiter.done():
                waiter.set_result(answer)

    def connection_lost(self, exc) -> None:
        self.transport = None
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(ConnectionError("the server closed the connection before answering"))


class Client:
    """Keep-alive connections to ``host:port``, at most ``limit`` requests in flight (the others wait their turn)."""

    def __init__(self, host: str, port: int, limit: int) -> None:
        self.host, self.port = host, port
        self.authority = f"{host}:{port}"
        self._idle: list[_Connection] = []
        self._slots = asyncio.Semaphore(limit)

    def encode(self, method: str, path: str, body=None, headers: dict | None = None) -> bytes:
        return encode(self.authority, method, path, body, headers)

    async def send(self, raw: bytes) -> Answer:
        """The answer to one request given as its bytes (:meth:`encode`); ConnectionError if the server hangs up."""
        async with self._slots:
            conn = self._idle.pop() if self._idle else None
            try:
                answer = await self._exchange(conn, raw)
            except ConnectionError:
                if conn is None:
                    raise
                # a kept-alive connection the server closed as it went idle: sent once more on a new one (the
                # benchmark's requests may be sent twice: reads, and ingests by their client message ids)
                answer = await self._exchange(None, raw)
            return answer

    async def _exchange(self, conn: _Connection | None, raw: bytes) -> Answer:
        loop = asyncio.get_running_loop()
        if conn is None or conn.transport is None:
            _, conn = await loop.create_connection(_Connection, self.host, self.port)
        conn.waiter = loop.create_future()
        conn.transport.write(raw)
        answer = await conn.waiter
        if conn.transport is not None and answer.headers.get(b"connection", b"").lower() != b"close":
            self._idle.append(conn)
        elif conn.transport is not None:
            conn.transport.close()
        return answer

    async def request(self, method: str, path: str, body=None, headers: dict | None = None) -> Answer:
        return await self.send(self.encode(method, path, body, headers))

    def close(self) -> None:
        for conn in self._idle:
            if conn.transport is not None:
                conn.transport.close()
        self._idle.clear()
