"""A minimal HTTP/1.x client over a raw socket: the contract checks need what http.client hides
(HTTP/1.0, pipelined requests on one connection, whether the server closed the connection)."""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass, field


class HttpError(Exception):
    pass


DECIMAL = re.compile(r"[0-9]{1,18}")  # ASCII digits only (str.isdigit takes '²'); past 18, no real body
HEXADECIMAL = re.compile(rb"[0-9A-Fa-f]{1,15}")


@dataclass
class Response:
    version: str
    status: int
    headers: dict[str, str] = field(default_factory=dict)  # lower-case names; repeated headers joined with ", "
    body: bytes = b""

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


def request_bytes(path: str, version: str = "HTTP/1.1", headers: dict[str, str] | None = None) -> bytes:
    lines = [f"GET {path} {version}", "Host: 127.0.0.1"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


class Connection:
    def __init__(self, host: str, port: int, timeout: float = 10.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.reader = self.sock.makefile("rb")

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_response(self) -> Response:
        status_line = self.reader.readline(65536)
        if not status_line:
            raise HttpError("connection closed before a response")
        parts = status_line.decode("latin-1").rstrip("\r\n").split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
            raise HttpError(f"bad status line {status_line!r}")
        response = Response(version=parts[0], status=int(parts[1]))
        while True:
            line = self.reader.readline(65536).decode("latin-1").rstrip("\r\n")
            if not line:
                break
            name, _, value = line.partition(":")
            key = name.strip().lower()
            value = value.strip()
            response.headers[key] = f"{response.headers[key]}, {value}" if key in response.headers else value
        response.body = self._read_body(response)
        return response

    def _read_body(self, response: Response) -> bytes:
        """The body as the head frames it; HttpError (the server's fault, not the harness's) for framing that cannot
        be read."""
        if "chunked" in (response.header("transfer-encoding") or "").lower():
            return self._read_chunks()
        length = response.header("content-length")
        if length is not None:
            if not DECIMAL.fullmatch(length):  # also "5, 5": two Content-Length headers
                raise HttpError(f"Content-Length {length!r} is not a number of bytes")
            return self.reader.read(int(length))
        if response.status in (204, 304) or 100 <= response.status < 200:
            return b""
        return self.reader.read()  # delimited by the server closing the connection

    def _read_chunks(self) -> bytes:
        body = b""
        while True:
            size = self.reader.readline(1024).split(b";")[0].strip()
            if not HEXADECIMAL.fullmatch(size):
                raise HttpError(f"chunk size {size!r} is not a hexadecimal number")
            if int(size, 16) == 0:
                while self.reader.readline(1024) not in (b"\r\n", b"\n", b""):
                    pass
                return body
            body += self.reader.read(int(size, 16))
            self.reader.readline(16)

    def closed_by_server(self, wait_s: float = 2.0) -> bool:
        """True when the server closes the connection within wait_s (nothing more to read)."""
        self.sock.settimeout(wait_s)
        try:
            return self.reader.read(1) == b""
        except TimeoutError:
            return False
        except ConnectionResetError:
            return True

    def close(self) -> None:
        self.reader.close()
        self.sock.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def get(host: str, port: int, path: str, timeout: float = 10.0) -> Response:
    with Connection(host, port, timeout) as conn:
        conn.send(request_bytes(path))
        return conn.read_response()
