"""Response checks: ordinary requests whose answers are judged on the responses themselves (their headers and bodies,
read by wire.py) rather than on their statuses alone: HEAD without content and with GET's fields, Date, Allow on
405, a 304 without content, no Transfer-Encoding to HTTP/1.0, Connection: close said back, Content-Length equal to
the body, no Content-Length beside Transfer-Encoding, the response's version. Each check is a function of
checks.py; a case whose premise the server does not meet (no 405, no 304) passes as not applicable, and says so."""

from __future__ import annotations

from harness.conformance.case import HOST, Case, case, get, group, request

HELLO_AFTER = get()  # pipelined after the request checked: its exact body shows where the first response ended

# fmt: off
RESPONSE = group("response", [
    case("RC-01", "head-no-content", "HEAD has no content (a GET pipelined after it reads right)",
         request("HEAD /hello HTTP/1.1", HOST) + HELLO_AFTER, ("checked",), check="head_no_content", heads=1),
    case("RC-02", "head-same-fields", "HEAD's Content-Type is GET's",
         request("HEAD /hello HTTP/1.1", HOST) + HELLO_AFTER, ("checked",), check="head_same_fields", heads=1),
    case("RC-03", "date", "a 200 carries Date", get(), ("checked",), check="has_date"),
    case("RC-04", "date", "a 404 carries Date", request("GET /no-such-route HTTP/1.1", HOST), ("checked",),
         check="has_date"),
    case("RC-05", "allow-405", "a 405 carries Allow", request("DELETE /hello HTTP/1.1", HOST), ("checked",),
         check="allow_on_405"),
    case("RC-06", "no-content-304", "a 304 has no content (If-None-Match: *)",
         get("If-None-Match: *") + HELLO_AFTER, ("checked",), check="no_content_304"),
    case("RC-07", "te-to-http10", "no Transfer-Encoding in the answer to HTTP/1.0",
         request("GET /v1/tweets HTTP/1.0", HOST), ("checked",), check="no_te_to_http10"),
    case("RC-08", "close-echo", "Connection: close said back", get("Connection: close"), ("checked",),
         check="close_echoed"),
    case("RC-09", "cl-matches", "Content-Length is the body's length (/backend, then /hello)",
         request("GET /backend HTTP/1.1", HOST) + HELLO_AFTER, ("checked",), check="exact_bodies"),
    case("RC-10", "cl-with-te", "no Content-Length beside Transfer-Encoding (/v1/tweets, /hello)",
         request("GET /v1/tweets HTTP/1.1", HOST) + HELLO_AFTER, ("checked",), check="not_cl_and_te"),
    case("RC-11", "response-version", "HTTP/1.1 answered as HTTP/1.1", get(), ("checked",), check="version_11"),
])
# fmt: on

CHECKED: list[Case] = RESPONSE
