"""The cases on a request's syntax: line endings, the request-line (cases_request_line.py's), header fields, Host,
connection handling and input that is not a request at all. Each row (case.case): id, the RFC sentences it cites
(requirements.py; the first sets its level), what it sends in a few words, the bytes, and the patterns that pass,
that warn as lenient and that warn as strict (verdicts.py)."""

from __future__ import annotations

from harness.conformance.case import HOST, OK, OTHER_ERROR, PATH, REJECT, WAIT, Case, case, get, group, request
from harness.conformance.cases_request_line import REQUEST_LINE

CLOSED_UNANSWERED = ("close",) + OTHER_ERROR  # refused without the 400 the RFC prefers: fails closed
ANY_4XX = ("4xx",)
MISDIRECTED_OK = ("200", "421")

# fmt: off
LINE_ENDINGS = group("line-endings", [
    case("LE-01", "bare-lf", "bare LF ends every line", request(f"GET {PATH} HTTP/1.1", HOST, eol=b"\n"), REJECT, OK),
    case("LE-02", "bare-lf", "bare LF ends a header line", b"GET /hello HTTP/1.1\r\nHost: probe\n\r\n", REJECT, OK),
    case("LE-03", "bare-lf", "bare LF ends the request-line", b"GET /hello HTTP/1.1\nHost: probe\r\n\r\n", REJECT, OK),
    # replaced by SP, `a b` is a valid value: 200 conforms (the lenient side)
    case("LE-04", "bare-cr not-the-grammar", "bare CR inside a header value", get("X-Probe: a\rb"), REJECT, OK,
         CLOSED_UNANSWERED),
    # replaced by SP, the request-line or the Host value is invalid: only a parser that ends a line at CR says 200
    case("LE-05", "bare-cr not-the-grammar", "bare CR ends the request-line",
         b"GET /hello HTTP/1.1\rHost: probe\r\n\r\n", REJECT, (), CLOSED_UNANSWERED),
    case("LE-06", "bare-cr not-the-grammar", "bare CR inside the request-target",
         b"GET /hel\rlo HTTP/1.1\r\nHost: probe\r\n\r\n", REJECT, (), CLOSED_UNANSWERED),
    case("LE-07", "empty-line-first", "an empty line (CRLF) before the request-line", b"\r\n" + get(), OK),
    case("LE-08", "empty-line-first", "three empty lines before the request-line (at least one is asked)",
         b"\r\n\r\n\r\n" + get(), ("200", "400")),
    case("LE-09", "bare-lf empty-line-first", "a bare LF line before the request-line", b"\n" + get(), ("200", "400")),
    case("LE-10", "field-value-ctl", "NUL inside a header value", get("X-Probe: a\x00b"), REJECT, OK,
         CLOSED_UNANSWERED),
    case("LE-11", "bare-cr not-the-grammar", "bare CR ends a header line",
         b"GET /hello HTTP/1.1\r\nHost: probe\rX-Probe: 1\r\n\r\n", REJECT, (), CLOSED_UNANSWERED),
])

HEADERS = group("headers", [
    case("HD-01", "space-before-colon", "a space before the colon", get("X-Probe : 1"), REJECT),
    case("HD-02", "space-before-colon", "a tab before the colon", get("X-Probe\t: 1"), REJECT),
    case("HD-03", "obs-fold", "obs-fold (a value continued on a line starting with SP)", get("X-Probe: a", " b"),
         REJECT, OK),
    case("HD-04", "whitespace-first-field", "whitespace before the first header line",
         request("GET /hello HTTP/1.1", " X-Probe: 1", HOST), REJECT, OK),
    case("HD-05", "not-the-grammar recover", "an empty field name", get(": 1"), REJECT),
    case("HD-06", "not-the-grammar recover", "a header line without a colon", get("X-Probe 1"), REJECT),
    case("HD-07", "not-the-grammar recover", "a control character in a field name", get("X-Pro\x01be: 1"), REJECT),
    case("HD-08", "not-the-grammar recover", "a space inside a field name", get("X Probe: 1"), REJECT),
    # SP at the start of a line after `Host: probe` is obs-fold: folded, Host is `probe` and 200 conforms
    case("HD-09", "obs-fold", "a line of whitespace only (an obs-fold of the line before)", get("   "), REJECT, OK),
    case("HD-10", "field-value-other", "a control character (0x01) in a value", get("X-Probe: a\x01b"), REJECT, OK),
    case("HD-11", "obs-text", "obs-text (0x80-0xFF) in a value", get("X-Probe: caf\xe9"), OK),
    case("HD-12", "ows", "OWS around a value", get("X-Probe: \t 1 \t"), OK),
    case("HD-13", "field-names-case", "field names are case-insensitive", request("GET /hello HTTP/1.1", "hOsT: probe"),
         OK),
    case("HD-14", "parse-grammar", "an empty value", get("X-Probe:"), OK),
    case("HD-15", "field-too-large", "a 100 kB header value", get("X-Probe: " + "a" * 100_000), ANY_4XX, OK),
    case("HD-16", "field-too-large", "1000 header lines", get(*(f"X-Probe-{i}: {i}" for i in range(1000))), ANY_4XX,
         OK),
    case("HD-17", "field-too-large", "a 100 kB field name", get("X" * 100_000 + ": 1"), ANY_4XX, OK),
    case("HD-18", "expect-unknown", "an expectation it does not know", get("Expect: probe"), ("417",), OK),
    case("HD-19", "not-the-grammar recover", "a field name of a non-token character (@)", get("X-Pro@be: 1"), REJECT),
])

