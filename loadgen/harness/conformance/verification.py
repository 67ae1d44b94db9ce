"""`ping`: checks a running server against CONTRACT.md over HTTP/1.1, byte for byte, walking the contract's table
(contract_table.py), then what is HTTP/1.1's own: HTTP/1.0, pipelining, framing. A server that fails is not
benchmarked."""

from __future__ import annotations

import socket
from functools import partial

from harness.basics import interrupt
from harness.basics.http1 import CONTENT_LENGTH, Response
from harness.basics.httpclient import Connection, HttpError, get, request_bytes
from harness.conformance.contract_table import (
    Kind,
    Report,
    Step,
    UpstreamCount,
    contract_table,
    expect_answer,
    expect_tweet_ids,
    expect_upstream_fetches,
    fixed_answers,
    tweet_id,
)


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


class StubStatus:
    """The requests an nginx upstream has served, from its stub_status page ("server accepts handled requests" and
    the three numbers under it), less those this counter's own reads made (each read counts itself)."""

    def __init__(self, host: str, port: int, path: str):
        self.host, self.port, self.path, self.reads = host, port, path, 0

    def __call__(self) -> int:
        try:
            r = get(self.host, self.port, self.path, timeout=5.0)
        except HttpError as exc:
            raise ValueError(f"http://{self.host}:{self.port}{self.path}: {exc}") from exc
        self.reads += 1
        lines = r.text.splitlines()
        if r.status != 200 or len(lines) < 3 or len(lines[2].split()) != 3 or not lines[2].split()[2].isdigit():
            raise ValueError(
                f"http://{self.host}:{self.port}{self.path} answered {r.status} {r.text[:60]!r}, "
                "not nginx's stub_status"
            )
        return int(lines[2].split()[2]) - self.reads


class Checker:
    def __init__(self, name: str, host: str, port: int, steps: list[Step], upstream_count: UpstreamCount | None):
        self.name, self.host, self.port, self.steps = name, host, port, steps
        self.upstream_count = upstream_count
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

    def check_response(self, step: Step, response: Response | None = None) -> Response | None:
        r = response or self.get(step.path)
        if r is None:
            return None
        path, expect = step.path, self.report.expect
        expect_answer(self.report, path, r, step.expected)
        lengths = r.fields("content-length")
        framed = bool(lengths) or "chunked" in (r.header("transfer-encoding") or "")
        expect(framed, f"GET {path}: neither Content-Length nor chunked encoding")
        expect(len(lengths) <= 1, f"GET {path}: {len(lengths)} Content-Length fields, {', '.join(lengths)}")
        if len(lengths) == 1:
            length = lengths[0].strip()
            same = CONTENT_LENGTH.fullmatch(length) is not None and int(length) == len(r.body)
            expect(same, f"GET {path}: Content-Length {length[:40]!r} differs from the body ({len(r.body)} bytes)")
        return r

    def run(self) -> Report:
        for step in self.steps:
            if step.kind is Kind.COUNTER:
                self.check_tweets(step)
            elif step.kind is Kind.UPSTREAM:
                if self.upstream_count is not None:
                    expect_upstream_fetches(self.report, step, self.upstream_count, partial(self.check_response, step))
            else:
                self.check_response(step)
        self.check_http10()
        self.check_pipelining()
        self.check_survives_garbage()
        return self.report

    def check_tweets(self, step: Step) -> None:
        """Two requests on one connection: the tweet id grows."""
        try:
            with Connection(self.host, self.port) as conn:
                ids = []
                for _ in range(2):
                    conn.send(request_bytes(step.path))
                    found = tweet_id(self.report, self.check_response(step, conn.read_response()))
                    if found is None:
                        return
                    ids.append(found)
        except (OSError, HttpError) as exc:
            self.report.expect(False, f"GET {step.path} twice on one connection: {exc}")
            return
        expect_tweet_ids(self.report, ids)

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
                    expect(
                        r.status == 200 and r.text == self.name,
                        f"HTTP/1.0 keep-alive GET /id #{attempt + 1}: {r.status}",
                    )
                    expect(
                        "keep-alive" in (r.header("connection") or "").lower(),
                        "HTTP/1.0 with Connection: keep-alive: the response lacks Connection: keep-alive",
                    )
        except (OSError, HttpError) as exc:
            expect(False, f"HTTP/1.0: {exc}")

    def check_pipelining(self) -> None:
        fixed = fixed_answers(self.steps)
        paths = [p for p in ("/id", "/hello", "/backend", "/id") if p in fixed]
        try:
            with Connection(self.host, self.port) as conn:
                conn.send(b"".join(request_bytes(p) for p in paths))
                bodies = [conn.read_response().text for _ in paths]
        except (OSError, HttpError) as exc:
            self.report.expect(False, f"pipelining {paths}: {exc}")
            return
        self.report.expect(bodies == [fixed[p].body for p in paths], f"pipelining {paths}: answered {bodies}")

    def check_survives_garbage(self) -> None:
        """A garbage request may get a 4xx/5xx or a closed connection; the server must keep serving."""
        send_garbage(
            self.host,
            self.port,
            (
                b"GARBAGE\r\n\r\n",
                b"GET /id HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
                b"\x00\xff" * 64 + b"\r\n\r\n",
            ),
        )
        r = self.get("/id")
        self.report.expect(r is not None and r.status == 200, "after garbage requests the server no longer answers /id")


def verify(
    name: str,
    host: str,
    port: int,
    routes: tuple[str, ...],
    upstream_document: bytes | None = None,
    upstream_count: UpstreamCount | None = None,
) -> Report:
    """The contract over HTTP/1.1. `upstream_count`: how many requests the upstream has served (StubStatus), so that
    each /weather request is seen to reach it; None leaves that step out."""
    steps = contract_table(name, routes, upstream_document, upstream_counted=upstream_count is not None)
    return Checker(name, host, port, steps, upstream_count).run()
