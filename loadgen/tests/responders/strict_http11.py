"""A strict HTTP/1.1 origin server for the probe's own test (tests/test_probe.py): it answers every case of the
probe (harness/conformance/) the way the RFCs prefer, so the suite can be shown to pass a server that is right, and, with
FAULTS named, it gets chosen things wrong so the suite can be shown to find exactly those.

`python strict_http11.py PORT [FAULT...]` serves on 127.0.0.1:PORT; tests start it in a thread (`serve`)."""

from __future__ import annotations

import email.utils
import re
import socket
import socketserver
import sys
import threading

TCHAR = rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]"
REQUEST_LINE = re.compile(rb"(" + TCHAR + rb"+) (\S+) HTTP/(\d)\.(\d)")
FIELD_LINE = re.compile(rb"(" + TCHAR + rb"+):[ \t]*((?:[\x21-\x7e\x80-\xff]+(?:[ \t]+[\x21-\x7e\x80-\xff]+)*)?)[ \t]*")
ORIGIN_FORM = re.compile(
    rb"/(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/]|%[0-9A-Fa-f]{2})*(?:\?(?:[A-Za-z0-9\-._~!$&'()*+,;="
    rb":@/?]|%[0-9A-Fa-f]{2})*)?"
)
ABSOLUTE_FORM = re.compile(rb"http://([A-Za-z0-9\-._~]+(?::\d*)?)(/.*)?")
HOST_VALUE = re.compile(rb"(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})*(?::\d*)?|\[[0-9A-Fa-f:.]+\](?::\d*)?")
CHUNK_LINE = re.compile(
    rb"([0-9A-Fa-f]{1,16})((?:[ \t]*;[ \t]*" + TCHAR + rb"+(?:[ \t]*=[ \t]*(?:" + TCHAR + rb'+|"[^"\\\r\n]*"))?)*)'
)
METHODS = {b"GET", b"HEAD", b"POST", b"PUT", b"DELETE", b"OPTIONS", b"TRACE", b"CONNECT", b"PATCH"}
MAX_HEAD = 65_536
MAX_FIELDS = 100  # more header lines than this: 431
MAX_BODY = 1 << 20
# the mistakes this server can be told to make, each what real parsers have been found doing
FAULTS = {
    "host-optional": "an HTTP/1.1 request without Host is answered",
    "cl-wins-over-te": "with both Transfer-Encoding: chunked and Content-Length, Content-Length frames the body",
    "lenient-chunk-size": "a chunk size is read as Python's int(x, 16) reads it (spaces, 0x)",
    "plus-content-length": "Content-Length: +5 is 5",
    "ignores-connection-close": "Connection: close is not honoured",
    "empty-field-name": "a header line with an empty name is skipped",
    "http2-as-http11": "an HTTP/2.0 request-line is read as HTTP/1.1",
    "no-date": "responses carry no Date",
    "head-with-body": "a HEAD response carries GET's content",
    "get-body-ignored": "a GET's Content-Length body is not read (CL.0)",
}


class Reject(Exception):
    """Answer `status` and close the connection."""

    def __init__(self, status: int):
        super().__init__(status)
        self.status = status


class Wait(Exception):
    """The request is not all here yet."""


