"""The cases on a request's framing (where its body ends): Content-Length, Transfer-Encoding, and the published
request-smuggling vectors (CL.TE, TE.CL, TE.TE, CL.0, a request hidden in a body), where two parsers that disagree
on a body's end let a request through that one of them never saw. Rows as in cases_syntax.py; the two-step
versions, judged by what a follow-up request receives, are cases_desync.py's."""

from __future__ import annotations

from harness.conformance.case import HOST, OTHER_ERROR, REJECT, WAIT, Case, case, get, group, post, request

HANDLED = ("handled",)
REJECT_AND_CLOSE = ("400+close",)
# RFC 9112 §6.1: both Transfer-Encoding and Content-Length: rejected, or read by the chunked coding; closed either way
BOTH_CLOSE = ("400+close", "handled+close")
REFUSED_CLOSE = ("refused+close",)
# §6.3: chunked not the final coding: 400 and close; §6.1's 501 for a coding it does not understand, closed too
UNKNOWN_CODING = ("400+close", "501+close")
LENGTH_REQUIRED = ("411",)  # §6.3: a server MAY refuse a body without a Content-Length
# a broken body: answered from the head alone and closed, or closed without an answer: safe, but the body's framing
# untested
EARLY = ("handled+close", "close")
HIDDEN = b"GET /hidden HTTP/1.1\r\nHost: probe\r\n\r\n"  # a second request where a body should be
CHUNKED = "Transfer-Encoding: chunked"
HELLO_CHUNKS = b"5\r\nhello\r\n0\r\n\r\n"

# fmt: off
CONTENT_LENGTH = group("content-length", [
    case("CL-01", "content-length-body", "a body of Content-Length bytes", post("Content-Length: 5", body=b"hello"),
         HANDLED),
    case("CL-02", "content-length-body", "Content-Length: 0", post("Content-Length: 0"), HANDLED),
    case("CL-03", "invalid-content-length", "not a number", post("Content-Length: abc", body=b"hello"),
         REJECT_AND_CLOSE),
    case("CL-04", "invalid-content-length", "negative", post("Content-Length: -5", body=b"hello"), REJECT_AND_CLOSE),
    case("CL-05", "invalid-content-length", "a plus sign", post("Content-Length: +5", body=b"hello"), REJECT_AND_CLOSE),
    case("CL-06", "invalid-content-length", "hexadecimal", post("Content-Length: 0x5", body=b"hello"),
         REJECT_AND_CLOSE),
    case("CL-07", "invalid-content-length", "empty", post("Content-Length:", body=b"hello"), REJECT_AND_CLOSE),
    case("CL-08", "invalid-content-length", "a space inside the number",
         post("Content-Length: 1 0", body=b"helloworld"), REJECT_AND_CLOSE),
    # 1*DIGIT: leading zeros are valid
    case("CL-09", "content-length-body", "leading zeros (still 1*DIGIT)", post("Content-Length: 005", body=b"hello"),
         HANDLED, (), REJECT),
    case("CL-10", "content-length-overflow", "larger than any integer",
         post("Content-Length: 99999999999999999999999", body=b"hello"), ("400", "413"), ("none",),
         ("close",) + OTHER_ERROR),
    case("CL-11", "invalid-content-length", "two lines that differ",
         post("Content-Length: 5", "Content-Length: 6", body=b"hello!"), REJECT_AND_CLOSE),
    case("CL-12", "content-length-list", "two lines that agree",
         post("Content-Length: 5", "Content-Length: 5", body=b"hello"), REJECT, HANDLED),
    case("CL-13", "content-length-list", "a list that agrees", post("Content-Length: 5, 5", body=b"hello"), REJECT,
         HANDLED),
    case("CL-14", "invalid-content-length", "a list that differs", post("Content-Length: 5, 6", body=b"hello!"),
         REJECT_AND_CLOSE),
    case("CL-15", "incomplete", "a body shorter than its Content-Length", post("Content-Length: 10", body=b"hello"),
         WAIT, HANDLED),
    case("CL-16", "no-length", "POST without a body or its length", post(), ("handled", "411")),
    case("CL-17", "ows", "OWS after the number", post("Content-Length: 5 ", body=b"hello"), HANDLED),
])

