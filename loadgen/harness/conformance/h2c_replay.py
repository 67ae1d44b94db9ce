"""h2spec's failed malformed requests (its RFC 7540 §8.1 and §8.1.2 cases) sent again, and judged by the answer.

h2spec wants each of them treated as a stream error (RST_STREAM or GOAWAY with PROTOCOL_ERROR, or the connection
closed); where a server answered with a response instead, it reports that frame but not its status. The RFC lets a
server answer first: §8.1.2.6, "For malformed requests, a server MAY send an HTTP response prior to closing or
resetting the stream"; and §8.1, where the malformed part comes after valid headers, a complete response sent before
it came, then RST_STREAM NO_ERROR. So each such failure's request is sent again, frame for frame as h2spec's source
sends it (host:port as the authority, path "/"), and the answer read (`judged`): a refusal (400) that ends the stream
passes, a request routed as a valid one (404) fails, and the stream error h2spec wants, seen this time, makes the
failure one not reproduced (the server's answer raced the malformed part)"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import hpack
from hyperframe.frame import (
    ContinuationFrame,
    DataFrame,
    Frame,
    GoAwayFrame,
    HeadersFrame,
    RstStreamFrame,
    SettingsFrame,
)

from harness.conformance import verdicts

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
WAIT_S = 2.0  # as h2spec's -o 2: how long an answer may take
GRACE_S = 0.5  # after a response ends the stream: time for the reset or GOAWAY h2spec would also have taken
PROTOCOL_ERROR = 0x1
STREAM = 1

MALFORMED = [
    {
        "section": "RFC 7540 §8.1.2.6",
        "level": "MUST",
        "quote": "Malformed requests or responses that are detected MUST be treated as a stream error (Section 5.4.2) "
        "of type PROTOCOL_ERROR.",
    },
    {
        "section": "RFC 7540 §8.1.2.6",
        "level": "MAY",
        "quote": "For malformed requests, a server MAY send an HTTP response prior to closing or resetting the stream.",
    },
]
# where the malformed part comes after a request's (valid) headers: the server may have answered before it came
EARLY_ANSWER = {
    "section": "RFC 7540 §8.1",
    "level": "MAY",
    "quote": "A server can send a complete response prior to the client sending an entire request if the response does "
    "not depend on any portion of the request that has not been sent and received. When this is true, a server MAY "
    "request that the client abort transmission of a request without error by sending a RST_STREAM with an error code "
    "of NO_ERROR after sending a complete response (i.e., a frame with the END_STREAM flag).",
}
EXPECTED = (
    "a stream error (RST_STREAM or GOAWAY, PROTOCOL_ERROR, or the connection closed), or a refusal (4xx or 5xx, not "
    "404 or 405) that ends the stream"
)
EXPECTED_LATE = EXPECTED + "; or, answered before the malformed part came, a complete response then RST_STREAM NO_ERROR"
NO_ERROR = 0x0

Fields = list[tuple[str, str]]
Step = tuple[str, Fields | bytes, bool]  # ("headers", fields, end_stream) or ("data", payload, end_stream)


@dataclass(frozen=True)
class StreamAnswer:
    """What the server did on the request's stream: the final status it answered (None: none), whether its answer
    ended the stream, the error codes of a RST_STREAM or GOAWAY it sent (None: none), and whether it closed the
    connection."""

    status: int | None
    ended: bool
    reset: int | None
    goaway: int | None
    closed: bool = False

    @property
    def stream_error(self) -> bool:
        """What h2spec wants: a RST_STREAM or GOAWAY with PROTOCOL_ERROR, or the connection closed."""
        return PROTOCOL_ERROR in (self.reset, self.goaway) or self.closed

    def describe(self) -> str:
        parts = [f"answered {self.status}" if self.status is not None else "no response"]
        parts += ["ended the stream"] if self.ended else []
        parts += [f"RST_STREAM {self.reset}"] if self.reset is not None else []
        parts += [f"GOAWAY {self.goaway}"] if self.goaway is not None else []
        parts += ["closed the connection"] if self.closed else []
        return ", ".join(parts)


def _common(authority: str, method: str = "GET") -> Fields:
    return [(":method", method), (":scheme", "http"), (":path", "/"), (":authority", authority)]


def _posted(authority: str, *after: Step) -> list[Step]:
    """A POST's headers (the stream left open) and the steps after them."""
    return [("headers", _common(authority, "POST"), False), *after]


def _alone(fields: Fields) -> list[Step]:
    return [("headers", fields, True)]


def _without(name: str, authority: str) -> list[Step]:
    return _alone([f for f in _common(authority) if f[0] != name])


def requests(authority: str) -> dict[tuple[str, str], list[Step]]:
    """h2spec's malformed requests, by (section, case description) as its report names them."""
    return {**_fields(authority), **_request_pseudo_headers(authority)}


