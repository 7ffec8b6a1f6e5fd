"""A direct replica's HTTP protocol (palimpsest.server.entry_protocol) on a real uvicorn server: a request its
headers get refused is answered at once, as the app would answer it, and the connection goes on in step."""

from __future__ import annotations

import json
import socket

import pytest
import uvicorn

from benchmarks.http_client import parse
from palimpsest.server import access, admission_http, entry_protocol
from palimpsest.server.admission import READ, WRITE, Admission, AdmissionSettings
from palimpsest.server.keys import KeyRing
from tests.uvicorn_thread import serving

reached: list[tuple[str, str, bytes]] = []  # (method, path, body) of each request that reached the app
started: list[str] = []  # the path of each request the server started an ASGI task for (refused or not)


def tasked(inner):
    async def outer(scope, receive, send):
        started.append(scope["path"])
        await inner(scope, receive, send)
    return outer


async def app(scope, receive, send):
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    reached.append((scope["method"], scope["path"], body))
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": "已收到 reached".encode()})


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    ring = KeyRing(tmp_path_factory.mktemp("keys"))
    flood, _ = ring.create("flood")
    modest, _ = ring.create("modest")
    before = access._served
    access.install(type("Served", (), {"keys": ring})())
    with serving(tasked(admission_http.EntryAdmission(app)), http=entry_protocol.EntryProtocol,
                 lifespan="off") as port:
        yield port, {"flood": flood, "modest": modest}
    access._served = before


@pytest.fixture
def gates():
    """One read and one write slot, no queue: a class whose slot is held refuses at once."""
    admission = Admission(AdmissionSettings(read_slots=1, write_slots=1, queue=0))
    with admission_http.at_entry(admission):
        reached.clear()
        started.clear()
        yield admission


def request(method: str, path: str, token: str | None, body: dict | None = None) -> bytes:
    data = b"" if body is None else json.dumps(body, ensure_ascii=False).encode()
    head = [f"{method} {path} HTTP/1.1", "Host: test", f"Content-Length: {len(data)}"]
    if token:
        head.append(f"Authorization: Bearer {token}")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + data


def answers(sock: socket.socket, n: int) -> list:
    buf, out = bytearray(), []
    sock.settimeout(5)
    while len(out) < n:
        got = parse(buf)
        if got is None:
            chunk = sock.recv(65536)
            assert chunk, f"the server closed the connection after {len(out)} of {n} answers"
            buf += chunk
            continue
        used, answer = got
        del buf[:used]
        out.append(answer)
    return out


def test_a_refused_request_is_answered_503_from_its_headers_and_the_connection_goes_on(served, gates):
    port, keys = served
    held = gates.gates[READ]._take("someone else")  # the one read slot busy: a read is refused at once
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(request("POST", "/v1/users/u1/search", keys["flood"], {"query": "我喜欢什么茶? " * 50}))
        (refused,) = answers(sock, 1)
        assert refused.status == 503
        assert refused.header("retry-after") == str(gates.settings.retry_after_s)
        error = json.loads(refused.body)
        assert error["error"] == "overloaded" and "reads" in error["message"]
        assert refused.header("server-timing").startswith("total;dur=")
        assert started == []  # answered before any task or middleware
        assert gates.state()[READ]["refused"] == 1
        gates.leave(READ, held)  # the slot free: the next request on the same connection is admitted
        sock.sendall(request("POST", "/v1/users/u1/search", keys["flood"], {"query": "what tea do I like?"}))
        (admitted,) = answers(sock, 1)
    assert admitted.status == 200 and admitted.body.decode() == "已收到 reached"
    assert reached == [("POST", "/v1/users/u1/search", b'{"query": "what tea do I like?"}')]


def test_pipelined_requests_are_answered_in_order_refused_or_not(served, gates):
    port, keys = served
    held = gates.gates[WRITE]._take("someone else")  # writes refused, reads admitted
    burst = b"".join([request("POST", "/v1/users/u1/messages", keys["flood"], {"messages": [{"text": "x" * 5000}]}),
                      request("GET", "/v1/users/u1/notes", keys["modest"]),
                      request("POST", "/v1/users/u1/messages", keys["modest"], {"messages": [{"text": "y"}]})])
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(burst)
        got = answers(sock, 3)
    assert [a.status for a in got] == [503, 200, 503]
    assert json.loads(got[2].body)["error"] == "overloaded" and "writes" in json.loads(got[2].body)["message"]
    assert [(m, p) for m, p, _ in reached] == [("GET", "/v1/users/u1/notes")] == [("GET", p) for p in started]
    gates.leave(WRITE, held)


def test_what_the_headers_cannot_decide_goes_on_to_the_app(served, gates):
    port, keys = served
    gates.gates[READ]._take("someone else")
    gates.gates[WRITE]._take("someone else")
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(request("GET", "/v1/users/u1/notes", None)  # no key: the route answers 401
                     + request("GET", "/v1/users/u1/notes", "pal_nope_wrong")  # an unknown key: the same
                     + request("POST", "/mcp", keys["flood"], {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
                     + request("GET", "/health", keys["flood"]))  # never held back
        got = answers(sock, 4)
    assert [a.status for a in got] == [200, 200, 503, 200]  # the first two let through (this app answers 200)
    assert json.loads(got[2].body)["error"] == "overloaded"  # /mcp: classed by its body, by the app's admission
    assert [p for _, p, _ in reached] == ["/v1/users/u1/notes", "/v1/users/u1/notes", "/health"]
    assert "/mcp" in started


def test_install_makes_it_the_default_protocol_of_servers_started_afterwards(monkeypatch):
    from uvicorn import config

    monkeypatch.setitem(config.HTTP_PROTOCOLS, "auto", config.HTTP_PROTOCOLS["auto"])
    assert entry_protocol.install()
    loaded = uvicorn.Config(app)
    loaded.load()
    assert loaded.http_protocol_class is entry_protocol.EntryProtocol
