"""A loopback port for a test's own server, chosen by the operating system: no two tests (nor two pytest-xdist
workers) pick the same one, and none collides with a server a developer left up with `make up`."""

from __future__ import annotations

import socket

H2C_OFFSET = 1000  # a server given port P by PORTS= listens for h2c on P + 1000 (its manifest's offset)


def free_port() -> int:
    """A port nothing listens on now, nor on its h2c port above it (each bound once and released; the kernel does not
    hand a port just bound out again at once, so a test's server can take it)."""
    while True:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port + H2C_OFFSET <= 65_535 and _bindable(port + H2C_OFFSET):
            return port


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True
