"""The cases on a request's syntax: line endings, the request-line, header fields, Host, connection handling and
input that is not a request at all. Each row: id, level, what (`§x.y:` first where the section is not the
category's), the bytes sent, the patterns that pass and those that warn (verdicts.py)."""
from __future__ import annotations

from harness.probe.case import HOST, MAY, MUST, PATH, SHOULD, Case, get, group, request

REJECT = ("400",)
REJECT_OR_CLOSE = ("400", "close")
OTHER_ERROR = ("refused",)  # refused with another status than the 400 the RFC prefers
OK = ("200",)
LENIENT = ("200",)
WAIT = ("none", "400+close", "408+close", "close")  # an unfinished request: wait for the rest, or give up and close

LINE_ENDINGS = group("line-endings", "RFC 9112 §2.2", [
    ("LE-01", MAY, "bare LF ends every line", request(f"GET {PATH} HTTP/1.1", HOST, eol=b"\n"), REJECT, LENIENT + OTHER_ERROR),
    ("LE-02", MAY, "bare LF ends a header line", b"GET /hello HTTP/1.1\r\nHost: probe\n\r\n", REJECT, LENIENT + OTHER_ERROR),
    ("LE-03", MAY, "bare LF ends the request-line", b"GET /hello HTTP/1.1\nHost: probe\r\n\r\n", REJECT, LENIENT + OTHER_ERROR),
    ("LE-04", MUST, "bare CR inside a header value", get("X-Probe: a\rb"), REJECT, LENIENT + OTHER_ERROR),
    ("LE-05", MUST, "bare CR ends the request-line", b"GET /hello HTTP/1.1\rHost: probe\r\n\r\n", REJECT_OR_CLOSE, OTHER_ERROR),
    ("LE-06", MUST, "bare CR inside the request-target", b"GET /hel\rlo HTTP/1.1\r\nHost: probe\r\n\r\n",
     REJECT_OR_CLOSE, OTHER_ERROR),
    ("LE-07", SHOULD, "an empty line (CRLF) before the request-line", b"\r\n" + get(), OK, REJECT + OTHER_ERROR),
    ("LE-08", SHOULD, "three empty lines before the request-line", b"\r\n\r\n\r\n" + get(), OK, REJECT + OTHER_ERROR),
    ("LE-09", MAY, "a bare LF line before the request-line", b"\n" + get(), OK, REJECT + OTHER_ERROR),
    ("LE-10", MUST, "RFC 9110 §5.5: NUL inside a header value", get("X-Probe: a\x00b"), REJECT, LENIENT + OTHER_ERROR),
    ("LE-11", MUST, "bare CR ends a header line", b"GET /hello HTTP/1.1\r\nHost: probe\rX-Probe: 1\r\n\r\n",
     REJECT, LENIENT + OTHER_ERROR),
])

