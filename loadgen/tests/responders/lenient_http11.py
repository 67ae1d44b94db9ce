"""A lenient but conforming HTTP/1.1 origin server for the probe's own test (tests/test_probe.py): wherever the RFC
leaves a choice, it takes the other side from strict_http11.py. It takes a single LF as a line end, replaces a
bare CR or a NUL in a field value with SP, unfolds obs-fold, skips a whitespace-preceded first field line, parses
the request-line on whitespace and recovers a malformed version, skips a field line whose name is invalid (but
not whitespace before a colon: that MUST be a 400), keeps other control bytes in values, ignores an unknown
expectation, answers 421 for an absolute-form target or a Host it does not serve, 405 (with Allow) for a method it
does not serve, 411 to any request with Transfer-Encoding: chunked, accepts a repeated Content-Length that agrees,
closes silently where the RFC prefers a 400 it does not require, closes a pipeline after its first answer, and does
not say `Connection: close` back. Where the RFC says MUST, it does what strict_http11.py does.

A probe case that fails this server fails an answer the RFC permits: the test asserts there is none."""

from __future__ import annotations

import re
import socketserver
import threading

import strict_http11 as strict
from strict_http11 import ROUTES, TCHAR, Reject, check_target

LINE_END = re.compile(rb"\r?\n")
HEAD_END = re.compile(rb"\r?\n\r?\n")
WORDS = re.compile(rb"[ \t\x0b\x0c\r]+")
VERSION = re.compile(rb"HTTP/0*(\d)(?:\.0*(\d+))?", re.IGNORECASE)
NAME = re.compile(TCHAR + rb"+")
MAX_HEAD = 262_144


class Silent(Reject):
    """Close the connection without an answer."""

    def __init__(self) -> None:
        super().__init__(0)


class Lenient(strict.Connection):
    def one_request(self) -> bool:
        while True:
            self.buffer = re.sub(rb"^(?:\r?\n)+", b"", self.buffer)
            end = HEAD_END.search(self.buffer)
            if end:
                break
            if len(self.buffer) > MAX_HEAD:
                raise Reject(431)
            self.more()
        head, self.buffer = self.buffer[: end.start()], self.buffer[end.end() :]
        method, target, minor, fields = self.lenient_head(head)
        if self.read_body_or_refuse(fields):
            self.answer(411, b"411", close=True)
            return False
        connection = fields.get(b"connection", [b""])[0].lower()
        close = b"close" in connection or minor == 0 or len(HEAD_END.findall(self.buffer)) >= 2
        status, body, kind = self.lenient_route(method, target, minor, fields)
        self.answer(status, body, close=False, head=method == b"HEAD", kind=kind)  # no `close` said back
        if close:
            self.sock.shutdown(strict.socket.SHUT_WR)
        return not close

    def lenient_head(self, head: bytes) -> tuple[bytes, bytes, int, dict[bytes, list[bytes]]]:
        line, *lines = LINE_END.split(head)
        words = WORDS.split(line.replace(b"\r", b" ").strip())
        if len(words) != 3 or not NAME.fullmatch(words[0]):
            raise Silent
        method, target, version = words
        found = VERSION.fullmatch(version)
        if not found or found.group(1) == b"0":
            raise Silent
        minor = 1 if found.group(1) != b"1" else int(found.group(2) or b"0")
        return method, target, min(minor, 1), self.lenient_fields(lines)

    def lenient_fields(self, lines: list[bytes]) -> dict[bytes, list[bytes]]:
        while lines and lines[0][:1] in (b" ", b"\t"):  # whitespace-preceded first lines: consumed unread
            lines.pop(0)
        unfolded: list[bytes] = []
        for text in lines:
            if text[:1] in (b" ", b"\t") and unfolded:
                unfolded[-1] += b" " + text.strip(b" \t")
            else:
                unfolded.append(text)
        if len(unfolded) > 2000:
            raise Reject(431)
        fields: dict[bytes, list[bytes]] = {}
        for text in unfolded:
            name, colon, value = text.partition(b":")
            if colon and name[-1:] in (b" ", b"\t"):
                raise Reject(400)  # RFC 9112 §5.1: a MUST
            if not colon or not NAME.fullmatch(name):
                continue  # an invalid field line skipped (RFC 9110 §2.4)
            value = value.replace(b"\r", b" ").replace(b"\x00", b" ").strip(b" \t")
            fields.setdefault(name.lower(), []).append(value)
        return fields

    def read_body_or_refuse(self, fields: dict[bytes, list[bytes]]) -> bool:
        """The body read; True when the request is refused with 411 (it has Transfer-Encoding: chunked)."""
        codings = fields.get(b"transfer-encoding")
        if codings:
            names = [c.strip(b" \t").lower() for c in b",".join(codings).split(b",") if c.strip(b" \t")]
            if not names or names[-1] != b"chunked":
                raise Reject(501 if names and names[-1] in (b"gzip", b"identity") else 400)
            return True
        lengths = fields.get(b"content-length")
        if lengths:
            items = {v.strip() for value in lengths for v in value.split(b",")}
            if len(items) != 1 or not re.fullmatch(rb"\d+", next(iter(items))):
                raise Reject(400)
            length = int(next(iter(items)))
            while len(self.buffer) < length:
                self.more()  # a length larger than anything sent: wait for it
            self.buffer = self.buffer[length:]
        return False

    def lenient_route(
        self, method: bytes, target: bytes, minor: int, fields: dict[bytes, list[bytes]]
    ) -> tuple[int, bytes, bytes]:
        fields.pop(b"expect", None)
        if target == b"*":
            return (200, b"", b"text/plain") if method == b"OPTIONS" else self.refuse_silently()
        absolute = target.lower().startswith(b"http://")
        if not absolute and not target.startswith(b"/"):
            self.refuse_silently()
        check_target(method, target if absolute else b"/", fields, minor, frozenset())  # Host's MUSTs
        host = fields.get(b"host", [None])[0]
        if absolute or host == b"" or (host and b":" in host):  # it serves `probe` on its own port only
            return 421, b"421", b"text/plain"
        path = target.split(b"#")[0].split(b"?")[0]
        if path not in ROUTES:
            return 404, b"404", b"text/plain"
        return (200, *ROUTES[path]) if method in (b"GET", b"HEAD", b"POST") else (405, b"405", b"text/plain")

    def refuse_silently(self) -> tuple[int, bytes, bytes]:
        raise Silent


class Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        try:
            Lenient(self.request, frozenset()).serve()
        except (ConnectionError, OSError):
            pass


def serve(port: int = 0) -> strict.Server:
    """The lenient server on 127.0.0.1 (`port` 0: any free one), serving in a thread; `.shutdown()` stops it."""
    server = strict.Server(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
