"""A free port is drawn outside the kernel's ephemeral range, where starting Ray cannot take it first."""

from __future__ import annotations

import socket

from palimpsest.server import ports


def _ephemeral() -> tuple[int, int]:
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        low, high = map(int, f.read().split())
    return low, high


def test_a_free_port_is_outside_the_ephemeral_range_and_can_be_listened_on():
    low, high = _ephemeral()
    for _ in range(20):
        port = ports.free_port()
        assert ports.RANGE[0] <= port <= ports.RANGE[1] and not low <= port <= high
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))
            s.listen()


def test_a_port_something_listens_on_is_not_free():
    with socket.socket() as held:
        held.bind(("127.0.0.1", ports.free_port()))
        held.listen()
        taken = held.getsockname()[1]
        assert not ports.is_free("127.0.0.1", taken)
        assert not ports.is_free("127.0.0.1", taken, reuse=True)


def test_with_the_range_all_taken_the_kernel_gives_one(monkeypatch):
    monkeypatch.setattr(ports, "is_free", lambda host, port, reuse=False: False)
    port = ports.free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