REQUEST_LINE = group("request-line", "RFC 9112 §3", [
    ("RL-01", SHOULD, "two spaces after the method", get(line="GET  /hello HTTP/1.1"), REJECT, LENIENT + OTHER_ERROR),
    ("RL-02", SHOULD, "a tab between method and target", get(line="GET\t/hello HTTP/1.1"), REJECT, LENIENT + OTHER_ERROR),
    ("RL-03", SHOULD, "a space after the version", get(line="GET /hello HTTP/1.1 "), REJECT, LENIENT + OTHER_ERROR),
    ("RL-04", SHOULD, "no request-target", get(line="GET HTTP/1.1"), REJECT_OR_CLOSE, ("301",) + OTHER_ERROR),
    ("RL-05", SHOULD, "no HTTP-version (an HTTP/0.9 request)", get(line="GET /hello"), REJECT_OR_CLOSE,
     ("505", "none", "not-http") + OTHER_ERROR),
    ("RL-06", MUST, "§2.3: HTTP-name in lower case", get(line="GET /hello http/1.1"), REJECT_OR_CLOSE, ("505",)),
    ("RL-07", SHOULD, "RFC 9110 §6.2: HTTP/1.2, a newer minor version", get(line="GET /hello HTTP/1.2"), OK,
     ("505", "400")),
    ("RL-08", SHOULD, "RFC 9110 §15.6.6: HTTP/2.0 in an HTTP/1 request-line", get(line="GET /hello HTTP/2.0"),
     ("505", "400", "close"), ()),
    ("RL-09", SHOULD, "RFC 9110 §15.6.6: HTTP/3.0", get(line="GET /hello HTTP/3.0"), ("505", "400", "close"), ()),
    ("RL-10", MUST, "§2.3: two-digit minor version HTTP/1.10", get(line="GET /hello HTTP/1.10"),
     ("400", "505", "close"), ()),
    ("RL-11", MUST, "§2.3: leading zero HTTP/01.1", get(line="GET /hello HTTP/01.1"), ("400", "505", "close"), ()),
    ("RL-12", MUST, "§2.3: version without minor HTTP/1", get(line="GET /hello HTTP/1"), ("400", "505", "close"), ()),
    ("RL-13", MUST, "§3.2.2: absolute-form target", get(line="GET http://probe/hello HTTP/1.1"), OK, ()),
    ("RL-14", MUST, "§3.2.2: absolute-form; its host wins over a different Host",
     request("GET http://probe/hello HTTP/1.1", "Host: other.example"), OK, ()),
    ("RL-15", SHOULD, "§3.2.4: asterisk-form with GET", get(line="GET * HTTP/1.1"), REJECT, ("404", "close") + OTHER_ERROR),
    ("RL-16", SHOULD, "§3.2.4: OPTIONS *", get(line="OPTIONS * HTTP/1.1"), ("2xx", "404", "405", "501"), REJECT),
    ("RL-17", SHOULD, "§3.2.3: authority-form with GET", get(line="GET probe:80 HTTP/1.1"), REJECT, ("404", "close") + OTHER_ERROR),
    ("RL-18", SHOULD, "§3.2.1: target without its leading /", get(line="GET hello HTTP/1.1"), REJECT, ("404", "close") + OTHER_ERROR),
    ("RL-19", SHOULD, "RFC 9110 §9.1: an unknown method", get(line="PROBE /hello HTTP/1.1"), ("501", "405"),
     ("400", "404", "2xx")),
    ("RL-20", SHOULD, "RFC 9110 §9.1: methods are case-sensitive: get", get(line="get /hello HTTP/1.1"),
     ("501", "405"), ("400", "404", "2xx")),
    ("RL-21", MUST, "a 100 kB request-target", get(line=f"GET /hello?{'a' * 100_000} HTTP/1.1"), ("414", "200"),
     ("400", "431", "close")),
    ("RL-22", SHOULD, "a control character in the method", get(line="G\x01ET /hello HTTP/1.1"), REJECT_OR_CLOSE, ("501",) + OTHER_ERROR),
    ("RL-23", SHOULD, "a space inside the target", get(line="GET /hel lo HTTP/1.1"), REJECT_OR_CLOSE, ("301",) + OTHER_ERROR),
    ("RL-24", SHOULD, "§3.2.1: a fragment in the target", get(line="GET /hello#frag HTTP/1.1"), REJECT, ("200", "404") + OTHER_ERROR),
    ("RL-25", SHOULD, "RFC 3986 §2.1: a malformed percent-encoding", get(line="GET /%zz HTTP/1.1"), REJECT, ("404",) + OTHER_ERROR),
    ("RL-26", SHOULD, "raw UTF-8 bytes in the target", b"GET /h\xc3\xa9llo HTTP/1.1\r\nHost: probe\r\n\r\n",
     REJECT, ("404",) + OTHER_ERROR),
])

HEADERS = group("headers", "RFC 9112 §5", [
    ("HD-01", MUST, "§5.1: a space before the colon", get("X-Probe : 1"), REJECT, ()),
    ("HD-02", MUST, "§5.1: a tab before the colon", get("X-Probe\t: 1"), REJECT, ()),
    ("HD-03", MUST, "§5.2: obs-fold (a value continued on a line starting with SP)", get("X-Probe: a", " b"),
     REJECT, LENIENT + OTHER_ERROR),
    ("HD-04", MUST, "§2.2: whitespace before the first header line", request("GET /hello HTTP/1.1", " X-Probe: 1",
                                                                            HOST), ("400", "200"), ()),
    ("HD-05", MUST, "an empty field name", get(": 1"), REJECT, ("close",) + OTHER_ERROR),
    ("HD-06", MUST, "a header line without a colon", get("X-Probe 1"), REJECT, ("close",) + OTHER_ERROR),
    ("HD-07", MUST, "a control character in a field name", get("X-Pro\x01be: 1"), REJECT, ("close",) + OTHER_ERROR),
    ("HD-08", MUST, "a space inside a field name", get("X Probe: 1"), REJECT, ("close",) + OTHER_ERROR),
    ("HD-09", MUST, "a header line of whitespace only", get("   "), REJECT, ("close",) + OTHER_ERROR),
    ("HD-10", MAY, "RFC 9110 §5.5: a control character (0x01) in a value", get("X-Probe: a\x01b"), REJECT, LENIENT + OTHER_ERROR),
    ("HD-11", MAY, "RFC 9110 §5.5: obs-text (0x80-0xFF) in a value", get("X-Probe: caf\xe9"), OK, REJECT),
    ("HD-12", MUST, "RFC 9110 §5.6.3: OWS around a value", get("X-Probe: \t 1 \t"), OK, ()),
    ("HD-13", MUST, "RFC 9110 §5.1: field names are case-insensitive", request("GET /hello HTTP/1.1", "hOsT: probe"),
     OK, ()),
    ("HD-14", MUST, "RFC 9110 §5.5: an empty value", get("X-Probe:"), OK, ()),
    ("HD-15", SHOULD, "RFC 6585 §5: a 100 kB header value", get("X-Probe: " + "a" * 100_000), ("431", "400"),
     ("200", "close")),
    ("HD-16", MAY, "RFC 6585 §5: 1000 header lines", get(*(f"X-Probe-{i}: {i}" for i in range(1000))),
     ("431", "400", "200"), ("close",)),
    ("HD-17", SHOULD, "RFC 6585 §5: a 100 kB field name", get("X" * 100_000 + ": 1"), ("431", "400"),
     ("200", "close")),
    ("HD-18", MAY, "RFC 9110 §10.1.1: an expectation it does not know", get("Expect: probe"), ("417",), OK),
    ("HD-19", MUST, "§5: a field name of a non-token character (@)", get("X-Pro@be: 1"), REJECT, ("close",) + OTHER_ERROR),
])

