"""The cases on a request's framing (where its body ends): Content-Length, Transfer-Encoding, and the published
request-smuggling vectors (CL.TE, TE.CL, TE.TE, CL.0, a request hidden in a body), where two parsers that disagree
on a body's end let a request through that one of them never saw. Rows as in cases_syntax.py."""

from __future__ import annotations

from harness.probe.case import HOST, MAY, MUST, SHOULD, Case, get, group, post, request

HANDLED = ("handled",)
REJECT = ("400",)
REJECT_AND_CLOSE = ("400+close",)
# RFC 9112 §6.1: both Transfer-Encoding and Content-Length: rejected, or read by the chunked coding; closed either way
BOTH_CLOSE = ("400+close", "handled+close")
UNKNOWN_CODING = ("400+close", "501+close")  # §6.3, rule 4 (400 and close) or RFC 9112 §6.1's 501 for a coding
WAIT = ("none", "400+close", "408+close", "close")
# a broken body: answered from the head alone and closed, or closed without an answer: safe, but the body's framing
# untested (an unfinished body may also be answered from the head and the rest read and discarded: `handled`)
EARLY = ("handled+close", "close")
OTHER_ERROR = ("refused",)  # refused with another status than 400, where the RFC names none
HIDDEN = b"GET /hidden HTTP/1.1\r\nHost: probe\r\n\r\n"  # a second request where a body should be

CONTENT_LENGTH = group(
    "content-length",
    "RFC 9112 §6.3",
    [
        ("CL-01", MUST, "a body of Content-Length bytes", post("Content-Length: 5", body=b"hello"), HANDLED, ()),
        ("CL-02", MUST, "Content-Length: 0", post("Content-Length: 0"), HANDLED, ()),
        ("CL-03", MUST, "not a number", post("Content-Length: abc", body=b"hello"), REJECT_AND_CLOSE, REJECT),
        ("CL-04", MUST, "negative", post("Content-Length: -5", body=b"hello"), REJECT_AND_CLOSE, REJECT),
        ("CL-05", MUST, "a plus sign", post("Content-Length: +5", body=b"hello"), REJECT_AND_CLOSE, REJECT),
        ("CL-06", MUST, "hexadecimal", post("Content-Length: 0x5", body=b"hello"), REJECT_AND_CLOSE, REJECT),
        ("CL-07", MUST, "empty", post("Content-Length:", body=b"hello"), REJECT_AND_CLOSE, REJECT),
        (
            "CL-08",
            MUST,
            "a space inside the number",
            post("Content-Length: 1 0", body=b"helloworld"),
            REJECT_AND_CLOSE,
            REJECT,
        ),
        (
            "CL-09",
            MAY,
            "RFC 9110 §8.6: leading zeros (still 1*DIGIT)",
            post("Content-Length: 005", body=b"hello"),
            HANDLED,
            REJECT,
        ),
        (
            "CL-10",
            MUST,
            "RFC 9110 §8.6: larger than any integer",
            post("Content-Length: 99999999999999999999999", body=b"hello"),
            ("400", "413"),
            ("none",),
        ),
        (
            "CL-11",
            MUST,
            "two lines that differ",
            post("Content-Length: 5", "Content-Length: 6", body=b"hello!"),
            REJECT_AND_CLOSE,
            REJECT,
        ),
        (
            "CL-12",
            MAY,
            "RFC 9110 §8.6: two lines that agree",
            post("Content-Length: 5", "Content-Length: 5", body=b"hello"),
            REJECT,
            HANDLED,
        ),
        (
            "CL-13",
            MAY,
            "RFC 9110 §8.6: a list that agrees",
            post("Content-Length: 5, 5", body=b"hello"),
            REJECT,
            HANDLED,
        ),
        ("CL-14", MUST, "a list that differs", post("Content-Length: 5, 6", body=b"hello!"), REJECT_AND_CLOSE, REJECT),
        (
            "CL-15",
            MUST,
            "a body shorter than its Content-Length",
            post("Content-Length: 10", body=b"hello"),
            WAIT,
            HANDLED,
        ),
        ("CL-16", MAY, "§6.3 rule 7: POST without a body or its length", post(), ("handled", "411"), ()),
        (
            "CL-17",
            MUST,
            "RFC 9110 §5.6.3: OWS after the number",
            post("Content-Length: 5 ", body=b"hello"),
            HANDLED,
            (),
        ),
    ],
)

