"""A free TCP port the server may take a moment later without another process taking it first.

A port the kernel hands out for ``bind(0)`` comes from its ephemeral range
(``/proc/sys/net/ipv4/ip_local_port_range``, 32768–60999 on Linux), the
range every outgoing connection's local port and every process asking for
"any port" draws from. Between choosing such a port and listening on it,
starting Ray binds a dozen of those (its GCS, agents, metrics), so the
chosen one can be gone by then. :func:`free_port` draws from
:data:`RANGE` instead, below the ephemeral range and above Ray's worker
ports (10002–19999): there only a process that names the port binds it.
"""

from __future__ import annotations

import random
import socket

RANGE = (20000, 32767)  # inclusive: above Ray's worker ports, below the kernel's ephemeral range
TRIES = 64


def is_free(host: str, port: int, *, reuse: bool = False) -> bool:
    """Whether ``port`` on ``host`` can be listened on now (``reuse``: SO_REUSEADDR, as a server restarting binds)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        if reuse:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    """A port of :data:`RANGE` nothing listens on now (any free port the kernel gives if none is found)."""
    draw = random.SystemRandom()
    for _ in range(TRIES):
        port = draw.randint(*RANGE)
        if is_free(host, port):
            return port
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return s.getsockname()[1]
