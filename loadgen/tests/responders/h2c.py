"""A minimal h2c responder (HTTP/2 over cleartext, prior knowledge) serving CONTRACT.md's /id, /hello, /backend,
/v1/tweets, /factorial and /fibonacci, for the HTTP/2 contract check's tests and h2load's.

    python h2c.py PORT [--name NAME] [--break RULE]

One thread per connection. --break breaks one rule of the contract:
  body          /hello answers "Hello Worle" (one wrong byte)
  content-type  /hello answers with content-type text/html; charset=utf-8
  date          no response has a date header
  tweets        the tweet counter never grows (every id is 1000000)
  swap          requests that arrive together are answered with each other's bodies (rotated by one stream);
                a request alone is answered right (the responder waits 100 ms for company before answering)
  stall         answers for 0.5 s from its first request, then never again (the connections stay open)
"""

import argparse
import email.utils
import math
import re
import socket
import sys
import threading
import time
from urllib.parse import parse_qs, urlsplit

import h2.config
import h2.connection
import h2.events
import h2.exceptions

sys.set_int_max_str_digits(0)  # 5000! has 16326 digits
BREAKS = ("body", "content-type", "date", "tweets", "swap", "stall")
STALL_AFTER_S = 0.5
HELLO = b"Hello World"
BACKEND = b"<h1>Say hello to akka-http</h1>"
DIGITS = re.compile(r"^\d+$")


class Counter:
    def __init__(self):
        self.value, self.lock = 1_000_000, threading.Lock()

    def next(self, grow: bool) -> int:
        with self.lock:
            value = self.value
            if grow:
                self.value += 1
            return value


def fib(n: int) -> int:
    a, b = 1, 1
    for _ in range(n):
        a, b = b, a + b
    return a


def param(query: str, high: int) -> int | None:
    values = parse_qs(query, keep_blank_values=True).get("param")
    if not values or not DIGITS.match(values[0]) or int(values[0]) > high:
        return None
    return int(values[0])


class App:
    def __init__(self, name: str, broken: str | None):
        self.name, self.broken, self.tweets = name, broken, Counter()
        self.first_request: float | None = None

    def stalled(self) -> bool:
        """--break stall: whether its 0.5 s of answers since the first request are over."""
        now = time.monotonic()
        self.first_request = self.first_request or now
        return now - self.first_request > STALL_AFTER_S

    def answer(self, path: str) -> tuple[int, str, bytes]:
        """(status, content type, body) for a GET of `path`."""
        url = urlsplit(path)
        if url.path == "/id":
            return 200, "text/plain", self.name.encode()
        if url.path == "/hello":
            body = b"Hello Worle" if self.broken == "body" else HELLO
            ctype = "text/html; charset=utf-8" if self.broken == "content-type" else "text/plain; charset=utf-8"
            return 200, ctype, body
        if url.path == "/backend":
            return 200, "text/html; charset=utf-8", BACKEND
        if url.path == "/v1/tweets":
            n = self.tweets.next(grow=self.broken != "tweets")
            return 200, "application/json", b'[{"id":%d,"author":"author1","content":"Hello, World!"}]' % n
        if url.path in ("/factorial", "/fibonacci"):
            high, function = (5000, math.factorial) if url.path == "/factorial" else (45, fib)
            n = param(url.query, high)
            if n is None:
                return 400, "text/plain", b"param must be an integer from 0 to %d" % high
            return 200, "text/plain", str(function(n)).encode()
        return 404, "text/plain", b"not found"


class Connection:
    def __init__(self, app: App, sock: socket.socket):
        self.app, self.sock = app, sock
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        self.unsent: dict[int, bytes] = {}  # stream -> body bytes waiting for flow-control window
        self.waiting: list[tuple[int, str]] = []  # (stream, path) held back to be answered together (--break swap)

    def serve(self) -> None:
        self.conn.initiate_connection()
        self.flush()
        while True:
            self.sock.settimeout(0.1 if self.waiting else None)
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                self.answer_waiting()
                continue
            if not data:
                return
            try:
                events = self.conn.receive_data(data)
            except h2.exceptions.ProtocolError:
                self.flush()  # the GOAWAY h2 queued
                return
            for event in events:
                if isinstance(event, h2.events.RequestReceived):
                    path = dict(event.headers).get(":path", "/")
                    if self.app.broken == "swap":
                        self.waiting.append((event.stream_id, path))
                    elif self.app.broken == "stall" and self.app.stalled():
                        continue  # never answered
                    else:
                        self.respond(event.stream_id, *self.app.answer(path))
                elif isinstance(event, h2.events.DataReceived):
                    self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                elif isinstance(event, h2.events.StreamReset):
                    self.unsent.pop(event.stream_id, None)
                elif isinstance(event, h2.events.ConnectionTerminated):
                    self.flush()
                    return
            self.send_bodies()
            self.flush()

    def answer_waiting(self) -> None:
        answers = [self.app.answer(path) for _, path in self.waiting]
        if len(answers) > 1:  # each stream gets the next one's body (content-length follows the body it gets)
            bodies = [body for _, _, body in answers]
            answers = [(status, ctype, bodies[(i + 1) % len(bodies)]) for i, (status, ctype, _) in enumerate(answers)]
        for (stream_id, _), answer in zip(self.waiting, answers):
            self.respond(stream_id, *answer)
        self.waiting = []
        self.send_bodies()
        self.flush()

    def respond(self, stream_id: int, status: int, ctype: str, body: bytes) -> None:
        headers = [
            (":status", str(status)),
            ("server", "h2c-responder"),
            ("content-type", ctype),
            ("content-length", str(len(body))),
        ]
        if self.app.broken != "date":
            headers.append(("date", email.utils.formatdate(usegmt=True)))
        self.conn.send_headers(stream_id, headers)
        self.unsent[stream_id] = body

    def send_bodies(self) -> None:
        """As much of each waiting body as the peer's flow-control windows allow; the rest when they open."""
        for stream_id in list(self.unsent):
            body = self.unsent[stream_id]
            while True:
                size = min(len(body), self.conn.local_flow_control_window(stream_id), self.conn.max_outbound_frame_size)
                if size <= 0 and body:
                    break
                self.conn.send_data(stream_id, body[:size], end_stream=size == len(body))
                body = body[size:]
                if not body:
                    break
            if body:
                self.unsent[stream_id] = body
            else:
                del self.unsent[stream_id]

    def flush(self) -> None:
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)


def handle(app: App, sock: socket.socket) -> None:
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        Connection(app, sock).serve()
    except (OSError, h2.exceptions.H2Error):
        pass
    finally:
        sock.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--name", default="h2c")
    parser.add_argument("--break", dest="broken", choices=BREAKS)
    args = parser.parse_args()
    app = App(args.name, args.broken)
    server = socket.create_server(("127.0.0.1", args.port), backlog=128)
    while True:
        sock, _ = server.accept()
        threading.Thread(target=handle, args=(app, sock), daemon=True).start()


if __name__ == "__main__":
    main()