TRANSFER_ENCODING = group("transfer-encoding", [
    case("TE-01", "chunked", "a chunked body", post(CHUNKED, body=HELLO_CHUNKS), HANDLED, (), LENGTH_REQUIRED),
    case("TE-02", "chunked", "coding names are case-insensitive: CHUNKED",
         post("Transfer-Encoding: CHUNKED", body=HELLO_CHUNKS), HANDLED, (), LENGTH_REQUIRED),
    case("TE-03", "chunked", "trailer fields after the last chunk",
         post(CHUNKED, body=b"5\r\nhello\r\n0\r\nX-Trailer: 1\r\n\r\n"), HANDLED, (), LENGTH_REQUIRED),
    case("TE-04", "chunk-extension", "a chunk extension to ignore",
         post(CHUNKED, body=b"5;name=value\r\nhello\r\n0\r\n\r\n"), HANDLED, (), LENGTH_REQUIRED),
    case("TE-05", "chunk-size-overflow", "chunk-size larger than any integer",
         post(CHUNKED, body=b"FFFFFFFFFFFFFFFFFFFFFFFF\r\nhello\r\n0\r\n\r\n"), ("400", "413"), ("none",),
         EARLY + OTHER_ERROR),
    case("TE-06", "chunk-grammar", "chunk-size not hexadecimal", post(CHUNKED, body=b"zz\r\nhello\r\n0\r\n\r\n"),
         REJECT, (), EARLY + OTHER_ERROR),
    case("TE-07", "chunk-grammar", "chunk-size with a 0x prefix", post(CHUNKED, body=b"0x5\r\nhello\r\n0\r\n\r\n"),
         REJECT, (), EARLY + OTHER_ERROR),
    case("TE-08", "chunk-grammar", "chunk-size after a space", post(CHUNKED, body=b" 5\r\nhello\r\n0\r\n\r\n"),
         REJECT, (), EARLY + OTHER_ERROR),
    case("TE-09", "chunk-grammar", "chunk data longer than its size", post(CHUNKED, body=b"5\r\nhelloXX\r\n0\r\n\r\n"),
         REJECT, (), EARLY + OTHER_ERROR),
    case("TE-10", "bare-lf", "chunk lines ended by bare LF", post(CHUNKED, body=b"5\nhello\n0\n\n"), REJECT, HANDLED),
    case("TE-11", "not-the-grammar bare-lf", "a chunk extension with a bare LF inside",
         post(CHUNKED, body=b"5;a\nb\r\nhello\r\n0\r\n\r\n"), REJECT),
    case("TE-12", "not-the-grammar", "a chunk extension with a quote where a token goes",
         post(CHUNKED, body=b'5;a"b\r\nhello\r\n0\r\n\r\n'), REJECT),
    case("TE-13", "not-the-grammar", "whitespace after chunk-size with no extension",
         post(CHUNKED, body=b"5 \r\nhello\r\n0\r\n\r\n"), REJECT),
    case("TE-14", "incomplete", "a chunked body never finished", post(CHUNKED, body=b"5\r\nhello\r\n"), WAIT,
         HANDLED),
    case("TE-15", "chunked-not-last", "chunked, then gzip (chunked not last)",
         post("Transfer-Encoding: chunked, gzip", body=HELLO_CHUNKS), UNKNOWN_CODING),
    case("TE-16", "chunked-not-last", "identity (no longer a coding)",
         post("Transfer-Encoding: identity", body=b"hello"), UNKNOWN_CODING),
    case("TE-17", "chunked-not-last", "gzip alone", post("Transfer-Encoding: gzip", body=b"hello"), UNKNOWN_CODING),
    case("TE-18", "chunked-not-last", "xchunked", post("Transfer-Encoding: xchunked", body=HELLO_CHUNKS),
         UNKNOWN_CODING),
    case("TE-19", "chunked-twice", "chunked twice (two header lines)", post(CHUNKED, CHUNKED, body=HELLO_CHUNKS),
         REJECT),
    case("TE-20", "empty-list-element", "an empty list element before chunked",
         post("Transfer-Encoding: , chunked", body=HELLO_CHUNKS), HANDLED, (), REJECT + OTHER_ERROR),
    case("TE-21", "te-http10", "HTTP/1.0 keep-alive with Transfer-Encoding and Content-Length",
         request("POST /hello HTTP/1.0", HOST, "Connection: keep-alive", CHUNKED, "Content-Length: 5",
                 body=b"0\r\n\r\n") + get(), BOTH_CLOSE, (), REFUSED_CLOSE),
])

