"""`ping`: checks a running server against CONTRACT.md, byte for byte. A server that fails is not benchmarked."""
from __future__ import annotations

import math
import re
import socket
import sys
from dataclasses import dataclass, field

from harness.basics import interrupt
from harness.basics.httpclient import Connection, HttpError, Response, request_bytes

HELLO = "Hello World"
BACKEND = "<h1>Say hello to akka-http</h1>"
WEATHER = '{"code":500,"temp":14}'
TWEETS = re.compile(r'^\[\{"id":(\d+),"author":"author1","content":"Hello, World!"\}\]$')
FIBONACCI = {0: 1, 1: 1, 10: 89, 25: 121393}
FACTORIAL_PARAMS = (0, 1, 20, 100, 5000)
sys.set_int_max_str_digits(0)  # 5000! has 16326 digits
BAD_PARAMS = {"factorial": ("", "abc", "1.5", "-1", "5001"), "fibonacci": ("", "abc", "-1", "46")}


@dataclass
class Report:
    server: str
    failures: list[str] = field(default_factory=list)
    checks: int = 0

    @property
    def ok(self) -> bool:
        return not self.failures

    def expect(self, condition: bool, what: str) -> bool:
        self.checks += 1
        if not condition:
            self.failures.append(what)
        return condition


def media_type(value: str | None) -> tuple[str, str | None]:
    """'text/plain; charset=UTF-8' -> ('text/plain', 'utf-8')"""
    if not value:
        return "", None
    parts = [p.strip() for p in value.split(";")]
    charset = next((p.split("=", 1)[1].strip().strip('"').lower() for p in parts[1:] if p.lower().startswith("charset=")), None)
    return parts[0].lower(), charset


def send_garbage(host: str, port: int, garbage: tuple[bytes, ...]) -> None:
    """Each piece of garbage on a connection of its own, what comes back read and dropped: a server may answer 4xx or
    close, as long as it keeps serving (the caller checks that)."""
    for piece in garbage:
        try:
            with socket.create_connection((host, port), timeout=1) as sock:
                sock.sendall(piece)
                try:
                    sock.recv(4096)
                except OSError:
                    pass
        except OSError:
            pass


@dataclass(frozen=True)
class Expected:
    """What the contract expects of one answer: its status, and where it names them its body, media type and
    charset."""

    status: int
    body: str | None = None
    mtype: str | None = None
    charset: str | None = None


def expect_answer(report: Report, path: str, r, expected: Expected,
                  names: tuple[str, str, str] = ("Content-Type", "Date", "Server")) -> None:
    """The checks every answer gets, whatever its protocol: status, body, media type (and charset where the contract
    names one), a date and a server header. `r` has .status, .text and .header(name); `names`: the headers as the
    protocol writes them, for the messages (HTTP/2: lower case)."""
    content_type, date, server = names
    status, body, mtype, charset = expected.status, expected.body, expected.mtype, expected.charset
    report.expect(r.status == status, f"GET {path}: status {r.status}, expected {status}")
    if body is not None:
        report.expect(r.text == body, f"GET {path}: body {r.text[:80]!r}, expected {body[:80]!r}")
    if mtype is not None:
        got_type, got_charset = media_type(r.header("content-type"))
        report.expect(got_type == mtype, f"GET {path}: {content_type} {r.header('content-type')!r}, expected {mtype}")
        if charset:
            report.expect(got_charset == charset,
                          f"GET {path}: {content_type} {r.header('content-type')!r} lacks charset={charset}")
    report.expect(r.header("date") is not None, f"GET {path}: no {date} header")
    report.expect(r.header("server") is not None, f"GET {path}: no {server} header")


