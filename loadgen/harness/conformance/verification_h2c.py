"""The HTTP/2 side of CONTRACT.md: checks a running server over one cleartext HTTP/2 connection (h2c, prior knowledge,
as h2load speaks it), walking the contract's table (contract_table.py) as the HTTP/1.1 check does (bodies byte for
byte, status codes, content types, `date` and `server` headers, 404, 400 on bad params, the tweet counter, each
/weather request reaching the upstream), then that several requests in flight at once on that connection are each
answered with their own body. Every read has a deadline: a silent server fails the check, it never hangs it."""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field
from functools import partial
from typing import cast

import h2.config
import h2.connection
import h2.events
import h2.exceptions

from harness.conformance.contract_table import (
    TWEETS,
    Expected,
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
from harness.conformance.verification import send_garbage

READ_TIMEOUT_S = 5.0  # for each read, and for each exchange as a whole
IN_FLIGHT = 10  # requests sent at once on the connection before any answer is read


class H2Error(Exception):
    """The exchange went wrong at the HTTP/2 level (closed connection, GOAWAY, a reset stream, no answer in time)."""


@dataclass
class H2Response:
    stream_id: int
    status: int | None = None
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    ended: bool = False
    reset: int | None = None  # RST_STREAM error code

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k == name), None)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


class H2Client:
    """One h2c connection (prior knowledge): `get` sends requests together, then reads until all are answered."""

    def __init__(self, host: str, port: int, timeout: float | None = None):
        self.host, self.port, self.timeout = host, port, timeout or READ_TIMEOUT_S
        self.sock = socket.create_connection((host, port), timeout=self.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        self.conn.initiate_connection()
        self.sock.sendall(self.conn.data_to_send())
        self.first = b""  # the server's first bytes: "HTTP/1.1 400 ..." from a server that speaks no h2c

    def close(self) -> None:
        try:
            self.conn.close_connection()
            self.sock.sendall(self.conn.data_to_send())
        except (OSError, h2.exceptions.H2Error):
            pass
        self.sock.close()

    def __enter__(self) -> H2Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def max_streams(self) -> int:
        return self.conn.remote_settings.max_concurrent_streams

    def get(self, paths: list[str]) -> list[H2Response]:
        """GET each path on its own stream, all sent before any answer is read; the answers in the paths' order."""
        responses: dict[int, H2Response] = {}
        for path in paths:
            stream_id = self.conn.get_next_available_stream_id()
            self.conn.send_headers(
                stream_id,
                [
                    (":method", "GET"),
                    (":path", path),
                    (":scheme", "http"),
                    (":authority", f"{self.host}:{self.port}"),
                    ("user-agent", "polyglot-bench-contract"),
                ],
                end_stream=True,
            )
            responses[stream_id] = H2Response(stream_id)
        self.sock.sendall(self.conn.data_to_send())
        deadline = time.monotonic() + self.timeout
        while not all(r.ended or r.reset is not None for r in responses.values()):
            left = deadline - time.monotonic()
            if left <= 0:
                self._not_h2c()
                waiting = [p for p, r in zip(paths, responses.values()) if not (r.ended or r.reset is not None)]
                raise H2Error(f"no complete answer within {self.timeout:g} s for {', '.join(waiting)}")
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                continue  # the loop reports it
            except ConnectionResetError:
                self._not_h2c()  # an HTTP/1.1 server's 400, then a reset for the request frames it never read
                raise
            if not data:
                self._not_h2c()
                raise H2Error("the server closed the connection before answering")
            if len(self.first) < 64:
                self.first += data[:64]
            try:
                events = self.conn.receive_data(data)
            except h2.exceptions.ProtocolError as exc:
                self._not_h2c()
                raise H2Error(f"HTTP/2 protocol error from the server: {exc or type(exc).__name__}") from exc
            for event in events:
                self._on(event, responses)
            pending = self.conn.data_to_send()
            if pending:
                self.sock.sendall(pending)
        return list(responses.values())

    def _not_h2c(self) -> None:
        """An HTTP/2 server's first frame is SETTINGS on stream 0; anything else (an HTTP/1.1 400...) is named."""
        if self.first and not (len(self.first) >= 9 and self.first[3] == 4 and self.first[5:9] == bytes(4)):
            line = self.first.split(b"\n", 1)[0].strip().decode("latin-1")
            raise H2Error(f"the server does not speak h2c with prior knowledge: it answered {line[:60]!r}")

    def _on(self, event: h2.events.Event, responses: dict[int, H2Response]) -> None:
        r = responses.get(getattr(event, "stream_id", 0))  # stream 0: the connection's, never a request's
        if isinstance(event, h2.events.ResponseReceived) and r:
            headers = cast(list[tuple[str, str]], event.headers)  # str: the connection decodes them (header_encoding)
            r.headers = [(k.lower(), v) for k, v in headers if not k.startswith(":")]
            r.status = int(dict(headers)[":status"])
        elif isinstance(event, h2.events.DataReceived):
            if r:
                r.body += event.data
            self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, h2.events.StreamEnded) and r:
            r.ended = True
        elif isinstance(event, h2.events.StreamReset) and r:
            r.reset = int(event.error_code)
        elif isinstance(event, h2.events.ConnectionTerminated):
            detail = f", {event.additional_data!r}" if event.additional_data else ""
            raise H2Error(
                f"the server ended the connection (GOAWAY {event.error_code!s}, last stream "
                f"{event.last_stream_id}{detail})"
            )