SMUGGLING = group("smuggling", [
    case("SM-01", "te-and-cl", "CL.TE: Content-Length covers a chunked body and a hidden request",
         post(f"Content-Length: {5 + len(HIDDEN)}", CHUNKED, body=b"0\r\n\r\n" + HIDDEN), BOTH_CLOSE, (),
         REFUSED_CLOSE),
    case("SM-02", "te-and-cl", "TE.CL: the chunk holds a hidden request, Content-Length stops before it",
         post("Content-Length: 4", CHUNKED, body=b"%x\r\n%s\r\n0\r\n\r\n" % (len(HIDDEN), HIDDEN)), BOTH_CLOSE, (),
         REFUSED_CLOSE),
    case("SM-03", "chunked-not-last te-and-cl", "TE.TE: chunked, then a second Transfer-Encoding line (x)",
         post(CHUNKED, "Transfer-Encoding: x", "Content-Length: 5", body=b"0\r\n\r\n"), UNKNOWN_CODING),
    case("SM-04", "space-before-colon", "Transfer-Encoding with a space before the colon, and Content-Length",
         post("Transfer-Encoding : chunked", "Content-Length: 5", body=b"0\r\n\r\n"), REJECT),
    case("SM-05", "chunked-not-last te-and-cl",
         "Transfer-Encoding:\\vchunked (a vertical tab is not whitespace) with Content-Length",
         post("Transfer-Encoding:\x0bchunked", "Content-Length: 5", body=b"0\r\n\r\n"), UNKNOWN_CODING),
    case("SM-06", "obs-fold te-and-cl", "Transfer-Encoding folded onto a second line, with Content-Length",
         post("Transfer-Encoding:", " chunked", "Content-Length: 5", body=b"0\r\n\r\n"), ("400", "handled+close"), (),
         REFUSED_CLOSE),
    case("SM-07", "chunked-not-last te-and-cl", 'Transfer-Encoding: "chunked" (quoted) with Content-Length',
         post('Transfer-Encoding: "chunked"', "Content-Length: 5", body=b"0\r\n\r\n"), UNKNOWN_CODING),
    case("SM-08", "content-length-body", "a request in a Content-Length body is body, not a request",
         post(f"Content-Length: {len(HIDDEN)}", body=HIDDEN), HANDLED),
    case("SM-09", "get-content", "CL.0: GET with a Content-Length body holding a request",
         get(f"Content-Length: {len(HIDDEN)}") + HIDDEN, ("200",), (), REJECT_AND_CLOSE),
    case("SM-10", "invalid-content-length", "two Content-Length lines, 0 and the length of a hidden request",
         post("Content-Length: 0", f"Content-Length: {len(HIDDEN)}", body=HIDDEN), REJECT_AND_CLOSE),
    case("SM-11", "chunked", "a pipelined request after a chunked body", post(CHUNKED, body=HELLO_CHUNKS) + get(),
         ("handled 200",), (), EARLY + ("411+close", "411 200")),
    case("SM-12", "chunked", "a chunked body holding a request",
         post(CHUNKED, body=b"%x\r\n%s\r\n0\r\n\r\n" % (len(HIDDEN), HIDDEN)), HANDLED, (), LENGTH_REQUIRED),
    case("SM-13", "space-before-colon", "Content-Length with a space before the colon, hiding a request",
         get(f"Content-Length : {len(HIDDEN)}") + HIDDEN, REJECT),
])
# fmt: on

FRAMING: list[Case] = CONTENT_LENGTH + TRANSFER_ENCODING + SMUGGLING
