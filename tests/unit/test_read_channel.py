"""The shard read channel (actors.read_channel): answers, errors, bad frames, many callers, a closed shard."""

from __future__ import annotations

import os
import pickle
import socket
import stat
import threading

import pytest

from actors.read_channel import HEADER, MAX_FRAME, ChannelBroken, ChannelClient, ChannelFailed, ChannelServer
from events.errors import InvalidInputError


def handler(queries: list) -> list:
    out = []
    for q in queries:
        if q == "invalid":
            raise InvalidInputError([("query", "empty; give the text to search for")], what="query")
        if q == "crash":
            raise RuntimeError("boom")
        if q == "unpicklable":
            out.append(threading.Lock())
            continue
        out.append(q * 2 if isinstance(q, (int, str)) else q)
    return out


@pytest.fixture
def server():
    srv = ChannelServer(handler, "shard-0")
    yield srv
    srv.close()


def test_answers_come_back_in_order_and_the_connection_is_reused(server):
    client = ChannelClient(server.path)
    assert client.call([1, "ab", 3]) == [2, "abab", 6]
    assert client.call([{"k": [1.5]}]) == [{"k": [1.5]}]
    assert len(client._idle) == 1  # one connection, kept for the next call
    client.close()


def test_only_the_owner_can_reach_the_socket(server):
    assert stat.S_IMODE(os.stat(server.directory).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(server.path).st_mode) == 0o600


def test_a_palimpsest_error_is_raised_as_itself(server):
    client = ChannelClient(server.path)
    with pytest.raises(InvalidInputError) as err:
        client.call(["invalid"])
    assert err.value.problems == (("query", "empty; give the text to search for"),)
    assert client.call([2]) == [4]  # the connection is still good


def test_any_other_error_or_an_answer_that_does_not_pickle_is_reported_for_a_ray_retry(server):
    client = ChannelClient(server.path)
    with pytest.raises(ChannelFailed, match="RuntimeError: boom"):
        client.call(["crash"])
    with pytest.raises(ChannelFailed, match="could not be sent"):
        client.call(["unpicklable"])
    assert client.call([5]) == [10]


def test_a_large_answer_crosses_whole(server):
    client = ChannelClient(server.path)
    big = "x" * (8 << 20)
    assert client.call([big]) == [big * 2]


def test_bad_frames_close_only_their_own_connection(server):
    for junk in (b"\x00" * 3, HEADER.pack(MAX_FRAME + 1), HEADER.pack(5) + b"nope!", HEADER.pack(10) + b"short"):
        raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        raw.connect(server.path)
        raw.sendall(junk)
        raw.shutdown(socket.SHUT_WR)
        assert raw.recv(100) == b""  # closed without an answer
        raw.close()
    not_a_list = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    not_a_list.connect(server.path)
    body = pickle.dumps("a string")
    not_a_list.sendall(HEADER.pack(len(body)) + body)
    (n,) = HEADER.unpack(not_a_list.recv(HEADER.size))
    status, why = pickle.loads(not_a_list.recv(n))
    assert status == "failed" and "list of queries" in why
    not_a_list.close()
    assert ChannelClient(server.path).call([7]) == [14]  # the server goes on


def test_many_callers_at_once(server):
    client = ChannelClient(server.path)
    results, errors = {}, []

    def work(i: int) -> None:
        try:
            results[i] = [client.call([i, j])[1] for j in range(50)]
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert results == {i: [2 * j for j in range(50)] for i in range(8)}
    assert 1 <= len(client._idle) <= 8


def test_a_closed_shard_breaks_the_channel_and_removes_its_socket():
    srv = ChannelServer(handler, "shard-1")
    client = ChannelClient(srv.path)
    assert client.call([1]) == [2]
    srv.close()
    assert not os.path.exists(srv.path) and not srv.directory.exists()
    with pytest.raises(ChannelBroken):
        client.call([1])  # the kept connection is served no more
    with pytest.raises(ChannelBroken, match="cannot connect"):
        client.call([1])
    client.close()
    with pytest.raises(ChannelBroken, match="closed"):
        client.call([1])


def test_a_server_that_says_where_its_time_went_sends_it_with_each_answer_from_the_handlers_thread():
    spent = threading.local()

    def timed_handler(queries: list) -> list:
        spent.last = {"shard_read": float(len(queries)), "thread": float(threading.get_ident())}
        return handler(queries)

    srv = ChannelServer(timed_handler, "shard-1", spent=lambda: dict(spent.last))
    try:
        client = ChannelClient(srv.path)
        said: dict = {}
        assert client.call([1, 2], said) == [2, 4]
        assert said["shard_read"] == 2.0 and said["thread"] != float(threading.get_ident())  # the server's thread
        assert client.call([5]) == [10]  # a caller that does not ask is answered all the same
        client.close()
    finally:
        srv.close()


def test_a_server_that_does_not_say_leaves_the_callers_record_empty(server):
    client = ChannelClient(server.path)
    said: dict = {}
    assert client.call([3], said) == [6] and said == {}
    client.close()
