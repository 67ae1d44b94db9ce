"""One case on the wire: the bytes sent on a fresh connection (and, for a two-step case, a follow-up request once the
first answer came), and what came back: every response's status, headers and body, and whether the server closed
the connection. Read without an HTTP library (a library would repair what the case probes), and bounded, since the
server's answers are what the probe doubts: every size is checked before it is used (digits only, at most 16 hex
digits of chunk size, a cap on a head and on the bytes read per case), one deadline covers the whole case and no
answer extends it, anything that cannot be parsed is an outcome (`not-http`, `bad-framing`, `too-big`, `too-many`), never an
exception, and a stop event (Ctrl-C) ends the read within `Timing.poll_s`."""

from __future__ import annotations

import re
import select
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

STATUS_LINE = re.compile(rb"HTTP/(\d)\.(\d) (\d{3})(?:[ \t][^\r\n]*)?\r?\n")
FIELD = re.compile(rb"([^:\r\n]+):[ \t]*([^\r\n]*?)[ \t]*\r?\n")
CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,16})[ \t]*(?:;[^\r\n]*)?\r\n")
CONTENT_LENGTH = re.compile(r"\d{1,18}")
PARTIAL_STATUS = re.compile(rb"H(?:T(?:T(?:P(?:/(?:\d(?:\.(?:\d(?: [^\r\n]*)?)?)?)?)?)?)?)?\r?")
NO_BODY = {204, 304}
CONNECT_S = 5.0  # a full accept queue drops a SYN, retried after 1 s: not the case's answer
HEAD_CAP = 65_536  # a response head longer than this is `too-big`
MAX_RESPONSES = 32  # more responses than any case's requests explain: `too-many` (a server answering without end)
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
class ResponseRead:
    """One final response: its status, its header fields as sent (names lower-cased), its body (de-chunked)."""

    status: int
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    version: str = "1.1"

    def header(self, name: str) -> str | None:
        """The first value of field `name` (lower case), or None."""
        return next((v for n, v in self.headers if n == name), None)


@dataclass(frozen=True)
class Reply:
    """What a server did with a case: its final responses in order, whether it closed the connection, and what could
    not be read (`not-http`, `bad-framing`, `too-big`, `too-many`), if anything."""

    responses: tuple[ResponseRead, ...]
    closed: bool
    problem: str = ""

    @property
    def statuses(self) -> tuple[int, ...]:
        return tuple(r.status for r in self.responses)

    def describe(self, mark: Callable[[ResponseRead], str] | None = None) -> str:
        """The outcome in the expectations' own words (verdicts.py): `400+close`, `200 200+open`, `close`, `none`,
        `not-http`, `bad-framing`, `too-big`, `too-many`; `mark` adds a word after a response's status."""
        if self.problem:
            return self.problem
        if not self.responses:
            return "close" if self.closed else "none"
        statuses = " ".join(f"{r.status}{mark(r) if mark else ''}" for r in self.responses)
        return statuses + ("+close" if self.closed else "+open")


@dataclass
class Parsed:
    """What `parse` made of the bytes so far: the complete responses, where the next one starts, whether the data
    ends exactly after a complete response, and the problem that stopped it."""

    responses: list[ResponseRead] = field(default_factory=list)
    at: int = 0
    complete: bool = True
    problem: str = ""


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
            self.parsed.problem = "too-big"
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
            self.parsed.problem = "too-big"
            return
        self.parsed = parse(bytes(self.data), self.closed, self.heads, self.parsed)

    def reply(self) -> Reply:
        self._parse()
        p = self.parsed
        # a body that runs to the close, or a response cut by it: what was answered stands
        return Reply(tuple(p.responses), self.closed, p.problem)


