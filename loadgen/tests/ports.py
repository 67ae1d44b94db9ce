"""A loopback port for a test's own server, chosen by the operating system: no two tests (nor two pytest-xdist
workers) pick the same one, and none collides with a server a developer left up with `make up`."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port nothing listens on now (bound once to port 0 and released; the kernel does not hand it out again at
    once, so a test's server can take it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