def _fields(authority: str) -> dict[tuple[str, str], list[Step]]:
    """§8.1, §8.1.2, §8.1.2.1, §8.1.2.2 and §8.1.2.6's: extra, misplaced or forbidden fields, a wrong length."""
    common = _common(authority)
    trailer: Step = ("data", b"test", False)
    return {
        ("http2/8.1", "Sends a second HEADERS frame without the END_STREAM flag"): _posted(
            authority, trailer, ("headers", [("x-test", "ok")], False)
        ),
        ("http2/8.1.2", "Sends a HEADERS frame that contains the header field name in uppercase letters"): _alone(
            [*common, ("X-TEST", "ok")]
        ),
        ("http2/8.1.2.1", "Sends a HEADERS frame that contains a unknown pseudo-header field"): _alone(
            [*common, (":test", "ok")]
        ),
        ("http2/8.1.2.1", "Sends a HEADERS frame that contains the pseudo-header field defined for response"): _alone(
            [*common, (":status", "200")]
        ),
        ("http2/8.1.2.1", "Sends a HEADERS frame that contains a pseudo-header field as trailers"): _posted(
            authority, trailer, ("headers", [(":method", "POST")], False)
        ),
        (
            "http2/8.1.2.1",
            "Sends a HEADERS frame that contains a pseudo-header field that appears in a header block after a regular "
            "header field",
        ): _alone([("x-test", "ok"), *common]),
        ("http2/8.1.2.2", "Sends a HEADERS frame that contains the connection-specific header field"): _alone(
            [*common, ("connection", "keep-alive")]
        ),
        (
            "http2/8.1.2.2",
            'Sends a HEADERS frame that contains the TE header field with any value other than "trailers"',
        ): _alone([*common, ("trailers", "test"), ("te", "trailers, deflate")]),
        (
            "http2/8.1.2.6",
            'Sends a HEADERS frame with the "content-length" header field which does not equal the DATA frame payload '
            "length",
        ): _with_length(authority, [b"test"]),
        (
            "http2/8.1.2.6",
            'Sends a HEADERS frame with the "content-length" header field which does not equal the sum of the multiple '
            "DATA frames payload length",
        ): _with_length(authority, [b"test", b"test"]),
    }


def _request_pseudo_headers(authority: str) -> dict[tuple[str, str], list[Step]]:
    """§8.1.2.3's: a request's pseudo-header fields empty, missing or repeated."""
    common = _common(authority)
    return {
        ("http2/8.1.2.3", 'Sends a HEADERS frame with empty ":path" pseudo-header field'): _alone(
            [(k, "" if k == ":path" else v) for k, v in common]
        ),
        ("http2/8.1.2.3", 'Sends a HEADERS frame that omits ":method" pseudo-header field'): _without(
            ":method", authority
        ),
        ("http2/8.1.2.3", 'Sends a HEADERS frame that omits ":scheme" pseudo-header field'): _without(
            ":scheme", authority
        ),
        ("http2/8.1.2.3", 'Sends a HEADERS frame that omits ":path" pseudo-header field'): _without(":path", authority),
        ("http2/8.1.2.3", 'Sends a HEADERS frame with duplicated ":method" pseudo-header field'): _alone(
            [*common, (":method", "GET")]
        ),
        ("http2/8.1.2.3", 'Sends a HEADERS frame with duplicated ":scheme" pseudo-header field'): _alone(
            [*common, (":scheme", "http")]
        ),
        ("http2/8.1.2.3", 'Sends a HEADERS frame with duplicated ":path" pseudo-header field'): _alone(
            [*common, (":path", "/")]
        ),
    }


def _with_length(authority: str, payloads: list[bytes]) -> list[Step]:
    """A POST saying content-length 1, then `payloads`, the last ending the stream."""
    data: list[Step] = [("data", p, i == len(payloads) - 1) for i, p in enumerate(payloads)]
    return [("headers", [*_common(authority, "POST"), ("content-length", "1")], False), *data]


def replay(host: str, port: int, steps: list[Step], wait_s: float = WAIT_S) -> StreamAnswer | None:
    """`steps` sent on stream 1 of a fresh h2c connection after the prefaces, and what the server did on it within
    `wait_s` of the last frame sent; None where no connection or handshake could be made (nothing was learnt: the
    case keeps h2spec's verdict and words)."""
    try:
        sock = socket.create_connection((host, port), timeout=wait_s)
    except OSError:
        return None
    with sock:
        deadline = time.monotonic() + wait_s
        _send(sock, PREFACE + SettingsFrame(0).serialize())
        buffer = _handshake(sock, deadline)
        if buffer is None:
            return None
        encoder = hpack.Encoder()
        for kind, content, end in steps:  # a write per frame, as h2spec writes them
            frame: Frame
            if kind == "headers":
                assert isinstance(content, list)
                frame = HeadersFrame(STREAM, data=encoder.encode(content), flags=["END_HEADERS"])
            else:
                assert isinstance(content, bytes)
                frame = DataFrame(STREAM, data=content)
            if end:
                frame.flags.add("END_STREAM")
            _send(sock, frame.serialize())
        return _read(sock, buffer, time.monotonic() + wait_s)