TRANSFER_ENCODING = group(
    "transfer-encoding",
    "RFC 9112 §7.1",
    [
        (
            "TE-01",
            MUST,
            "a chunked body",
            post("Transfer-Encoding: chunked", body=b"5\r\nhello\r\n0\r\n\r\n"),
            HANDLED,
            (),
        ),
        (
            "TE-02",
            MUST,
            "§7: coding names are case-insensitive: CHUNKED",
            post("Transfer-Encoding: CHUNKED", body=b"5\r\nhello\r\n0\r\n\r\n"),
            HANDLED,
            (),
        ),
        (
            "TE-03",
            MUST,
            "§7.1.2: trailer fields after the last chunk",
            post("Transfer-Encoding: chunked", body=b"5\r\nhello\r\n0\r\nX-Trailer: 1\r\n\r\n"),
            HANDLED,
            (),
        ),
        (
            "TE-04",
            MUST,
            "§7.1.1: a chunk extension to ignore",
            post("Transfer-Encoding: chunked", body=b"5;name=value\r\nhello\r\n0\r\n\r\n"),
            HANDLED,
            (),
        ),
        (
            "TE-05",
            MUST,
            "§7.1: chunk-size larger than any integer",
            post("Transfer-Encoding: chunked", body=b"FFFFFFFFFFFFFFFFFFFFFFFF\r\nhello\r\n0\r\n\r\n"),
            ("400", "413"),
            ("none", *EARLY),
        ),
        (
            "TE-06",
            MUST,
            "§7.1: chunk-size not hexadecimal",
            post("Transfer-Encoding: chunked", body=b"zz\r\nhello\r\n0\r\n\r\n"),
            REJECT,
            EARLY + OTHER_ERROR,
        ),
        (
            "TE-07",
            MUST,
            "§7.1: chunk-size with a 0x prefix",
            post("Transfer-Encoding: chunked", body=b"0x5\r\nhello\r\n0\r\n\r\n"),
            REJECT,
            EARLY + OTHER_ERROR,
        ),
        (
            "TE-08",
            MUST,
            "§7.1: chunk-size after a space",
            post("Transfer-Encoding: chunked", body=b" 5\r\nhello\r\n0\r\n\r\n"),
            REJECT,
            EARLY + OTHER_ERROR,
        ),
        (
            "TE-09",
            MUST,
            "§7.1: chunk data longer than its size",
            post("Transfer-Encoding: chunked", body=b"5\r\nhelloXX\r\n0\r\n\r\n"),
            REJECT,
            EARLY + OTHER_ERROR,
        ),
        (
            "TE-10",
            MAY,
            "§2.2: chunk lines ended by bare LF",
            post("Transfer-Encoding: chunked", body=b"5\nhello\n0\n\n"),
            REJECT,
            HANDLED + OTHER_ERROR,
        ),
        (
            "TE-11",
            SHOULD,
            "§7.1.1: a chunk extension with a bare LF inside",
            post("Transfer-Encoding: chunked", body=b"5;a\nb\r\nhello\r\n0\r\n\r\n"),
            REJECT,
            EARLY + OTHER_ERROR,
        ),
        (
            "TE-12",
            SHOULD,
            "§7.1.1: a chunk extension with a quote where a token goes",
            post("Transfer-Encoding: chunked", body=b'5;a"b\r\nhello\r\n0\r\n\r\n'),
            REJECT,
            HANDLED + OTHER_ERROR,
        ),
        (
            "TE-13",
            SHOULD,
            "§7.1: whitespace after chunk-size with no extension",
            post("Transfer-Encoding: chunked", body=b"5 \r\nhello\r\n0\r\n\r\n"),
            REJECT,
            HANDLED + OTHER_ERROR,
        ),
        (
            "TE-14",
            MUST,
            "a chunked body never finished",
            post("Transfer-Encoding: chunked", body=b"5\r\nhello\r\n"),
            WAIT,
            HANDLED,
        ),
        (
            "TE-15",
            MUST,
            "§6.3 rule 4: chunked, then gzip (chunked not last)",
            post("Transfer-Encoding: chunked, gzip", body=b"5\r\nhello\r\n0\r\n\r\n"),
            UNKNOWN_CODING,
            ("400", "501"),
        ),
        (
            "TE-16",
            MUST,
            "§6.3 rule 4: identity (no longer a coding)",
            post("Transfer-Encoding: identity", body=b"hello"),
            UNKNOWN_CODING,
            ("400", "501"),
        ),
        (
            "TE-17",
            MUST,
            "§6.3 rule 4: gzip alone",
            post("Transfer-Encoding: gzip", body=b"hello"),
            UNKNOWN_CODING,
            ("400", "501"),
        ),
        (
            "TE-18",
            MUST,
            "§6.3 rule 4: xchunked",
            post("Transfer-Encoding: xchunked", body=b"5\r\nhello\r\n0\r\n\r\n"),
            UNKNOWN_CODING,
            ("400", "501"),
        ),
        (
            "TE-19",
            SHOULD,
            "§7: chunked twice (two header lines)",
            post("Transfer-Encoding: chunked", "Transfer-Encoding: chunked", body=b"5\r\nhello\r\n0\r\n\r\n"),
            REJECT,
            HANDLED + OTHER_ERROR,
        ),
        (
            "TE-20",
            MUST,
            "RFC 9110 §5.6.1: an empty list element before chunked",
            post("Transfer-Encoding: , chunked", body=b"5\r\nhello\r\n0\r\n\r\n"),
            HANDLED,
            REJECT,
        ),
        (
            "TE-21",
            MUST,
            "§6.1: HTTP/1.0 keep-alive with Transfer-Encoding and Content-Length",
            request(
                "POST /hello HTTP/1.0",
                HOST,
                "Connection: keep-alive",
                "Transfer-Encoding: chunked",
                "Content-Length: 5",
                body=b"0\r\n\r\n",
            )
            + get(),
            BOTH_CLOSE,
            (),
        ),
    ],
)