class Connection:
    def __init__(self, sock: socket.socket, faults: frozenset[str]):
        self.sock, self.faults, self.buffer = sock, faults, b""

    def more(self) -> None:
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionError
        self.buffer += data

    def serve(self) -> None:
        while True:
            try:
                keep = self.one_request()
            except Reject as reject:  # status 0: closed without an answer (lenient_http11.py's Silent)
                if reject.status:
                    self.answer(reject.status, b"%d" % reject.status, close=True)
                return
            if not keep:
                return

    def one_request(self) -> bool:
        """One request read and answered; whether the connection stays open."""
        while True:
            self.buffer = self.buffer.lstrip(b"\r\n") if re.match(rb"(\r?\n)+", self.buffer) else self.buffer
            end = self.buffer.find(b"\r\n\r\n")
            check_prefix(self.buffer if end < 0 else self.buffer[: end + 2])
            if end >= 0:
                break
            self.more()
        head, self.buffer = self.buffer[:end], self.buffer[end + 4 :]
        method, target, minor, fields = self.parse_head(head)
        if method == b"GET" and "get-body-ignored" in self.faults:
            fields.pop(b"content-length", None)
        body_length = self.read_body(fields, minor)
        close = minor == 0 and b"keep-alive" not in fields.get(b"connection", [b""])[0].lower()
        if b"close" in fields.get(b"connection", [b""])[0].lower() and "ignores-connection-close" not in self.faults:
            close = True
        close = close or body_length == "close"
        status, body, kind = route(method, target)
        self.answer(status, body, close=close, keep_alive=minor == 0 and not close, head=method == b"HEAD", kind=kind)
        return not close

    def parse_head(self, head: bytes) -> tuple[bytes, bytes, int, dict[bytes, list[bytes]]]:
        line, *lines = head.split(b"\r\n")
        found = REQUEST_LINE.fullmatch(line)
        if not found:
            raise Reject(400)
        method, target, major, minor = found.groups()
        if major != b"1" and not (major == b"2" and "http2-as-http11" in self.faults):
            raise Reject(505)
        fields: dict[bytes, list[bytes]] = {}
        if len(lines) > MAX_FIELDS:
            raise Reject(431)
        for text in lines:
            if text.startswith(b":") and "empty-field-name" in self.faults:
                continue
            field = FIELD_LINE.fullmatch(text)
            if not field:
                raise Reject(400)
            fields.setdefault(field.group(1).lower(), []).append(field.group(2))
        if method not in METHODS:
            raise Reject(501)
        return (
            method,
            check_target(method, target, fields, int(minor) if major == b"1" else 1, self.faults),
            int(minor) if major == b"1" else 1,
            fields,
        )

    def read_body(self, fields: dict[bytes, list[bytes]], minor: int) -> int | str:
        codings = fields.get(b"transfer-encoding")
        lengths = fields.get(b"content-length")
        if lengths and codings == [b"chunked"] and "cl-wins-over-te" in self.faults:
            codings = None
        if codings:
            names = [c.strip().lower() for c in b",".join(codings).split(b",") if c.strip()]
            if not names or names[-1] != b"chunked" or names.count(b"chunked") > 1:
                raise Reject(400)
            self.read_chunked()
            return "close" if lengths or minor == 0 else 0
        if lengths:
            length = content_length(lengths, self.faults)
            while len(self.buffer) < length:
                self.more()
            self.buffer = self.buffer[length:]
            return length
        return 0

    def read_chunked(self) -> None:
        while True:
            size = self.chunk_size()
            while len(self.buffer) < size + 2:
                self.more()
            if self.buffer[size : size + 2] != b"\r\n":
                raise Reject(400)
            self.buffer = self.buffer[size + 2 :]
            if size == 0:
                return

    def chunk_size(self) -> int:
        while b"\n" not in self.buffer:
            self.more()
        line, self.buffer = self.buffer.split(b"\n", 1)
        if not line.endswith(b"\r"):
            raise Reject(400)
        if "lenient-chunk-size" in self.faults:
            try:
                size = int(line[:-1].split(b";")[0], 16)
            except ValueError:
                raise Reject(400) from None
        else:
            found = CHUNK_LINE.fullmatch(line[:-1])
            if not found:
                raise Reject(400)
            size = int(found.group(1), 16)
        if size > MAX_BODY:
            raise Reject(413)
        if size == 0:  # the trailer section, then the end of the body (the caller reads its CRLF)
            while not self.buffer.startswith(b"\r\n"):
                while b"\r\n" not in self.buffer:
                    self.more()
                trailer, self.buffer = self.buffer.split(b"\r\n", 1)
                if not FIELD_LINE.fullmatch(trailer):
                    raise Reject(400)
        return size

    def answer(
        self,
        status: int,
        body: bytes,
        close: bool,
        keep_alive: bool = False,
        head: bool = False,
        kind: bytes = b"text/plain",
    ) -> None:
        lines = [
            b"HTTP/1.1 %d %s" % (status, REASONS.get(status, b"Status")),
            *([] if "no-date" in self.faults else [b"Date: " + email.utils.formatdate(usegmt=True).encode()]),
            b"Content-Length: %d" % len(body),
            b"Content-Type: " + kind,
        ]
        lines += [b"Allow: GET, HEAD"] if status == 405 else []
        lines += [b"Connection: close"] if close else [b"Connection: keep-alive"] if keep_alive else []
        self.sock.sendall(
            b"\r\n".join(lines) + b"\r\n\r\n" + (b"" if head and "head-with-body" not in self.faults else body)
        )
        if close:
            self.sock.shutdown(socket.SHUT_WR)