def _handshake(sock: socket.socket, deadline: float) -> bytes | None:
    """As h2spec's handshake: the server's SETTINGS acknowledged and ours acknowledged by it; what was read beyond
    them, or None where the server closed or fell silent first."""
    buffer, theirs, ours = b"", False, False
    while not (theirs and ours):
        frame, buffer = _next_frame(sock, buffer, deadline)
        if frame is None:
            return None
        if isinstance(frame, SettingsFrame):
            if "ACK" in frame.flags:
                ours = True
            else:
                theirs = True
                _send(sock, SettingsFrame(0, flags=["ACK"]).serialize())
    return buffer


def _read(sock: socket.socket, buffer: bytes, deadline: float) -> StreamAnswer:
    """The server's frames until stream 1 is reset, a GOAWAY, the connection's close, or `deadline` (GRACE_S after
    a response ends the stream, where that comes first)."""
    decoder, block = hpack.Decoder(), b""
    status: int | None = None
    ended, reset, goaway, closed = False, None, None, False
    while reset is None and goaway is None:
        frame, buffer = _next_frame(sock, buffer, deadline)
        if frame is None:
            closed = time.monotonic() < deadline
            break
        if isinstance(frame, SettingsFrame) and "ACK" not in frame.flags:
            _send(sock, SettingsFrame(0, flags=["ACK"]).serialize())
        elif isinstance(frame, GoAwayFrame):
            goaway = frame.error_code
        elif frame.stream_id != STREAM:
            continue
        elif isinstance(frame, RstStreamFrame):
            reset = frame.error_code
        elif isinstance(frame, HeadersFrame | ContinuationFrame):
            block += frame.data
            if "END_HEADERS" in frame.flags:
                code, block = _status(decoder, block), b""
                if code:
                    status = code if code >= 200 or status is None else status
        if isinstance(frame, HeadersFrame | DataFrame) and "END_STREAM" in frame.flags and not ended:
            ended, deadline = True, min(deadline, time.monotonic() + GRACE_S)
    return StreamAnswer(status, ended, reset, goaway, closed)


def _status(decoder: hpack.Decoder, block: bytes) -> int:
    """The :status of a header block (decoded in order: the decoder's table is the connection's), 0 where none."""
    try:
        fields = dict(decoder.decode(block, raw=True))
    except hpack.HPACKError:
        return 0
    status = fields.get(b":status", b"")
    return int(status) if isinstance(status, bytes) and status.isdigit() else 0


def _next_frame(sock: socket.socket, buffer: bytes, deadline: float) -> tuple[Frame | None, bytes]:
    """The next whole frame from `buffer` and the socket, with what is left; None at the close or the deadline."""
    while True:
        if len(buffer) >= 9:
            frame, length = Frame.parse_frame_header(memoryview(buffer[:9]))
            if len(buffer) >= 9 + length:
                frame.parse_body(memoryview(buffer[9 : 9 + length]))
                return frame, buffer[9 + length :]
        left = deadline - time.monotonic()
        if left <= 0:
            return None, buffer
        sock.settimeout(left)
        try:
            chunk = sock.recv(65536)
        except OSError:
            return None, buffer
        if not chunk:
            return None, buffer
        buffer += chunk


def _send(sock: socket.socket, data: bytes) -> None:
    try:
        sock.sendall(data)
    except OSError:
        pass


def section_and_name(case: dict[str, Any]) -> tuple[str, str]:
    """What names an h2spec case in every report: its number within its section differs where it was run alone."""
    return case["id"].rsplit("/", 1)[0], case["sent"]


def answered(
    found: list[dict[str, Any]], replay: Callable[[list[Step]], StreamAnswer | None], authority: str
) -> list[dict[str, Any]]:
    """`found` (h2spec's cases), each malformed request's case quoting the sentences that judge it, and each of them
    that failed judged again by what `replay` (replay() on the server) read of the answer (see `judged`)."""
    asked = requests(authority)
    out = []
    for case in found:
        steps = asked.get(section_and_name(case))
        if steps is None:
            out.append(case)
            continue
        late = len(steps) > 1  # the malformed part is a frame after the headers
        requirement = [*MALFORMED, EARLY_ANSWER] if late else MALFORMED
        case = {**case, "requirement": requirement, "expected": EXPECTED_LATE if late else EXPECTED}
        answer = replay(steps) if case["verdict"] == "fail" else None
        if answer is not None:
            case |= judged(answer, case["got"], late)
        out.append(case)
    return out


def judged(answer: StreamAnswer, h2spec_got: str, late: bool) -> dict[str, str]:
    """A failed malformed request's verdict and outcome by what the server did when it was sent again: the stream
    error h2spec wants is its failure not reproduced (a skip, as a case that passes alone); a refusal that ended the
    stream passes (§8.1.2.6's MAY), and so does, where the malformed part came after the headers (`late`), a complete
    response followed by RST_STREAM NO_ERROR (§8.1's MAY); anything else fails."""
    seen = f"{answer.describe()} when sent again; h2spec: {h2spec_got[:200]}"
    if answer.stream_error:
        return {"verdict": "skip", "got": f"not reproduced: {seen}"}
    refusal = answer.status is not None and verdicts.refused(str(answer.status)) and answer.ended
    early = late and answer.ended and answer.reset == NO_ERROR
    return {"verdict": "pass" if refusal or early else "fail", "got": seen}