def parse(data: bytes, closed: bool = False, heads: int = 0, earlier: Parsed | None = None) -> Parsed:
    """The final responses in `data` (1xx interim ones skipped), from where `earlier` stopped; a body without a length
    runs to the close (`closed`)."""
    out = Parsed(list(earlier.responses), earlier.at) if earlier and not earlier.problem else Parsed()
    while out.at < len(data):
        step = _one(data, out.at, closed, len(out.responses) < heads)
        if isinstance(step, str):
            if step == "incomplete":
                out.complete = False
            else:
                out.problem = step
            return out
        response, out.at = step
        if response is not None:
            out.responses.append(response)
        if len(out.responses) > MAX_RESPONSES:  # no case's requests explain these: stop reading, say so
            out.problem = "too-many"
            return out
    out.complete = True
    return out


def _one(data: bytes, at: int, closed: bool, to_head: bool) -> tuple[ResponseRead | None, int] | str:
    """The response starting at `at` and where the next one starts (None for a 1xx), or why there is none yet:
    `incomplete`, `not-http`, `bad-framing`, `too-big`."""
    line = STATUS_LINE.match(data, at)
    if line is None:
        rest = data[at : at + 1024]
        if not closed and b"\n" not in rest and PARTIAL_STATUS.fullmatch(rest):
            return "incomplete"
        return "not-http"
    head_end = data.find(b"\r\n\r\n", at)
    if head_end < 0 or head_end - at > HEAD_CAP:
        return "too-big" if len(data) - at > HEAD_CAP else "bad-framing" if closed else "incomplete"
    headers = _fields(data[line.end() : head_end + 2])
    if headers is None:
        return "bad-framing"
    status, body_at = int(line.group(3)), head_end + 4
    if 100 <= status < 200:
        return None, body_at
    version = f"{line.group(1).decode()}.{line.group(2).decode()}"
    if status in NO_BODY or to_head:
        return ResponseRead(status, headers, b"", version), body_at
    body = _body(data, body_at, dict(headers), headers, closed)
    if isinstance(body, str):
        return body
    content, end = body
    return ResponseRead(status, headers, content, version), end


def _fields(block: bytes) -> tuple[tuple[str, str], ...] | None:
    out = []
    at = 0
    while at < len(block):
        found = FIELD.match(block, at)
        if found is None:
            return None
        out.append((found.group(1).decode("latin-1").strip().lower(), found.group(2).decode("latin-1")))
        at = found.end()
    return tuple(out)


def _body(
    data: bytes, at: int, first: dict[str, str], headers: tuple[tuple[str, str], ...], closed: bool
) -> tuple[bytes, int] | str:
    if "chunked" in first.get("transfer-encoding", "").lower():
        return _chunked(data, at, closed)
    lengths = {v.strip() for n, v in headers if n == "content-length" for v in v.split(",")}
    if not lengths:  # runs to the close
        return (data[at:], len(data)) if closed else "incomplete"
    if len(lengths) > 1 or not CONTENT_LENGTH.fullmatch(next(iter(lengths))):
        return "bad-framing"
    end = at + int(next(iter(lengths)))
    if end > len(data):
        return "bad-framing" if closed else "incomplete"
    return data[at:end], end


def _chunked(data: bytes, at: int, closed: bool) -> tuple[bytes, int] | str:
    """A chunked body starting at `at`: its data and where it ends (after its trailers)."""
    body = bytearray()
    wanting = "bad-framing" if closed else "incomplete"
    while True:
        size_line = CHUNK_SIZE.match(data, at)
        if size_line is None:
            line_end = data.find(b"\r\n", at)
            return wanting if line_end < 0 and len(data) - at < 1024 else "bad-framing"
        size, at = int(size_line.group(1), 16), size_line.end()
        if size == 0:
            trailers_end = data.find(b"\r\n\r\n", at - 2)
            return wanting if trailers_end < 0 else (bytes(body), trailers_end + 4)
        if at + size + 2 > len(data):
            return wanting
        if data[at + size : at + size + 2] != b"\r\n":
            return "bad-framing"
        body += data[at : at + size]
        at += size + 2
