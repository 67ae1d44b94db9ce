"""The cases on a request's request-line (RFC 9112 §3): its method, its target and its version, and the spaces
between them. Rows as in cases_syntax.py, which runs them with the other cases on a request's syntax.

A malformed version or request-line is grammar: the recipient's only requirement is §3's SHOULD (400 or 301), so
these are SHOULDs, and an answer other than the preferred one warns (verdicts.py)."""

from __future__ import annotations

from harness.conformance.case import HOST, OK, REJECT, case, get, group, request

STATUS_400 = ("400", "505")  # a malformed version refused: 400, or 505 naming the version
ABSOLUTE_OK = ("200", "421")  # accepted, or refused as misdirected (host `probe` is not this server's)

# fmt: off
REQUEST_LINE = group(
    "request-line",
    [
        case(
            "RL-01", "invalid-request-line whitespace-words", "two spaces after the method",
            get(line="GET  /hello HTTP/1.1"), REJECT, OK,
        ),
        case(
            "RL-02", "invalid-request-line whitespace-words", "a tab between method and target",
            get(line="GET\t/hello HTTP/1.1"), REJECT, OK,
        ),
        case(
            "RL-03", "invalid-request-line whitespace-words", "a space after the version",
            get(line="GET /hello HTTP/1.1 "), REJECT, OK,
        ),
        case("RL-04", "invalid-request-line", "no request-target", get(line="GET HTTP/1.1"), ("400", "301")),
        case(
            "RL-05", "invalid-request-line", "no HTTP-version (an HTTP/0.9 request)", get(line="GET /hello"),
            ("400", "505"), ("none", "not-http"),
        ),
        case("RL-06", "invalid-request-line", "HTTP-name in lower case", get(line="GET /hello http/1.1"), STATUS_400),
        case("RL-07", "higher-minor", "HTTP/1.2, a newer minor version", get(line="GET /hello HTTP/1.2"), OK),
        case(
            "RL-08", "version-not-supported", "HTTP/2.0 in an HTTP/1 request-line",
            get(line="GET /hello HTTP/2.0"), ("505", "400", "close"),
        ),
        case(
            "RL-09", "version-not-supported", "HTTP/3.0", get(line="GET /hello HTTP/3.0"), ("505", "400", "close"),
        ),
        case(
            "RL-10", "invalid-request-line", "two-digit minor version HTTP/1.10", get(line="GET /hello HTTP/1.10"),
            STATUS_400,
        ),
        case("RL-11", "invalid-request-line", "leading zero HTTP/01.1", get(line="GET /hello HTTP/01.1"), STATUS_400),
        case("RL-12", "invalid-request-line", "version without minor HTTP/1", get(line="GET /hello HTTP/1"), STATUS_400),
        case(
            "RL-13", "absolute-form misdirected", "absolute-form target",
            get(line="GET http://probe/hello HTTP/1.1"), ABSOLUTE_OK,
        ),
        case(
            "RL-14", "absolute-form-host misdirected", "absolute-form; its host wins over a different Host",
            request("GET http://probe/hello HTTP/1.1", "Host: other.example"), ABSOLUTE_OK, strict=("400",),
        ),
        case("RL-15", "invalid-request-line", "asterisk-form with GET", get(line="GET * HTTP/1.1"), REJECT),
        case(
            "RL-16", "parse-grammar", "OPTIONS *", get(line="OPTIONS * HTTP/1.1"), ("2xx", "404", "405", "501"),
            strict=("400",),
        ),
        case("RL-17", "invalid-request-line", "authority-form with GET", get(line="GET probe:80 HTTP/1.1"), REJECT),
        case("RL-18", "invalid-request-line", "target without its leading /", get(line="GET hello HTTP/1.1"), REJECT),
        case("RL-19", "unknown-method", "an unknown method", get(line="PROBE /hello HTTP/1.1"), ("501", "405")),
        case(
            "RL-20", "unknown-method", "methods are case-sensitive: get", get(line="get /hello HTTP/1.1"),
            ("501", "405"),
        ),
        case(
            "RL-21", "uri-too-long", "a 100 kB request-target", get(line=f"GET /hello?{'a' * 100_000} HTTP/1.1"),
            ("414", "200"),
        ),
        case("RL-22", "invalid-request-line", "a control character in the method", get(line="G\x01ET /hello HTTP/1.1"), REJECT),
        case("RL-23", "invalid-request-line", "a space inside the target", get(line="GET /hel lo HTTP/1.1"), ("400", "301")),
        case("RL-24", "invalid-request-line", "a fragment in the target", get(line="GET /hello#frag HTTP/1.1"), REJECT),
        case("RL-25", "invalid-request-line", "a malformed percent-encoding", get(line="GET /%zz HTTP/1.1"), REJECT),
        case(
            "RL-26", "invalid-request-line", "raw UTF-8 bytes in the target",
            b"GET /h\xc3\xa9llo HTTP/1.1\r\n" + HOST.encode() + b"\r\n\r\n", REJECT,
        ),
    ],
)
# fmt: on