HOST_HEADER = group("host", "RFC 9112 §3.2", [
    ("HO-01", MUST, "HTTP/1.1 without Host", request("GET /hello HTTP/1.1"), ("400",), ()),
    ("HO-02", MUST, "two Host lines, the same value", get(HOST), ("400",), ()),
    ("HO-03", MUST, "two Host lines, different values", get("Host: other.example"), ("400",), ()),
    ("HO-04", MUST, "a space inside Host", request("GET /hello HTTP/1.1", "Host: pro be"), ("400",), ()),
    ("HO-05", MUST, "a port that is not a number", request("GET /hello HTTP/1.1", "Host: probe:port"), ("400",), ()),
    ("HO-06", MUST, "userinfo in Host", request("GET /hello HTTP/1.1", "Host: user@probe"), ("400",), ()),
    ("HO-07", MUST, "a list in Host", request("GET /hello HTTP/1.1", "Host: probe, other.example"), ("400",), ()),
    ("HO-08", MAY, "an empty Host (allowed for an empty authority)", request("GET /hello HTTP/1.1", "Host:"), OK,
     ("400",)),
    ("HO-09", MUST, "HTTP/1.0 without Host (Host is HTTP/1.1's)", request("GET /hello HTTP/1.0"), OK, ()),
    ("HO-10", MUST, "absolute-form without Host", request("GET http://probe/hello HTTP/1.1"), ("400",), OK),
    ("HO-11", MUST, "Host with a port", request("GET /hello HTTP/1.1", "Host: probe:8080"), OK, ()),
    ("HO-12", MUST, "Host as an IPv6 literal", request("GET /hello HTTP/1.1", "Host: [::1]:8080"), OK, ()),
])

CONNECTION = group("connection", "RFC 9112 §9", [
    ("CN-01", MUST, "§9.6: Connection: close", get("Connection: close"), ("200+close",), ()),
    ("CN-02", MUST, "§9.3: HTTP/1.0 without keep-alive", request("GET /hello HTTP/1.0"), ("200+close",), ()),
    ("CN-03", SHOULD, "§9.3: HTTP/1.0 with Connection: keep-alive",
     request("GET /hello HTTP/1.0", "Connection: keep-alive"), ("200+open",), ("200+close",)),
    ("CN-04", SHOULD, "§9.3: HTTP/1.1 persists by default", get(), ("200+open",), ("200+close",)),
    ("CN-05", MUST, "§9.6: nothing answered after Connection: close",
     get() + get("Connection: close") + get(), ("200 200+close",), ()),
    ("CN-06", MUST, "§9.3.2: three pipelined requests", get() * 3, ("200 200 200",), ()),
])

MALFORMED = group("malformed", "RFC 9112 §2.2", [
    ("MF-01", SHOULD, "256 bytes of binary garbage", bytes((i * 73 + 41) % 256 for i in range(256)), REJECT_OR_CLOSE,
     ("none",) + OTHER_ERROR),
    ("MF-02", SHOULD, "NUL bytes only", b"\x00" * 64, REJECT_OR_CLOSE, ("none",) + OTHER_ERROR),
    ("MF-03", MAY, "empty lines only, then nothing", b"\r\n" * 4, WAIT, ()),
    ("MF-04", MUST, "an unfinished request-line", b"GET /hel", WAIT, ()),
    ("MF-05", MUST, "headers never ended", b"GET /hello HTTP/1.1\r\nHost: probe\r\n", WAIT, ()),
    ("MF-06", SHOULD, "a TLS ClientHello on the plain port", bytes.fromhex("16030100a5010000a10303") + bytes(32),
     REJECT_OR_CLOSE, ("none",) + OTHER_ERROR),
    ("MF-07", MAY, "RFC 9113 §3.3: the HTTP/2 preface on the HTTP/1.1 port", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
     ("505", "400", "close", "not-http"), ("none",) + OTHER_ERROR),
    ("MF-08", SHOULD, "a 64 kB request-line never ended", b"GET /" + b"a" * 65_536, ("414", "400", "431", "close"),
     ("none",) + OTHER_ERROR),
    ("MF-09", SHOULD, "a request-line of spaces", request("   ", HOST), REJECT_OR_CLOSE, OTHER_ERROR),
    ("MF-10", SHOULD, "a method only", b"GET\r\n\r\n", REJECT_OR_CLOSE, ("none",) + OTHER_ERROR),
])

SYNTAX: list[Case] = LINE_ENDINGS + REQUEST_LINE + HEADERS + HOST_HEADER + CONNECTION + MALFORMED
