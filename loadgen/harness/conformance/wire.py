"""One case on the wire: the bytes sent on a fresh connection (and, for a two-step case, a follow-up request once the
first answer came), and what came back: every response's status, headers and body (read by the one HTTP/1 reader,
basics/http1.py), and whether the server closed the connection. Bounded, since the server's answers are what the
probe doubts: a cap on the bytes read per case, one deadline over the whole case that no answer extends, anything
that cannot be read an outcome (`not-http`, `bad-framing`, `too-big`, `too-many`), never an exception, and a stop
event (Ctrl-C) ends the read within `Timing.poll_s`."""

from __future__ import annotations

import select
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from harness.basics.http1 import Parsed, Problem, Response, parse

CONNECT_S = 5.0  # a full accept queue drops a SYN, retried after 1 s: not the case's answer
PARSE_EVERY_S = 0.02  # while data keeps coming, parse at most this often (a trickle is not re-parsed per byte)


@dataclass(frozen=True)
class Timing:
    """How long to wait: for a first answer (a server that waits for more of a request is given this long), after an
    answer for another one or for the close (a close later than this reads as a connection left open), the whole
    case at most (whatever the server sends), and the bytes read per case at most."""

    answer_s: float = 2.0
    settle_s: float = 0.5
    case_s: float = 4.0
    max_bytes: int = 1 << 20
    poll_s: float = 0.1  # how often a wait looks at the stop event


DEFAULT_TIMING = Timing()


@dataclass(frozen=True)
class Reply:
    """What a server did with a case: its final responses in order, whether it closed the connection, and what could
    not be read (`not-http`, `bad-framing`, `too-big`, `too-many`), if anything."""

    responses: tuple[Response, ...]
    closed: bool
    problem: str = ""

    @property
    def statuses(self) -> tuple[int, ...]:
        return tuple(r.status for r in self.responses)

    def describe(self, mark: Callable[[Response], str] | None = None) -> str:
        """The outcome in the expectations' own words (verdicts.py): `400+close`, `200 200+open`, `close`, `none`,
        `not-http`, `bad-framing`, `too-big`, `too-many`; `mark` adds a word after a response's status."""
        if self.problem:
            return self.problem
        if not self.responses:
            return "close" if self.closed else "none"
        statuses = " ".join(f"{r.status}{mark(r) if mark else ''}" for r in self.responses)
        return statuses + ("+close" if self.closed else "+open")


def exchange(
    host: str,
    port: int,
    sent: bytes,
    timing: Timing = DEFAULT_TIMING,
    then: bytes = b"",
    head_requests: int = 0,
    stop: threading.Event | None = None,
) -> Reply:
    """`sent` written on a new connection to host:port; with `then`, that follow-up written once the first answer
    came and the connection is still open. The outcome once the server closed, or went quiet for `timing.settle_s`
    after an answer, or gave none in `timing.answer_s`, and never later than `timing.case_s`. The first
    `head_requests` responses answer HEAD requests (no body, whatever their framing says)."""
    started = time.monotonic()
    with socket.create_connection((host, port), timeout=CONNECT_S) as sock:
        reader = Reader(sock, timing, started, head_requests, stop)
        if not reader.write(sent):
            return reader.reply()
        reader.read()
        if then and not reader.closed and not reader.parsed.problem:
            reader.answer_by = time.monotonic() + timing.answer_s
            reader.write(then)
            reader.read()
        return reader.reply()


class Reader:
    """One connection's responses read under the case's deadlines (see Timing)."""

    def __init__(
        self, sock: socket.socket, timing: Timing, started: float, heads: int, stop: threading.Event | None
    ) -> None:
        self.sock, self.timing, self.heads, self.stop = sock, timing, heads, stop
        self.case_end = started + timing.case_s
        self.answer_by = started + timing.answer_s
        self.data = bytearray()
        self.parsed = Parsed()
        self.closed = False

    def write(self, sent: bytes) -> bool:
        """`sent` written, a slice at a time (a server that does not read cannot hold the case past its time or a
        stop); False when the connection is gone or the time is up (what it answered before still counts)."""
        view = memoryview(sent)
        while view:
            if time.monotonic() >= self.case_end or (self.stop is not None and self.stop.is_set()):
                return False
            self.sock.settimeout(self.timing.poll_s)
            try:
                view = view[self.sock.send(view[:65_536]) :]
            except TimeoutError:
                continue
            except OSError:  # closed or reset while the case was being written
                self._drain()
                return False
        return True

    def read(self) -> None:
        """Responses until the server closes, goes quiet after one, stops answering, or the case's time is up."""
        answered_at = len(self.parsed.responses)
        last_data = time.monotonic()
        last_parse = 0.0
        while not self.closed and not self.parsed.problem:
            now = time.monotonic()
            if self.stop is not None and self.stop.is_set():
                return
            got_more = len(self.parsed.responses) > answered_at and self.parsed.complete
            until = min(self.case_end, last_data + self.timing.settle_s if got_more else self.answer_by)
            if now >= until:
                return
            chunk = self._recv(min(until - now, self.timing.poll_s))
            if chunk is None:  # quiet for a moment: read what is here
                self._parse()
                last_parse = time.monotonic()
                continue
            last_data = time.monotonic()
            if chunk:
                self.data += chunk
            else:
                self.closed = True
            if self.closed or last_data - last_parse >= PARSE_EVERY_S or not self._pending():
                self._parse()
                last_parse = time.monotonic()
        self._parse()

    def _recv(self, wait: float) -> bytes | None:
        """Up to 64 kB, b"" at the close (or a reset), None when nothing came in `wait`."""
        room = self.timing.max_bytes + 1 - len(self.data)
        if room <= 0:
            self.parsed.problem = Problem("too-big", f"over {self.timing.max_bytes} bytes")
            return None
        self.sock.settimeout(max(wait, 0.001))
        try:
            return self.sock.recv(min(65_536, room))
        except TimeoutError:
            return None
        except OSError:  # reset: closed, whatever it had sent is what it said
            return b""

    def _pending(self) -> bool:
        try:
            return bool(select.select([self.sock], [], [], 0)[0])
        except (OSError, ValueError):
            return False

    def _drain(self) -> None:
        """What came before the connection broke while writing: read until the close, within the case's time."""
        self.answer_by = min(self.answer_by, time.monotonic() + self.timing.settle_s)
        self.read()

    def _parse(self) -> None:
        if len(self.data) > self.timing.max_bytes:
            self.parsed.problem = Problem("too-big", f"over {self.timing.max_bytes} bytes")
            return
        self.parsed = parse(bytes(self.data), self.closed, self.heads, self.parsed)

    def reply(self) -> Reply:
        self._parse()
        p = self.parsed
        # a body that runs to the close, or a response cut by it: what was answered stands
        return Reply(tuple(p.responses), self.closed, p.problem.kind if p.problem else "")
