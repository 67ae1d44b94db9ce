"""One case on the wire: the bytes sent on a fresh connection, and what came back (every response's status, whether
the server closed the connection), read without an HTTP library: a library would repair what the case probes."""

from __future__ import annotations

import re
import socket
import time
from dataclasses import dataclass

STATUS_LINE = re.compile(rb"HTTP/\d\.\d (\d{3})[^\r\n]*\r?\n")
NO_BODY = {204, 304}
CONNECT_S = 5.0  # a full accept queue drops a SYN, retried after 1 s: not the case's answer


@dataclass(frozen=True)
class Timing:
    """How long to wait: for a first answer (a server that waits for more of a request is given this long), and after
    an answer for another one or for the close (a close later than this reads as a connection left open)."""

    answer_s: float = 2.0
    settle_s: float = 0.5


DEFAULT_TIMING = Timing()


@dataclass(frozen=True)
class Reply:
    """What a server did with a case: its final responses' statuses in order, whether it closed the connection,
    and whether what it sent was not HTTP/1.x at all."""

    statuses: tuple[int, ...]
    closed: bool
    not_http: bool = False

    def describe(self) -> str:
        """The outcome in the expectations' own words (verdicts.py): `400+close`, `200 200+open`, `close`, `none`."""
        if self.not_http:
            return "not-http"
        if not self.statuses:
            return "close" if self.closed else "none"
        return " ".join(map(str, self.statuses)) + ("+close" if self.closed else "+open")


def exchange(host: str, port: int, sent: bytes, timing: Timing = DEFAULT_TIMING) -> Reply:
    """`sent` written on a new connection to host:port; the outcome once the server closed, or went quiet for
    `timing.settle_s` after an answer, or gave none in `timing.answer_s`."""
    with socket.create_connection((host, port), timeout=CONNECT_S) as sock:
        sock.settimeout(timing.answer_s)
        try:
            sock.sendall(sent)
        except OSError:  # it closed (or reset) while the case was still being written: what it answered still counts
            pass
        return _read(sock, timing)


def _read(sock: socket.socket, timing: Timing) -> Reply:
    received = b""
    deadline = time.monotonic() + timing.answer_s
    closed = False
    while not closed:
        statuses, complete, not_http = parse_responses(received)
        if not_http:
            break
        wait = timing.settle_s if statuses and complete else deadline - time.monotonic()
        if wait <= 0:
            break
        sock.settimeout(wait)
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            break
        except OSError:  # reset: closed, whatever it had sent is what it said
            chunk = b""
        received += chunk
        closed = not chunk
    statuses, _, not_http = parse_responses(received)
    return Reply(tuple(statuses), closed, not_http)


def parse_responses(data: bytes) -> tuple[list[int], bool, bool]:
    """The final statuses of the responses in `data` (1xx interim ones skipped), whether the last one is complete,
    and whether `data` is not HTTP/1.x."""
    statuses: list[int] = []
    at = 0
    while at < len(data):
        head_end = data.find(b"\r\n\r\n", at)
        line = STATUS_LINE.match(data, at)
        if line is None:
            return statuses, True, len(data) - at >= 5 and not data[at:].startswith(b"HTTP/")
        if head_end < 0:
            return statuses, False, False
        status = int(line.group(1))
        head = data[at:head_end].decode("latin-1").lower()
        at = head_end + 4
        if 100 <= status < 200:
            continue
        statuses.append(status)
        length = _body_length(head, status)
        if length is None:  # chunked
            end = _chunked_end(data, at)
            if end is None:
                return statuses, False, False
            at = end
        elif length < 0:  # until the close
            return statuses, False, False
        elif at + length > len(data):
            return statuses, False, False
        else:
            at += length
    return statuses, True, False


def _body_length(head: str, status: int) -> int | None:
    """The body's length by the response's head: None when chunked, -1 when it runs to the close."""
    if status in NO_BODY:
        return 0
    if re.search(r"\ntransfer-encoding:[^\n]*chunked", head):
        return None
    found = re.search(r"\ncontent-length:\s*(\d+)", head)
    return int(found.group(1)) if found else -1


def _chunked_end(data: bytes, at: int) -> int | None:
    """Where a chunked body starting at `at` ends (after its trailers), or None when `data` does not hold all of it."""
    while True:
        line_end = data.find(b"\r\n", at)
        if line_end < 0:
            return None
        size = int(data[at:line_end].split(b";")[0].strip() or b"0", 16)
        at = line_end + 2
        if size == 0:
            trailers_end = data.find(b"\r\n\r\n", at - 2)
            return None if trailers_end < 0 else trailers_end + 4
        at += size + 2
        if at > len(data):
            return None