SMUGGLING = group(
    "smuggling",
    "RFC 9112 §6.1",
    [
        (
            "SM-01",
            MUST,
            "CL.TE: Content-Length covers a chunked body and a hidden request",
            post(f"Content-Length: {5 + len(HIDDEN)}", "Transfer-Encoding: chunked", body=b"0\r\n\r\n" + HIDDEN),
            BOTH_CLOSE,
            (),
        ),
        (
            "SM-02",
            MUST,
            "TE.CL: the chunk holds a hidden request, Content-Length stops before it",
            post(
                "Content-Length: 4", "Transfer-Encoding: chunked", body=b"%x\r\n%s\r\n0\r\n\r\n" % (len(HIDDEN), HIDDEN)
            ),
            BOTH_CLOSE,
            (),
        ),
        (
            "SM-03",
            MUST,
            "TE.TE: chunked, then a second Transfer-Encoding line (x)",
            post("Transfer-Encoding: chunked", "Transfer-Encoding: x", "Content-Length: 5", body=b"0\r\n\r\n"),
            UNKNOWN_CODING,
            (),
        ),
        (
            "SM-04",
            MUST,
            "§5.1: Transfer-Encoding with a space before the colon, and Content-Length",
            post("Transfer-Encoding : chunked", "Content-Length: 5", body=b"0\r\n\r\n"),
            REJECT,
            (),
        ),
        (
            "SM-05",
            MUST,
            "Transfer-Encoding:\\vchunked (a vertical tab is not whitespace) with Content-Length",
            post("Transfer-Encoding:\x0bchunked", "Content-Length: 5", body=b"0\r\n\r\n"),
            UNKNOWN_CODING,
            (),
        ),
        (
            "SM-06",
            MUST,
            "§5.2: Transfer-Encoding folded onto a second line, with Content-Length",
            post("Transfer-Encoding:", " chunked", "Content-Length: 5", body=b"0\r\n\r\n"),
            BOTH_CLOSE,
            (),
        ),
        (
            "SM-07",
            MUST,
            'Transfer-Encoding: "chunked" (quoted) with Content-Length',
            post('Transfer-Encoding: "chunked"', "Content-Length: 5", body=b"0\r\n\r\n"),
            UNKNOWN_CODING,
            (),
        ),
        (
            "SM-08",
            MUST,
            "§6.3: a request in a Content-Length body is body, not a request",
            post(f"Content-Length: {len(HIDDEN)}", body=HIDDEN),
            HANDLED,
            (),
        ),
        (
            "SM-09",
            MUST,
            "CL.0: GET with a Content-Length body holding a request",
            get(f"Content-Length: {len(HIDDEN)}") + HIDDEN,
            ("200",),
            REJECT_AND_CLOSE,
        ),
        (
            "SM-10",
            MUST,
            "two Content-Length lines, 0 and the length of a hidden request",
            post("Content-Length: 0", f"Content-Length: {len(HIDDEN)}", body=HIDDEN),
            REJECT_AND_CLOSE,
            (),
        ),
        (
            "SM-11",
            MUST,
            "§6.3: a pipelined request after a chunked body",
            post("Transfer-Encoding: chunked", body=b"5\r\nhello\r\n0\r\n\r\n") + get(),
            ("handled 200",),
            EARLY,
        ),
        (
            "SM-12",
            MUST,
            "a chunked body holding a request",
            post("Transfer-Encoding: chunked", body=b"%x\r\n%s\r\n0\r\n\r\n" % (len(HIDDEN), HIDDEN)),
            HANDLED,
            (),
        ),
        (
            "SM-13",
            MUST,
            "§5.1: Content-Length with a space before the colon, hiding a request",
            get(f"Content-Length : {len(HIDDEN)}") + HIDDEN,
            REJECT,
            (),
        ),
    ],
)

FRAMING: list[Case] = CONTENT_LENGTH + TRANSFER_ENCODING + SMUGGLING
