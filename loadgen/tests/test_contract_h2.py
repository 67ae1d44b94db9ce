"""The HTTP/2 (h2c) contract check against real servers on loopback: responders/h2c.py, right and broken one rule at a
time (--break), an HTTP/1.1-only server, a silent one and a closed port."""

import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from ports import free_port

from harness.conformance import verification_h2c as contract_h2
from harness.conformance.verification_h2c import H2Client, check_h2

pytestmark = pytest.mark.integration  # real servers, load tools or the harness's command line on loopback

RESPONDERS = Path(__file__).parent / "responders"
ROUTES = ("hello", "backend", "tweets", "factorial", "fibonacci")


def wait_listening(port, proc):
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"responder exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("responder did not listen in time")


def start(script, *args):
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(RESPONDERS / script), str(port), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_listening(port, proc)
    except RuntimeError:
        proc.kill()
        proc.wait()
        raise
    return port, proc


def stop(proc):
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture
def h2c():
    """Starts responders/h2c.py with the given flags; every one started is stopped after the test."""
    procs = []

    def run(*flags):
        port, proc = start("h2c.py", "--name", "h2c", *flags)
        procs.append(proc)
        return port

    yield run
    for proc in procs:
        stop(proc)


def test_a_correct_h2c_server_passes(h2c):
    report = check_h2("h2c", "127.0.0.1", h2c(), ROUTES)
    assert report.failures == [] and report.ok
    assert report.checks > 150


def test_the_wrong_name_is_reported(h2c):
    report = check_h2("node", "127.0.0.1", h2c(), ("hello",))
    assert report.failures[0] == "GET /id: body 'h2c', expected 'node'"


def test_a_wrong_body_byte(h2c):
    report = check_h2("h2c", "127.0.0.1", h2c("--break", "body"), ROUTES)
    assert report.failures[0] == "GET /hello: body 'Hello Worle', expected 'Hello World'"
    assert len(report.failures) == 2
    assert report.failures[1].startswith("10 streams in flight at once: /hello (stream ")
    assert report.failures[1].endswith("answered 200 'Hello Worle', expected 'Hello World'")


def test_a_wrong_content_type(h2c):
    report = check_h2("h2c", "127.0.0.1", h2c("--break", "content-type"), ROUTES)
    assert report.failures == ["GET /hello: content-type 'text/html; charset=utf-8', expected text/plain"]


def test_a_missing_date_header(h2c):
    report = check_h2("h2c", "127.0.0.1", h2c("--break", "date"), ROUTES)
    assert "GET /id: no date header" in report.failures
    assert "GET /factorial?param=abc: no date header" in report.failures
    assert all(f.endswith(": no date header") for f in report.failures)


def test_a_tweet_counter_that_does_not_grow(h2c):
    report = check_h2("h2c", "127.0.0.1", h2c("--break", "tweets"), ROUTES)
    assert report.failures == [
        "GET /v1/tweets: id did not grow on the next request (1000000 then 1000000)",
        "10 streams in flight at once: /v1/tweets streams got the same id [1000000, 1000000]",
    ]


def test_streams_answered_with_each_others_bodies(h2c):
    report = check_h2("h2c", "127.0.0.1", h2c("--break", "swap"), ROUTES)
    assert len(report.failures) == 1, report.failures
    failure = report.failures[0]
    assert failure.startswith("10 streams in flight at once: /id (stream ")
    assert "/hello (stream " in failure and "expected 'Hello World'" in failure
    assert "/v1/tweets (stream " in failure  # a tweet stream got another route's body


def test_requests_in_flight_are_sent_before_any_answer_is_read(h2c):
    with H2Client("127.0.0.1", h2c()) as client:
        answers = client.get(["/fibonacci?param=25", "/hello", "/factorial?param=5000", "/id"])
        assert [r.stream_id for r in answers] == [1, 3, 5, 7]
        assert [r.status for r in answers] == [200] * 4
        assert answers[0].text == "121393" and answers[1].text == "Hello World" and answers[3].text == "h2c"
        assert len(answers[2].body) == 16326  # 5000!: more than one DATA frame


@pytest.fixture
def one_shot_server():
    """A server that answers every connection with `reply` once, then closes it (as nginx without http2 answers an
    HTTP/2 preface: "HTTP/1.1 400 Bad Request")."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stopping = threading.Event()

    def serve(reply):
        while not stopping.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(1)
                try:
                    conn.recv(4096)
                    conn.sendall(reply)
                    conn.shutdown(socket.SHUT_WR)  # nginx's lingering close: read what still comes, then close
                    while conn.recv(4096):
                        pass
                except OSError:
                    pass

    def run(reply):
        threading.Thread(target=serve, args=(reply,), daemon=True).start()
        return listener.getsockname()[1]

    yield run
    stopping.set()
    listener.close()


def test_an_http1_only_server_is_told_apart(one_shot_server):
    port = one_shot_server(
        b"HTTP/1.1 400 Bad Request\r\nServer: nginx\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    report = check_h2("h2c", "127.0.0.1", port, ROUTES)
    assert report.failures == [
        "GET /id over h2c: the server does not speak h2c with prior knowledge: it answered 'HTTP/1.1 400 Bad Request'"
    ]


def test_an_http1_only_server_that_resets_is_told_apart():
    """A server that answers the preface with a 400 and closes at once, unread request frames turning the close into
    a reset: the 400 is still named, not the reset."""
    listener = socket.create_server(("127.0.0.1", 0))

    def answer_and_reset():
        conn, _ = listener.accept()
        conn.recv(24)  # the client preface's 24 bytes; its SETTINGS and the requests stay unread
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        time.sleep(0.2)  # the request frames arrive unread
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.close()

    threading.Thread(target=answer_and_reset, daemon=True).start()
    try:
        report = check_h2("h2c", "127.0.0.1", listener.getsockname()[1], ROUTES)
    finally:
        listener.close()
    assert report.failures == [
        "GET /id over h2c: the server does not speak h2c with prior knowledge: it answered 'HTTP/1.1 400 Bad Request'"
    ]


def test_python_http_server_answering_http2_with_a_bare_html_page():
    port, proc = start("keepalive.py")  # http.server answers "PRI * HTTP/2.0" with an HTTP/0.9-style error page
    try:
        report = check_h2("h2c", "127.0.0.1", port, ROUTES)
    finally:
        stop(proc)
    assert report.failures == [
        "GET /id over h2c: the server does not speak h2c with prior knowledge: it answered '<!DOCTYPE HTML>'"
    ]


def test_a_silent_server_fails_within_the_deadline(monkeypatch):
    monkeypatch.setattr(contract_h2, "READ_TIMEOUT_S", 0.5)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    accepted = []
    threading.Thread(target=lambda: accepted.append(listener.accept()), daemon=True).start()
    try:
        started = time.monotonic()
        report = check_h2("h2c", "127.0.0.1", port, ROUTES)
        assert time.monotonic() - started < 3
    finally:
        for conn, _ in accepted:
            conn.close()
        listener.close()
    assert report.failures == ["GET /id over h2c: no complete answer within 0.5 s for /id"]


def test_a_closed_port():
    report = check_h2("h2c", "127.0.0.1", free_port(), ROUTES)
    assert len(report.failures) == 1 and "Connection refused" in report.failures[0]