REASONS = {
    200: b"OK",
    400: b"Bad Request",
    404: b"Not Found",
    405: b"Method Not Allowed",
    413: b"Content Too Large",
    414: b"URI Too Long",
    417: b"Expectation Failed",
    431: b"Request Header Fields Too Large",
    501: b"Not Implemented",
    505: b"HTTP Version Not Supported",
}


def check_prefix(head: bytes) -> None:
    """What is wrong with a request's head before all of it is here: a bare CR or LF, a method of non-token
    bytes, a request-line or head too long."""
    if re.search(rb"\r(?!\n)|(?<!\r)\n", head[:-1] if head.endswith(b"\r") else head):
        raise Reject(400)
    method = head.split(b" ", 1)[0].split(b"\r", 1)[0]
    if method and not re.fullmatch(TCHAR + rb"+", method):
        raise Reject(400)
    line_end = head.find(b"\r\n")
    if (line_end < 0 and len(head) > MAX_HEAD) or line_end > MAX_HEAD:
        raise Reject(414)
    if len(head) > MAX_HEAD:
        raise Reject(431)


def check_target(
    method: bytes, target: bytes, fields: dict[bytes, list[bytes]], minor: int, faults: frozenset[str]
) -> bytes:
    """The target's path, once the target and Host are seen to be valid together."""
    hosts = fields.get(b"host", [])
    if len(hosts) > 1 or (minor >= 1 and not hosts and "host-optional" not in faults):
        raise Reject(400)
    if hosts and not HOST_VALUE.fullmatch(hosts[0]):
        raise Reject(400)
    if b"expect" in fields and fields[b"expect"][0].lower() != b"100-continue":
        raise Reject(417)
    if target == b"*" and method == b"OPTIONS":
        return target
    absolute = ABSOLUTE_FORM.fullmatch(target)
    if absolute:
        return absolute.group(2) or b"/"
    if not ORIGIN_FORM.fullmatch(target):
        raise Reject(400)
    return target


def content_length(values: list[bytes], faults: frozenset[str]) -> int:
    """The body's length from every Content-Length line; a list, a repeat, or anything but digits is refused."""
    items = [v.strip() for value in values for v in value.split(b",")]
    if "plus-content-length" in faults:
        items = [v[1:] if v.startswith(b"+") else v for v in items]
    if len(items) != 1 or not re.fullmatch(rb"\d+", items[0]):
        raise Reject(400)
    if len(items[0]) > 12 or int(items[0]) > MAX_BODY:
        raise Reject(413)
    return int(items[0])


ROUTES = {
    b"/hello": (b"Hello World", b"text/plain; charset=utf-8"),
    b"/backend": (b"<h1>Say hello to akka-http</h1>", b"text/html; charset=utf-8"),
    b"/v1/tweets": (b'[{"id":1000000,"author":"author1","content":"Hello, World!"}]', b"application/json"),
    b"/id": (b"strict", b"text/plain"),  # its name, for the harness's start check
}


def route(method: bytes, target: bytes) -> tuple[int, bytes, bytes]:
    """CONTRACT.md's routes that the probe asks for: status, body, Content-Type. GET, HEAD and POST are served (POST
    /hello is the framing cases' request); another method on a route is 405 (with Allow), OPTIONS * is 200."""
    path = target.split(b"?")[0]
    if target == b"*":
        return 200, b"", b"text/plain"
    if path not in ROUTES:
        return 404, b"404", b"text/plain"
    if method not in (b"GET", b"HEAD", b"POST"):
        return 405, b"405", b"text/plain"
    return 200, *ROUTES[path]


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128
    faults: frozenset[str] = frozenset()


class Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        try:
            Connection(self.request, self.server.faults).serve()  # type: ignore[attr-defined]
        except (ConnectionError, OSError):
            pass


def serve(faults: frozenset[str] = frozenset(), port: int = 0) -> Server:
    """A server on 127.0.0.1 (`port` 0: any free one) with `faults`, serving in a thread; `.shutdown()` stops it."""
    unknown = faults - FAULTS.keys()
    if unknown:
        raise ValueError(f"unknown faults {sorted(unknown)}; known: {sorted(FAULTS)}")
    server = Server(("127.0.0.1", port), Handler)
    server.faults = faults
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


if __name__ == "__main__":
    serve(frozenset(sys.argv[2:]), int(sys.argv[1]))
    threading.Event().wait()
