"""The overload benchmark's HTTP client (benchmarks.http_client) against a real HTTP/1.1 server (uvicorn)."""

from __future__ import annotations

import asyncio
import json
import socket

import pytest
from starlette.applications import Starlette
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

from benchmarks.http_client import Client, encode, parse
from tests.uvicorn_thread import serving

seen = {"clients": set(), "running": 0, "most": 0}


async def echo(request):
    seen["clients"].add(request.client.port)
    seen["running"] += 1
    seen["most"] = max(seen["most"], seen["running"])
    try:
        await asyncio.sleep(float(request.query_params.get("sleep", 0)))
        body = await request.json() if request.method == "POST" else None
        headers = {"connection": "close"} if request.query_params.get("close") else {}
        return JSONResponse({"got": body, "auth": request.headers.get("authorization")}, status_code=201,
                            headers={"server-timing": "total;dur=1.5", **headers})
    finally:
        seen["running"] -= 1


async def chunks(request):
    async def parts():
        for word in ("中文", " and ", "English"):
            yield word.encode()
    return StreamingResponse(parts(), media_type="text/plain")


@pytest.fixture(scope="module")
def server():
    app = Starlette(routes=[Route("/echo", echo, methods=["GET", "POST"]), Route("/chunks", chunks)])
    with serving(app, timeout_keep_alive=1) as port:
        yield port


def run(coro):
    return asyncio.run(coro)


def test_json_requests_are_answered_over_one_kept_alive_connection(server):
    seen["clients"].clear()

    async def go():
        client = Client("127.0.0.1", server, limit=1)
        answers = [await client.request("POST", "/echo", {"n": i, "text": "喜欢绿茶"}, {"Authorization": "Bearer k"})
                   for i in range(5)]
        client.close()
        return answers

    answers = run(go())
    assert [a.status for a in answers] == [201] * 5
    assert [json.loads(a.body)["got"]["n"] for a in answers] == list(range(5))
    assert json.loads(answers[0].body) == {"got": {"n": 0, "text": "喜欢绿茶"}, "auth": "Bearer k"}
    assert answers[0].header("Server-Timing") == "total;dur=1.5" and answers[0].header("x-none") == ""
    assert len(seen["clients"]) == 1  # one connection for all five


def test_a_chunked_answer_is_read_whole(server):
    async def go():
        client = Client("127.0.0.1", server, limit=2)
        answer = await client.request("GET", "/chunks")
        client.close()
        return answer

    answer = run(go())
    assert answer.status == 200 and answer.body.decode() == "中文 and English"


def test_a_connection_the_server_closes_is_replaced(server):
    seen["clients"].clear()

    async def go():
        client = Client("127.0.0.1", server, limit=1)
        first = await client.request("GET", "/echo?close=1")  # answered with Connection: close
        second = await client.request("GET", "/echo")
        await asyncio.sleep(1.5)  # past the server's keep-alive timeout: it closes the idle connection
        third = await client.request("POST", "/echo", {"again": True})
        client.close()
        return first, second, third

    first, second, third = run(go())
    assert (first.status, second.status, third.status) == (201, 201, 201)
    assert json.loads(third.body)["got"] == {"again": True}
    assert len(seen["clients"]) == 3


def test_at_most_limit_requests_are_in_flight(server):
    seen["most"] = 0

    async def go():
        client = Client("127.0.0.1", server, limit=3)
        raw = client.encode("GET", "/echo?sleep=0.05")
        answers = await asyncio.gather(*(client.send(raw) for _ in range(12)))
        client.close()
        return answers

    assert [a.status for a in run(go())] == [201] * 12
    assert seen["most"] == 3


def test_a_refused_connection_raises_connection_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once the socket is closed

    async def go():
        await Client("127.0.0.1", port, limit=1).request("GET", "/")

    with pytest.raises(ConnectionError):
        run(go())


def test_an_answer_is_parsed_only_once_it_is_whole():
    raw = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\nRetry-After: 1\r\n\r\nbusyHTTP/1.1"
    for cut in (10, raw.index(b"\r\n\r\n") + 2, raw.index(b"busy") + 2):
        assert parse(bytearray(raw[:cut])) is None
    used, answer = parse(bytearray(raw))
    assert raw[used:] == b"HTTP/1.1" and answer.status == 503 and answer.body == b"busy"
    assert answer.header("retry-after") == "1"
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
    assert parse(bytearray(chunked[:-3])) is None
    assert parse(bytearray(chunked))[1].body == b"abcde"
    request = encode("h:1", "POST", "/p", {"q": "绿茶"}, {"Authorization": "Bearer k"})
    head, _, body = request.partition(b"\r\n\r\n")
    assert head.split(b"\r\n")[0] == b"POST /p HTTP/1.1" and json.loads(body) == {"q": "绿茶"}
    assert f"Content-Length: {len(body)}".encode() in head
