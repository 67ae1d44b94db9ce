"""A minimal HTTP/1.x client over a raw socket: the contract checks need what http.client hides (HTTP/1.0, pipelined
requests on one connection, whether the server closed the connection). Its responses are read by the one HTTP/1
reader (http1.py), which the compliance probe reads with too; a response that reader cannot read is an HttpError,
the server's fault, not the harness's."""

from __future__ import annotations

import socket
import time

from harness.basics import http1
from harness.basics.http1 import Response

MAX_BYTES = 16 << 20  # what one connection reads at most: a server answering without end is an HttpError


class HttpError(Exception):
    pass


def request_bytes(path: str, version: str = "HTTP/1.1", headers: dict[str, str] | None = None) -> bytes:
    lines = [f"GET {path} {version}", "Host: 127.0.0.1"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


class Connection:
    """One connection; each response is read within `timeout` seconds, however slowly the server sends it."""

    def __init__(self, host: str, port: int, timeout: float = 10.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.timeout = timeout
        self.data = bytearray()  # received, not yet read as a response
        self.closed = False  # by the server

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_response(self, head: bool = False) -> Response:
        """The next final response (interim 1xx ones skipped; `head`: it answers a HEAD request, no body);
        HttpError where it cannot be read or the server closed first, TimeoutError where it is not whole in time."""
        deadline = time.monotonic() + self.timeout
        while True:
            if self.data:
                step = http1.response_at(bytes(self.data), 0, self.closed, head)
                if isinstance(step, tuple):
                    response, end = step
                    del self.data[:end]
                    if response is not None:
                        return response
                    continue
                if step is not http1.INCOMPLETE:
                    raise HttpError(step.why or step.kind)
            if self.closed:
                raise HttpError("connection closed " + ("within a response" if self.data else "before a response"))
            self._receive(deadline)

    def _receive(self, deadline: float) -> None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"no whole response within {self.timeout:g} s")
        if len(self.data) > MAX_BYTES:
            raise HttpError(f"a response over {MAX_BYTES} bytes")
        self.sock.settimeout(left)
        try:
            chunk = self.sock.recv(65_536)
        except TimeoutError:
            raise TimeoutError(f"no whole response within {self.timeout:g} s") from None
        except ConnectionResetError:
            chunk = b""
        if chunk:
            self.data += chunk
        else:
            self.closed = True

    def closed_by_server(self, wait_s: float = 2.0) -> bool:
        """True when the server closes the connection within wait_s (nothing more to read)."""
        if self.data or self.closed:
            return self.closed and not self.data
        self.sock.settimeout(wait_s)
        try:
            chunk = self.sock.recv(1)
        except TimeoutError:
            return False
        except ConnectionResetError:
            return True
        self.data += chunk
        self.closed = not chunk
        return self.closed

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def get(host: str, port: int, path: str, timeout: float = 10.0) -> Response:
    with Connection(host, port, timeout) as conn:
        conn.send(request_bytes(path))
        return conn.read_response()
