"""The CLI's HTTP transport to a served store: the standard library only, so a client starts in a blink.

``httpx`` costs about a third of a second to import; a ``palimpsest --server
URL search`` is one request, so :mod:`http.client` with one kept-alive
connection does. 429 and 503 answers are retried after their ``Retry-After``
(a few times); any other error answer becomes a :class:`ServerError` that
names each field and its fix, as the server sent them.
"""

from __future__ import annotations

import http.client
import json
import socket
import time
from urllib.parse import urlencode, urlsplit

from events.errors import PalimpsestError

RETRIED = (429, 503)
MAX_TRIES = 4


class ServerError(PalimpsestError):
    """The server refused a request: its status, code, message and the problems it listed."""

    def __init__(self, status: int, body: dict) -> None:
        self.status, self.code = status, body.get("error", "error")
        self.problems = [(p.get("field", ""), p.get("fix", "")) for p in body.get("problems", ())]
        lines = [f"  - {field}: {fix}" for field, fix in self.problems]
        super().__init__("\n".join([f"the server answered {status} ({self.code}): {body.get('message', '')}",
                                    *lines]))


class Http:
    def __init__(self, url: str, key: str, timeout: float = 300.0) -> None:
        parts = urlsplit(url.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise PalimpsestError(f"--server {url!r} is not an http(s) URL; give one like http://127.0.0.1:8765")
        self.url, self.prefix = url.rstrip("/"), parts.path
        kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        self._connect = lambda: kind(parts.hostname, parts.port, timeout=timeout)
        self._conn: http.client.HTTPConnection | None = None
        self.headers = {"Authorization": f"Bearer {key}", "Accept": "application/json"}

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def raw(self, method: str, path: str, *, body: dict | None = None, params: dict | None = None) -> bytes:
        """The answer's bytes (2xx), after retrying 429/503 as told; a :class:`ServerError` otherwise."""
        query = {k: v for k, v in (params or {}).items() if v is not None}
        target = self.prefix + path + ("?" + urlencode(query, doseq=True) if query else "")
        data = json.dumps(body, ensure_ascii=False).encode("utf-8") if body is not None else None
        headers = {**self.headers, **({"Content-Type": "application/json"} if data is not None else {})}
        for attempt in range(MAX_TRIES):
            status, retry_after, payload = self._send(method, target, data, headers)
            if status < 400:
                return payload
            if status not in RETRIED or attempt == MAX_TRIES - 1:
                break
            time.sleep(min(10.0, float(retry_after or 1)))
        try:
            answer = json.loads(payload)
        except ValueError:
            answer = {"message": payload[:200].decode("utf-8", "replace")}
        raise ServerError(status, answer if isinstance(answer, dict) else {"message": str(answer)[:200]})

    def call(self, method: str, path: str, *, body: dict | None = None, params: dict | None = None):
        return json.loads(self.raw(method, path, body=body, params=params))

    def _send(self, method: str, target: str, data: bytes | None, headers: dict) -> tuple[int, str | None, bytes]:
        for fresh in (False, True):  # a kept-alive connection the server closed meanwhile: reconnect once
            if self._conn is None or fresh:
                self.close()
                self._conn = self._connect()
            try:
                self._conn.request(method, target, body=data, headers=headers)
                response = self._conn.getresponse()
                return response.status, response.getheader("Retry-After"), response.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as exc:
                if fresh:
                    raise self._unreachable(exc) from None
            except (OSError, socket.timeout, http.client.HTTPException) as exc:
                raise self._unreachable(exc) from None
        raise AssertionError("unreachable")

    def _unreachable(self, exc: Exception) -> PalimpsestError:
        self.close()
        return PalimpsestError(f"the server at {self.url} did not answer ({type(exc).__name__}: {exc}); check that "
                               "`palimpsest serve` runs there and that --server/PALIMPSEST_URL names it")