class Checker:
    def __init__(self, name: str, host: str, port: int, routes: tuple[str, ...], upstream_document: bytes | None = None):
        self.name, self.host, self.port, self.routes = name, host, port, routes
        self.upstream_document = upstream_document
        self.report = Report(name)

    def get(self, path: str) -> Response | None:
        interrupt.check()  # a verification is many requests: a lost Ctrl-C ends it between two
        try:
            with Connection(self.host, self.port) as conn:
                conn.send(request_bytes(path))
                return conn.read_response()
        except (OSError, HttpError) as exc:
            self.report.expect(False, f"GET {path}: {exc}")
            return None

    def check_response(self, path: str, status: int, body: str | None = None, mtype: str | None = None,
                       charset: str | None = None, response: Response | None = None) -> Response | None:
        r = response or self.get(path)
        if r is None:
            return None
        expect = self.report.expect
        expect_answer(self.report, path, r, Expected(status, body, mtype, charset))
        framed = r.header("content-length") is not None or "chunked" in (r.header("transfer-encoding") or "")
        expect(framed, f"GET {path}: neither Content-Length nor chunked encoding")
        if r.header("content-length") is not None:
            expect(int(r.header("content-length")) == len(r.body), f"GET {path}: Content-Length differs from the body")
        return r

    def run(self) -> Report:
        self.check_response("/id", 200, self.name, "text/plain")
        self.check_response("/no-such-route", 404)
        if "hello" in self.routes:
            self.check_response("/hello", 200, HELLO, "text/plain", "utf-8")
        if "backend" in self.routes:
            self.check_response("/backend", 200, BACKEND, "text/html", "utf-8")
        if "weather.json" in self.routes and self.upstream_document is not None:
            r = self.check_response("/weather.json", 200, None, "application/json")
            if r:
                self.report.expect(r.body == self.upstream_document, "GET /weather.json: not the seed document")
        if "tweets" in self.routes:
            self.check_tweets()
        if "factorial" in self.routes:
            for n in FACTORIAL_PARAMS:
                self.check_response(f"/factorial?param={n}", 200, str(math.factorial(n)), "text/plain")
        if "fibonacci" in self.routes:
            for n, value in FIBONACCI.items():
                self.check_response(f"/fibonacci?param={n}", 200, str(value), "text/plain")
        for route, params in BAD_PARAMS.items():
            if route in self.routes:
                self.check_response(f"/{route}", 400)
                for p in params:
                    self.check_response(f"/{route}?param={p}", 400)
        if "weather" in self.routes:
            self.check_response("/weather/Montpellier", 200, WEATHER, "application/json")
            self.check_response("/weather/Paris", 200, WEATHER, "application/json")
        self.check_http10()
        self.check_pipelining()
        self.check_survives_garbage()
        return self.report

    def check_tweets(self) -> None:
        try:
            with Connection(self.host, self.port) as conn:
                ids = []
                for _ in range(2):
                    conn.send(request_bytes("/v1/tweets"))
                    r = self.check_response("/v1/tweets", 200, None, "application/json", response=conn.read_response())
                    found = TWEETS.match(r.text) if r else None
                    if not self.report.expect(found is not None, f"GET /v1/tweets: body {r.text[:100] if r else ''!r} is not the compact tweet list"):
                        return
                    ids.append(int(found.group(1)))
        except (OSError, HttpError) as exc:
            self.report.expect(False, f"GET /v1/tweets twice on one connection: {exc}")
            return
        self.report.expect(ids[0] >= 1_000_000, f"GET /v1/tweets: id {ids[0]} below the counter's start 1000000")
        self.report.expect(ids[1] > ids[0], f"GET /v1/tweets: id did not grow on the next request ({ids[0]} then {ids[1]})")

    def check_http10(self) -> None:
        expect = self.report.expect
        try:
            with Connection(self.host, self.port) as conn:
                conn.send(request_bytes("/id", "HTTP/1.0"))
                r = conn.read_response()
                expect(r.status == 200 and r.text == self.name, f"HTTP/1.0 GET /id: {r.status} {r.text[:40]!r}")
                expect(conn.closed_by_server(), "HTTP/1.0 without keep-alive: the server kept the connection open")
            with Connection(self.host, self.port) as conn:
                for attempt in range(2):
                    conn.send(request_bytes("/id", "HTTP/1.0", {"Connection": "keep-alive"}))
                    r = conn.read_response()
                    expect(r.status == 200 and r.text == self.name, f"HTTP/1.0 keep-alive GET /id #{attempt + 1}: {r.status}")
                    expect("keep-alive" in (r.header("connection") or "").lower(),
                           "HTTP/1.0 with Connection: keep-alive: the response lacks Connection: keep-alive")
        except (OSError, HttpError) as exc:
            expect(False, f"HTTP/1.0: {exc}")

    def check_pipelining(self) -> None:
        paths = [p for p, route in (("/id", "id"), ("/hello", "hello"), ("/backend", "backend"), ("/id", "id")) if route in self.routes]
        expected = {"/id": self.name, "/hello": HELLO, "/backend": BACKEND}
        try:
            with Connection(self.host, self.port) as conn:
                conn.send(b"".join(request_bytes(p) for p in paths))
                bodies = [conn.read_response().text for _ in paths]
        except (OSError, HttpError) as exc:
            self.report.expect(False, f"pipelining {paths}: {exc}")
            return
        self.report.expect(bodies == [expected[p] for p in paths], f"pipelining {paths}: answered {bodies}")

    def check_survives_garbage(self) -> None:
        """A garbage request may get a 4xx/5xx or a closed connection; the server must keep serving."""
        send_garbage(self.host, self.port, (b"GARBAGE\r\n\r\n", b"GET /id HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
                                            b"\x00\xff" * 64 + b"\r\n\r\n"))
        r = self.get("/id")
        self.report.expect(r is not None and r.status == 200, "after garbage requests the server no longer answers /id")


def verify(name: str, host: str, port: int, routes: tuple[str, ...], upstream_document: bytes | None = None) -> Report:
    return Checker(name, host, port, routes, upstream_document).run()

