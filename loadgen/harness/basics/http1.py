"""The one HTTP/1 response reader: bytes in, final responses out (RFC 9112 §6.3's framing), for the contract check's
client (httpclient.py) and the compliance probe's cases (conformance/wire.py) alike. No HTTP library: a library would
repair what the probe tests. Bounded, since a server's answers are what is doubted: every size is checked before it is
used (digits only, at most 16 hex digits of chunk size, a cap on a head), anything that cannot be read is a `Problem`
(`not-http`, `bad-framing`, `too-big`, `too-many`) saying why, never an exception.

What it reads as the RFC says: interim 1xx responses are skipped (RFC 9110 §15.2); a body is chunked where the last
transfer coding is chunked (it runs to the close where another one is last), else as long as one Content-Length
says (repeated identical values are one, RFC 9110 §8.6; differing ones are bad framing), else it runs to the close;
204, 304 and a HEAD's answer have none (RFC 9112 §6.3)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

STATUS_LINE = re.compile(rb"HTTP/(\d)\.(\d) (\d{3})(?:[ \t][^\r\n]*)?\r?\n")
FIELD = re.compile(rb"([^:\r\n]+):[ \t]*([^\r\n]*?)[ \t]*\r?\n")
CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,16})[ \t]*(?:;[^\r\n]*)?\r\n")
CONTENT_LENGTH = re.compile(r"\d{1,18}")  # ASCII digits only (str.isdigit takes '²'); past 18, no real body
PARTIAL_STATUS = re.compile(rb"H(?:T(?:T(?:P(?:/(?:\d(?:\.(?:\d(?: [^\r\n]*)?)?)?)?)?)?)?)?\r?")
NO_BODY = {204, 304}
HEAD_CAP = 65_536  # a response head longer than this is `too-big`
MAX_RESPONSES = 32  # more responses than any case's requests explain: `too-many` (a server answering without end)


@dataclass(frozen=True)
class Response:
    """One final response: its status, its header fields as sent (names lower-cased), its body (de-chunked)."""

    status: int
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    version: str = "1.1"

    def header(self, name: str) -> str | None:
        """Every value of field `name` (lower case) in one, joined by ", " as RFC 9110 §5.3 combines them; None."""
        values = self.fields(name)
        return ", ".join(values) if values else None

    def fields(self, name: str) -> list[str]:
        """The value of each field line named `name` (lower case), as sent."""
        return [v for n, v in self.headers if n == name]

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


@dataclass(frozen=True)
class Problem:
    """Why no response can be read where one starts: `incomplete` (more bytes may complete it), or the outcome
    (`not-http`, `bad-framing`, `too-big`, `too-many`) and, for a person, what was wrong."""

    kind: str
    why: str = ""


INCOMPLETE = Problem("incomplete")


@dataclass
class Parsed:
    """What `parse` made of the bytes so far: the complete responses, where the next one starts, whether the data
    ends exactly after a complete response, and the problem that stopped it (None: none)."""

    responses: list[Response] = field(default_factory=list)
    at: int = 0
    complete: bool = True
    problem: Problem | None = None


def parse(data: bytes, closed: bool = False, heads: int = 0, earlier: Parsed | None = None) -> Parsed:
    """The final responses in `data`, from where `earlier` stopped; a body without a length runs to the close
    (`closed`); the first `heads` responses answer HEAD requests (no body, whatever their framing says)."""
    out = Parsed(list(earlier.responses), earlier.at) if earlier and not earlier.problem else Parsed()
    while out.at < len(data):
        step = response_at(data, out.at, closed, len(out.responses) < heads)
        if isinstance(step, Problem):
            if step is INCOMPLETE:
                out.complete = False
            else:
                out.problem = step
            return out
        response, out.at = step
        if response is not None:
            out.responses.append(response)
        if len(out.responses) > MAX_RESPONSES:  # no request explains these: stop reading, say so
            out.problem = Problem("too-many", f"more than {MAX_RESPONSES} responses")
            return out
    out.complete = True
    return out


def response_at(data: bytes, at: int, closed: bool, to_head: bool = False) -> tuple[Response | None, int] | Problem:
    """The response starting at `at` and where the next one starts (None for an interim 1xx), or the Problem."""
    line = STATUS_LINE.match(data, at)
    if line is None:
        rest = data[at : at + 1024]
        if not closed and b"\n" not in rest and PARTIAL_STATUS.fullmatch(rest):
            return INCOMPLETE
        return Problem("not-http", f"no status line: {bytes(rest[:40])!r}")
    head_end = data.find(b"\r\n\r\n", at)
    if head_end < 0 or head_end - at > HEAD_CAP:
        if len(data) - at > HEAD_CAP:
            return Problem("too-big", f"a head over {HEAD_CAP} bytes")
        return Problem("bad-framing", "the connection closed within the head") if closed else INCOMPLETE
    headers = _fields(data[line.end() : head_end + 2])
    if headers is None:
        return Problem("bad-framing", "a header line without a colon")
    status, body_at = int(line.group(3)), head_end + 4
    if 100 <= status < 200:
        return None, body_at
    version = f"{line.group(1).decode()}.{line.group(2).decode()}"
    if status in NO_BODY or to_head:
        return Response(status, headers, b"", version), body_at
    body = _body(data, body_at, headers, closed)
    if isinstance(body, Problem):
        return body
    content, end = body
    return Response(status, headers, content, version), end


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


def _body(data: bytes, at: int, headers: tuple[tuple[str, str], ...], closed: bool) -> tuple[bytes, int] | Problem:
    codings = [c.strip().lower() for n, v in headers if n == "transfer-encoding" for c in v.split(",")]
    if codings and codings[-1] == "chunked":
        return _chunked(data, at, closed)
    if codings:  # another coding last: the body runs to the close (RFC 9112 §6.3), whatever Content-Length says
        return (data[at:], len(data)) if closed else INCOMPLETE
    lengths = {v.strip() for n, v in headers if n == "content-length" for v in v.split(",")}
    if not lengths:  # runs to the close
        return (data[at:], len(data)) if closed else INCOMPLETE
    if len(lengths) > 1:
        return Problem("bad-framing", f"Content-Length {', '.join(sorted(lengths))}: values that differ")
    length = next(iter(lengths))
    if not CONTENT_LENGTH.fullmatch(length):
        return Problem("bad-framing", f"Content-Length {length[:40]!r} is not a number of bytes")
    end = at + int(length)
    if end > len(data):
        return Problem("bad-framing", f"the connection closed {end - len(data)} bytes short") if closed else INCOMPLETE
    return data[at:end], end


def _chunked(data: bytes, at: int, closed: bool) -> tuple[bytes, int] | Problem:
    """A chunked body starting at `at`: its data and where it ends (after its trailers)."""
    body = bytearray()
    wanting = Problem("bad-framing", "the connection closed within the chunks") if closed else INCOMPLETE
    while True:
        size_line = CHUNK_SIZE.match(data, at)
        if size_line is None:
            line_end = data.find(b"\r\n", at)
            if line_end < 0 and len(data) - at < 1024:
                return wanting
            shown = bytes(data[at : at + 20]).split(b"\r\n")[0]
            return Problem("bad-framing", f"chunk size {shown!r} is not a hexadecimal number")
        size, at = int(size_line.group(1), 16), size_line.end()
        if size == 0:
            trailers_end = data.find(b"\r\n\r\n", at - 2)
            return wanting if trailers_end < 0 else (bytes(body), trailers_end + 4)
        if at + size + 2 > len(data):
            return wanting
        if data[at + size : at + size + 2] != b"\r\n":
            return Problem("bad-framing", f"a chunk of {size} bytes not followed by CRLF")
        body += data[at : at + size]
        at += size + 2
