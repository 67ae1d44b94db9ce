"""A hostile HTTP/1.1 server for the probe's fault tests (tests/test_probe_hostile.py): it reads whatever comes and
answers every connection with one of MODES, responses the probe's reader must survive: a negative, a non-hex and an
enormous chunk size, a Content-Length of 5,000 digits, complete responses without end, a response that never
finishes, 10 MB of headers. `/id` is answered properly (the harness's start check), everything else by the mode.

`python hostile.py PORT [MODE...]` serves on 127.0.0.1:PORT, cycling through the modes given (all by default),
one per connection; tests start it in a thread (`serve`)."""

from __future__ import annotations

import itertools
import socket
import socketserver
import sys
import threading
import time

OK_HEAD = b"HTTP/1.1 200 OK\r\n"
MODES = {
    "negative-chunk": OK_HEAD + b"Transfer-Encoding: chunked\r\n\r\n-6\r\nhello!\r\n0\r\n\r\n",
    "non-hex-chunk": OK_HEAD + b"Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
    "enormous-chunk": OK_HEAD + b"Transfer-Encoding: chunked\r\n\r\n" + b"F" * 5_000 + b"\r\nhello\r\n0\r\n\r\n",
    "long-content-length": OK_HEAD + b"Content-Length: " + b"9" * 5_000 + b"\r\n\r\nhello",
    "endless-responses": b"",  # written in a loop (see Handler)
    "never-finishes": OK_HEAD + b"Content-Length: 100\r\n\r\nhello",  # then silence, connection open
    "huge-headers": b"",  # 10 MB of header lines (see Handler)
}
ONE = OK_HEAD + b"Content-Length: 2\r\n\r\nok"
HUGE_HEADERS_BYTES = 10 * 1024 * 1024
HOLD_S = 60.0  # how long a connection is kept open at most (the probe must give up long before)


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128
    modes: itertools.cycle[str]
    lock: threading.Lock


class Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        sock: socket.socket = self.request
        sock.settimeout(1.0)
        try:
            first = sock.recv(65_536)
        except OSError:
            return
        if first.startswith(b"GET /id "):
            sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\nConnection: close\r\n\r\nhostile")
            return
        with self.server.lock:  # type: ignore[attr-defined]
            mode = next(self.server.modes)  # type: ignore[attr-defined]
        try:
            answer(sock, mode)
        except OSError:  # the probe gave up and closed: what it should do
            pass


def answer(sock: socket.socket, mode: str) -> None:
    ends = time.monotonic() + HOLD_S
    if mode == "endless-responses":
        while time.monotonic() < ends:
            sock.sendall(ONE * 64)
    elif mode == "huge-headers":
        sock.sendall(OK_HEAD)
        line = b"X-Hostile: " + b"a" * 1000 + b"\r\n"
        for _ in range(HUGE_HEADERS_BYTES // len(line)):
            sock.sendall(line)
    else:
        sock.sendall(MODES[mode])
    while time.monotonic() < ends:  # then hold the connection open, reading whatever comes
        try:
            if not sock.recv(65_536):
                return
        except TimeoutError:
            continue


def serve(modes: list[str] | None = None, port: int = 0) -> Server:
    """A hostile server on 127.0.0.1 (`port` 0: any free one), cycling through `modes` (default all)."""
    server = Server(("127.0.0.1", port), Handler)
    server.modes = itertools.cycle(modes or list(MODES))
    server.lock = threading.Lock()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


if __name__ == "__main__":
    serve(sys.argv[2:] or None, int(sys.argv[1]))
    threading.Event().wait()