HOST_HEADER = group("host", [
    case("HO-01", "host-400", "HTTP/1.1 without Host", request("GET /hello HTTP/1.1"), REJECT),
    case("HO-02", "host-400", "two Host lines, the same value", get(HOST), REJECT),
    case("HO-03", "host-400", "two Host lines, different values", get("Host: other.example"), REJECT),
    case("HO-04", "host-400", "a space inside Host", request("GET /hello HTTP/1.1", "Host: pro be"), REJECT),
    case("HO-05", "host-400", "a port that is not a number", request("GET /hello HTTP/1.1", "Host: probe:port"),
         REJECT),
    case("HO-06", "host-400", "userinfo in Host", request("GET /hello HTTP/1.1", "Host: user@probe"), REJECT),
    case("HO-07", "host-400", "a list in Host", request("GET /hello HTTP/1.1", "Host: probe, other.example"), REJECT),
    # uri-host may be an empty reg-name: the value is valid
    case("HO-08", "parse-grammar misdirected", "an empty Host", request("GET /hello HTTP/1.1", "Host:"),
         MISDIRECTED_OK, (), REJECT),
    case("HO-09", "host-400", "HTTP/1.0 without Host (the 400 is HTTP/1.1's)", request("GET /hello HTTP/1.0"), OK,
         (), REJECT),
    case("HO-10", "host-400", "absolute-form HTTP/1.1 without Host", request("GET http://probe/hello HTTP/1.1"),
         REJECT),
    case("HO-11", "parse-grammar misdirected", "Host with a port", request("GET /hello HTTP/1.1", "Host: probe:8080"),
         MISDIRECTED_OK),
    case("HO-12", "parse-grammar misdirected", "Host as an IPv6 literal",
         request("GET /hello HTTP/1.1", "Host: [::1]:8080"), MISDIRECTED_OK),
])

CONNECTION = group("connection", [
    case("CN-01", "close-option", "Connection: close", get("Connection: close"), ("200+close",)),
    case("CN-02", "http10-close", "HTTP/1.0 without keep-alive", request("GET /hello HTTP/1.0"), ("200+close",)),
    # the recipient may or may not wish to honour HTTP/1.0 keep-alive
    case("CN-03", "http10-close", "HTTP/1.0 with Connection: keep-alive",
         request("GET /hello HTTP/1.0", "Connection: keep-alive"), ("200+open", "200+close")),
    case("CN-04", "persist", "HTTP/1.1 persists by default", get(), ("200+open",), (), ("200+close",)),
    # any side MAY close at any time (§9.5): closing after the first is safe; answering the third is not
    case("CN-05", "close-option", "nothing answered after Connection: close", get() + get("Connection: close") + get(),
         ("200 200+close",), (), ("200+close",)),
    case("CN-06", "pipeline-order", "three pipelined requests", get() * 3, ("200 200 200",), (),
         ("200+close", "200 200+close")),
])

MALFORMED = group("malformed", [
    case("MF-01", "not-the-grammar", "256 bytes of binary garbage", bytes((i * 73 + 41) % 256 for i in range(256)),
         REJECT),
    case("MF-02", "not-the-grammar", "NUL bytes only", b"\x00" * 64, REJECT),
    case("MF-03", "empty-line-first", "empty lines only, then nothing", b"\r\n" * 4, WAIT),
    case("MF-04", "incomplete", "an unfinished request-line", b"GET /hel", WAIT),
    case("MF-05", "incomplete", "headers never ended", b"GET /hello HTTP/1.1\r\nHost: probe\r\n", WAIT),
    case("MF-06", "not-the-grammar", "a TLS ClientHello on the plain port",
         bytes.fromhex("16030100a5010000a10303") + bytes(32), REJECT),
    case("MF-07", "version-not-supported", "the HTTP/2 preface on the HTTP/1.1 port", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
         ("505", "400", "close", "not-http")),
    case("MF-08", "not-the-grammar", "a 64 kB request-line never ended", b"GET /" + b"a" * 65_536,
         ("414", "400", "431", "close")),
    case("MF-09", "invalid-request-line", "a request-line of spaces", request("   ", HOST), REJECT),
    case("MF-10", "invalid-request-line", "a method only", b"GET\r\n\r\n", REJECT),
])
# fmt: on

SYNTAX: list[Case] = LINE_ENDINGS + REQUEST_LINE + HEADERS + HOST_HEADER + CONNECTION + MALFORMED
