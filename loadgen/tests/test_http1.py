"""The one HTTP/1 response reader (basics/http1.py), which the contract check's client (httpclient.Connection) and the
compliance probe (conformance/wire.py) share: its framing on bytes, then the client on loopback against a raw server
that sends what a test gives it."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from harness.basics.http1 import parse
from harness.basics.httpclient import Connection, HttpError, request_bytes


@pytest.mark.parametrize(
    "data, problem",
    [
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-6\r\nhello!\r\n0\r\n\r\n", "bad-framing"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n+5\r\nhello\r\n0\r\n\r\n", "bad-framing"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"1" * 17 + b"\r\n", "bad-framing"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n", "bad-framing"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", "bad-framing"),
        (b"HTTP/1.1 200 OK\r\n" + b"X: " + b"a" * 70_000 + b"\r\n\r\n", "too-big"),
        (b"\x16\x03\x01\x00", "not-http"),
    ],
)
def test_the_parser_turns_every_bad_size_into_an_outcome(data, problem):
    found = parse(data, closed=True).problem
    assert found is not None and found.kind == problem, found


def test_the_parser_reads_heads_bodies_and_head_responses():
    two = (
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\nDate: x\r\n\r\nokHTTP/1.1 404 Not Found"
        b"\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nno\r\n0\r\n\r\n"
    )
    parsed = parse(two)
    assert [(r.status, r.body) for r in parsed.responses] == [(200, b"ok"), (404, b"no")]
    assert parsed.complete and not parsed.problem and parsed.responses[0].header("date") == "x"
    head_then_get = b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    assert [r.body for r in parse(head_then_get, heads=1).responses] == [b"", b"ok"]
    assert not parse(b"HTTP/1.1 200 OK\r\nContent-Le").complete
    assert not parse(b"HTTP/1.").complete and not parse(b"HTTP/1.").problem


def test_a_response_that_closes_with_content_length_1_and_transfer_encoding_gzip_runs_to_the_close():
    """RFC 9112 §6.3: Transfer-Encoding overrides Content-Length, and where chunked is not its last coding the body
    runs to the close."""
    data = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nContent-Length: 1\r\n\r\nabc"
    assert not parse(data).complete
    assert [r.body for r in parse(data, closed=True).responses] == [b"abc"]


def test_identical_content_lengths_are_one_and_a_response_header_joins_repeated_fields():
    parsed = parse(b"HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\nVary: a\r\nVary: b\r\n\r\nok")
    assert parsed.responses[0].body == b"ok" and parsed.responses[0].header("vary") == "a, b"


@pytest.fixture
def raw_server() -> Iterator[tuple[int, list[bytes]]]:
    """A loopback server that answers each connection's first request with the pieces a test puts in the list, a
    quarter of a second apart, then holds the connection open until the test ends."""
    pieces: list[bytes] = []
    listener = socket.create_server(("127.0.0.1", 0))
    done = threading.Event()

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65_536)
            for piece in pieces:
                if done.is_set():
                    return
                try:
                    conn.sendall(piece)
                except OSError:  # the client gave up and closed: what the test asserts
                    return
                time.sleep(0.25)
            done.wait(10)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1], pieces
    done.set()
    listener.close()


def test_the_client_skips_an_interim_100_and_reads_the_final_response(raw_server):
    port, pieces = raw_server
    pieces += [b"HTTP/1.1 100 Continue\r\n\r\n", b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel", b"lo"]
    with Connection("127.0.0.1", port, timeout=5) as conn:
        conn.send(request_bytes("/"))
        response = conn.read_response()
    assert (response.status, response.body) == (200, b"hello")


def test_a_trickling_response_ends_at_the_clients_timeout_not_at_each_piece(raw_server):
    port, pieces = raw_server
    pieces += [b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"] + [b"x"] * 30
    started = time.monotonic()
    with Connection("127.0.0.1", port, timeout=1.0) as conn, pytest.raises(TimeoutError):
        conn.send(request_bytes("/"))
        conn.read_response()
    assert time.monotonic() - started < 2.0  # one deadline, however often a byte comes


def test_a_response_the_reader_cannot_frame_is_an_http_error_saying_why(raw_server):
    port, pieces = raw_server
    pieces += [b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!"]
    with Connection("127.0.0.1", port, timeout=5) as conn, pytest.raises(HttpError, match="values that differ"):
        conn.send(request_bytes("/"))
        conn.read_response()
