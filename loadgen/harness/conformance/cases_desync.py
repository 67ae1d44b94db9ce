"""Two-step desync cases: a smuggling attempt, then an ordinary request (GET /hello) on the same connection once the
first answer came. The attempt hides the start of a request for /backend (`SMUGGLED`, its head left open) where a
body should be: a parser that ends the body where another would not reads that prefix as the next request, and the
follow-up completes it, so the follow-up is answered with /backend's body. Any response carrying that body is a
smuggled request answered (`[smuggled]` in the outcome): a failure whatever the case's level. The statuses are judged
as in the single-step cases (verdicts.py); the follow-up is never sent on a connection the server closed."""

from __future__ import annotations

from harness.conformance.case import HOST, Case, case, get, group, post

SMUGGLED = b"GET /backend HTTP/1.1\r\nX-Ignore: "  # the follow-up's request-line and Host end this request's head
SMUGGLED_BODY = b"<h1>Say hello to akka-http</h1>"  # GET /backend's body (CONTRACT.md)
FOLLOW_UP = get()
CHUNKED = "Transfer-Encoding: chunked"
LAST_CHUNK = b"0\r\n\r\n"
BOTH_CLOSE = ("400+close", "handled+close")
UNKNOWN_CODING = ("400+close", "501+close")
WHOLE = b"GET /backend HTTP/1.1\r\n" + HOST.encode() + b"\r\n\r\n"  # a complete request, inside a chunk


def _cl(n: int) -> str:
    return f"Content-Length: {n}"


# fmt: off
DESYNC = group("desync", [
    case("DS-01", "te-and-cl", "CL.TE: Content-Length covers the last chunk and a smuggled prefix",
         post(_cl(len(LAST_CHUNK + SMUGGLED)), CHUNKED, body=LAST_CHUNK + SMUGGLED), BOTH_CLOSE, (),
         ("refused+close",), then=FOLLOW_UP),
    case("DS-02", "te-and-cl", "TE.CL: Content-Length stops inside a chunk that holds a request",
         post(_cl(4), CHUNKED, body=b"%x\r\n%s\r\n" % (len(WHOLE), WHOLE) + LAST_CHUNK), BOTH_CLOSE, (),
         ("refused+close",), then=FOLLOW_UP),
    case("DS-03", "chunked-not-last te-and-cl", "TE.TE: chunked and a second Transfer-Encoding line (x)",
         post(CHUNKED, "Transfer-Encoding: x", _cl(len(LAST_CHUNK + SMUGGLED)), body=LAST_CHUNK + SMUGGLED),
         UNKNOWN_CODING, then=FOLLOW_UP),
    case("DS-04", "chunked-not-last te-and-cl", "TE.TE: Transfer-Encoding: xchunked with Content-Length",
         post("Transfer-Encoding: xchunked", _cl(len(LAST_CHUNK + SMUGGLED)), body=LAST_CHUNK + SMUGGLED),
         UNKNOWN_CODING, then=FOLLOW_UP),
    case("DS-05", "space-before-colon", "TE.TE: Transfer-Encoding with a space before the colon",
         post("Transfer-Encoding : chunked", _cl(len(LAST_CHUNK + SMUGGLED)), body=LAST_CHUNK + SMUGGLED),
         ("400",), then=FOLLOW_UP),
    case("DS-06", "chunked-not-last te-and-cl", "TE.TE: Transfer-Encoding:\\vchunked with Content-Length",
         post("Transfer-Encoding:\x0bchunked", _cl(len(LAST_CHUNK + SMUGGLED)), body=LAST_CHUNK + SMUGGLED),
         UNKNOWN_CODING, then=FOLLOW_UP),
    case("DS-07", "obs-fold te-and-cl", "TE.TE: Transfer-Encoding folded onto a second line",
         post("Transfer-Encoding:", " chunked", _cl(len(LAST_CHUNK + SMUGGLED)), body=LAST_CHUNK + SMUGGLED),
         ("400", "handled+close"), (), ("refused+close",), then=FOLLOW_UP),
    case("DS-08", "get-content", "CL.0: a GET's Content-Length body holds a smuggled prefix",
         get(_cl(len(SMUGGLED))) + SMUGGLED, ("200 200",), (), ("400+close",), then=FOLLOW_UP),
    case("DS-09", "invalid-content-length", "two Content-Length lines, 0 and the smuggled prefix's",
         post(_cl(0), _cl(len(SMUGGLED)), body=SMUGGLED), ("400+close",), then=FOLLOW_UP),
    case("DS-10", "space-before-colon", "Content-Length with a space before the colon",
         get(f"Content-Length : {len(SMUGGLED)}") + SMUGGLED, ("400",), then=FOLLOW_UP),
    case("DS-11", "chunked", "a chunk holding a whole request, then the follow-up",
         post(CHUNKED, body=b"%x\r\n%s\r\n" % (len(WHOLE), WHOLE) + LAST_CHUNK), ("handled 200",), (),
         ("411+close", "handled+close"), then=FOLLOW_UP),
    case("DS-12", "invalid-content-length", "Content-Length: +N over a smuggled prefix",
         post(f"Content-Length: +{len(SMUGGLED)}", body=SMUGGLED), ("400+close",), then=FOLLOW_UP),
])
# fmt: on

TWO_STEP: list[Case] = DESYNC