class H2Checker:
    def __init__(self, name: str, host: str, port: int, steps: list[Step], upstream_count: UpstreamCount | None):
        self.name, self.host, self.port, self.steps = name, host, port, steps
        self.upstream_count = upstream_count
        self.report = Report(name)
        self.client: H2Client | None = None
        self.connections = 0

    def get(self, paths: list[str]) -> list[H2Response | None]:
        """Answers on the one connection; a broken one is reported (once per exchange) and the next exchange opens
        a new one, so one fault does not hide the others."""
        try:
            if self.client is None:
                self.client = H2Client(self.host, self.port)
                self.connections += 1
            return list(self.client.get(paths))
        except (OSError, H2Error, h2.exceptions.H2Error) as exc:
            self.report.expect(False, f"GET {', '.join(paths)} over h2c: {exc or type(exc).__name__}")
            if self.client is not None:
                self.client.close()
                self.client = None
            return [None] * len(paths)

    def check_response(self, step: Step) -> H2Response | None:
        path = step.path
        r = self.get([path])[0]
        if r is None:
            return None
        expect = self.report.expect
        if not expect(r.reset is None, f"GET {path}: stream {r.stream_id} reset by the server (error code {r.reset})"):
            return None
        expect_answer(self.report, path, r, step.expected, ("content-type", "date", "server"))
        if r.header("content-length") is not None:  # optional in HTTP/2, but right when given
            expect(
                r.header("content-length") == str(len(r.body)),
                f"GET {path}: content-length {r.header('content-length')} differs from the body ({len(r.body)} bytes)",
            )
        return r

    def run(self) -> Report:
        try:
            for step in self.steps:
                if step.kind is Kind.COUNTER:
                    self.check_tweets(step)
                elif step.kind is Kind.UPSTREAM:
                    if self.upstream_count is not None:
                        expect_upstream_fetches(
                            self.report, step, self.upstream_count, partial(self.check_response, step)
                        )
                else:
                    self.check_response(step)
                if step.path == "/id" and self.client is None:
                    return (
                        self.report
                    )  # the first exchange failed (no h2c at all): one line says why, not one per route
            self.check_in_flight(fixed_answers(self.steps))
            self.check_survives_garbage()
            self.report.expect(
                self.connections == 1,
                f"the checks needed {self.connections} h2c connections, not one (the server broke the connection)",
            )
        finally:
            if self.client is not None:
                self.client.close()
        return self.report

    def check_tweets(self, step: Step) -> None:
        """Two requests on the connection: the tweet id grows."""
        ids = []
        for _ in range(2):
            found = tweet_id(self.report, self.check_response(step))
            if found is None:
                return
            ids.append(found)
        expect_tweet_ids(self.report, ids)

    def check_in_flight(self, fixed: dict[str, Expected]) -> None:
        """IN_FLIGHT requests to different routes, all sent before any answer is read, each answered on its own stream
        with its own body (tweets: each with its own id)."""
        paths: list[str] = [
            p
            for p in (
                "/id",
                "/hello",
                "/backend",
                "/fibonacci?param=10",
                "/factorial?param=20",
                "/fibonacci?param=1",
                "/factorial?param=100",
                "/weather/Paris",
            )
            if p in fixed
        ]
        if any(s.kind is Kind.COUNTER for s in self.steps):
            paths[1:1] = ["/v1/tweets"]
            paths.append("/v1/tweets")
        paths = [paths[i % len(paths)] for i in range(IN_FLIGHT)]
        limit = self.client.max_streams() if self.client else IN_FLIGHT
        if not self.report.expect(
            limit >= IN_FLIGHT, f"h2c: the server allows {limit} concurrent streams, fewer than {IN_FLIGHT}"
        ):
            paths = paths[: max(limit, 1)]
        responses = self.get(paths)
        what = f"{len(paths)} streams in flight at once"
        wrong: list[str] = []
        tweet_ids: list[int] = []
        for path, r in zip(paths, responses):
            if r is None:
                return  # the exchange failed as a whole: reported
            if r.reset is not None or r.status is None:
                wrong.append(f"{path} (stream {r.stream_id}) reset with error code {r.reset}")
            elif path == "/v1/tweets":
                found = TWEETS.match(r.text)
                if found:
                    tweet_ids.append(int(found.group(1)))
                else:
                    wrong.append(f"{path} (stream {r.stream_id}) answered {r.text[:60]!r}")
            elif r.status != fixed[path].status or r.text != fixed[path].body:
                wrong.append(
                    f"{path} (stream {r.stream_id}) answered {r.status} {r.text[:60]!r}, "
                    f"expected {(fixed[path].body or '')[:60]!r}"
                )
        self.report.expect(not wrong, f"{what}: " + "; ".join(wrong))
        if len(tweet_ids) > 1:
            self.report.expect(
                len(set(tweet_ids)) == len(tweet_ids), f"{what}: /v1/tweets streams got the same id {tweet_ids}"
            )

    def check_survives_garbage(self) -> None:
        """Connections with a broken preface or a garbage frame may be refused or closed; the server keeps serving."""
        preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
        send_garbage(
            self.host,
            self.port,
            (
                b"GARBAGE\r\n\r\n",
                preface + b"\x00\x00\x04\xff\xff\xff\xff\xff\xff" + b"\x00" * 4,
                preface + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00" + b"\x00\xff" * 64,
            ),
        )
        r = self.get(["/id"])[0]
        self.report.expect(
            r is not None and r.status == 200, "after garbage connections the server no longer answers /id"
        )


def check_h2(
    name: str,
    host: str,
    port: int,
    routes: tuple[str, ...],
    upstream_document: bytes | None = None,
    upstream_count: UpstreamCount | None = None,
) -> Report:
    """The contract over h2c: a Report whose failures are one readable line each. `upstream_count` as in
    verification.verify."""
    steps = contract_table(name, routes, upstream_document, upstream_counted=upstream_count is not None)
    return H2Checker(name, host, port, steps, upstream_count).run()
