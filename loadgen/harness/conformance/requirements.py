"""The RFC sentences the probe's cases are judged by, each quoted whole with its section: a case names the sentence
that sets its level (the keyword for the recipient's behaviour: grammar alone is not a MUST) and its patterns fail
only what that sentence forbids. results.json and the report carry the quote beside every verdict."""

from __future__ import annotations

from dataclasses import dataclass

MUST, SHOULD, MAY = "MUST", "SHOULD", "MAY"


@dataclass(frozen=True)
class Requirement:
    """A sentence of an RFC, whole, with its keyword for the recipient; `why` says where the level comes from when
    the sentence itself has no keyword (a definition, or a framing rule)."""

    section: str
    level: str
    quote: str
    why: str = ""


def _r(section: str, level: str, quote: str, why: str = "") -> Requirement:
    return Requirement(section, level, " ".join(quote.split()), why)


REQUIREMENTS: dict[str, Requirement] = {
    "bare-lf": _r(
        "RFC 9112 §2.2",
        MAY,
        """Although the line terminator for the start-line and fields is the sequence CRLF, a recipient MAY recognize
        a single LF as a line terminator and ignore any preceding CR.""",
    ),
    "bare-cr": _r(
        "RFC 9112 §2.2",
        MUST,
        """A recipient of such a bare CR MUST consider that element to be invalid or replace each bare CR with SP
        before processing the element or forwarding the message.""",
    ),
    "empty-line-first": _r(
        "RFC 9112 §2.2",
        SHOULD,
        """In the interest of robustness, a server that is expecting to receive and parse a request-line SHOULD ignore
        at least one empty line (CRLF) received prior to the request-line.""",
    ),
    "whitespace-first-field": _r(
        "RFC 9112 §2.2",
        MUST,
        """A recipient that receives whitespace between the start-line and the first header field MUST either reject
        the message as invalid or consume each whitespace-preceded line without further processing of it""",
    ),
    "not-the-grammar": _r(
        "RFC 9112 §2.2",
        SHOULD,
        """When a server listening only for HTTP request messages, or processing what appears from the start-line to
        be an HTTP request message, receives a sequence of octets that does not match the HTTP-message grammar aside
        from the robustness exceptions listed above, the server SHOULD respond with a 400 (Bad Request) response and
        close the connection.""",
    ),
    "recover": _r(
        "RFC 9110 §2.4",
        MAY,
        """Unless noted otherwise, a recipient MAY attempt to recover a usable protocol element from an invalid
        construct.""",
    ),
    "invalid-request-line": _r(
        "RFC 9112 §3",
        SHOULD,
        """Recipients of an invalid request-line SHOULD respond with either a 400 (Bad Request) error or a 301 (Moved
        Permanently) redirect with the request-target properly encoded.""",
    ),
    "whitespace-words": _r(
        "RFC 9112 §3",
        MAY,
        """recipients MAY instead parse on whitespace-delimited word boundaries and, aside from the line terminator,
        treat any form of whitespace as the SP separator while ignoring preceding or trailing whitespace""",
    ),
    "uri-too-long": _r(
        "RFC 9112 §3",
        MUST,
        """A server that receives a request-target longer than any URI it wishes to parse MUST respond with a 414 (URI
        Too Long) status code.""",
    ),
    "higher-minor": _r(
        "RFC 9110 §2.5",
        SHOULD,
        """A recipient that receives a message with a major version number that it implements and a minor version
        number higher than what it implements SHOULD process the message as if it were in the highest minor version
        within that major version to which the recipient is conformant.""",
    ),
    "version-not-supported": _r(
        "RFC 9110 §15.6.6",
        MAY,
        """The 505 (HTTP Version Not Supported) status code indicates that the server does not support, or refuses to
        support, the major version of HTTP that was used in the request message.""",
        "no sentence requires an answer to another major version: a 505 is the server's option, so no answer fails",
    ),
    "unknown-method": _r(
        "RFC 9110 §9.1",
        SHOULD,
        """An origin server that receives a request method that is unrecognized or not implemented SHOULD respond with
        the 501 (Not Implemented) status code.""",
    ),
    "absolute-form": _r(
        "RFC 9112 §3.2.2",
        MUST,
        """A server MUST accept the absolute-form in requests even though most HTTP/1.1 clients will only send the
        absolute-form to a proxy.""",
    ),
    "absolute-form-host": _r(
        "RFC 9112 §3.2.2",
        MUST,
        """When an origin server receives a request with an absolute-form of request-target, the origin server MUST
        ignore the received Host header field (if any) and instead use the host information of the
        request-target.""",
    ),
    "host-400": _r(
        "RFC 9112 §3.2",
        MUST,
        """A server MUST respond with a 400 (Bad Request) status code to any HTTP/1.1 request message that lacks a
        Host header field and to any request message that contains more than one Host header field line or a Host
        header field with an invalid field value.""",
    ),
    "misdirected": _r(
        "RFC 9110 §15.5.20",
        MAY,
        """The 421 (Misdirected Request) status code indicates that the request was directed at a server that is
        unable or unwilling to produce an authoritative response for the target URI.""",
        "a status a server may choose (RFC 9110 §7.4 lists responding with an error among its options)",
    ),
    "space-before-colon": _r(
        "RFC 9112 §5.1",
        MUST,
        """A server MUST reject, with a response status code of 400 (Bad Request), any received request message that
        contains whitespace between a header field name and colon.""",
    ),
    "obs-fold": _r(
        "RFC 9112 §5.2",
        MUST,
        """A server that receives an obs-fold in a request message that is not within a "message/http" container MUST
        either reject the message by sending a 400 (Bad Request), preferably with a representation explaining that
        obsolete line folding is unacceptable, or replace each received obs-fold with one or more SP octets prior to
        interpreting the field value or forwarding the message downstream.""",
    ),
    "field-value-ctl": _r(
        "RFC 9110 §5.5",
        MUST,
        """Field values containing CR, LF, or NUL characters are invalid and dangerous, due to the varying ways that
        implementations might parse and interpret those characters; a recipient of CR, LF, or NUL within a field
        value MUST either reject the message or replace each of those characters with SP before further processing
        or forwarding of that message.""",
    ),
    "field-value-other": _r(
        "RFC 9110 §5.5",
        MAY,
        """Field values containing other CTL characters are also invalid; however, recipients MAY retain such
        characters for the sake of robustness when they appear within a safe context""",
    ),
    "obs-text": _r(
        "RFC 9110 §5.5",
        SHOULD,
        """Historically, HTTP allowed field content with text in the ISO-8859-1 charset, supporting other charsets
        only through use of RFC 2047 encoding. Specifications for newly defined fields SHOULD limit their values to
        visible US-ASCII octets (VCHAR), SP, and HTAB. A recipient SHOULD treat other allowed octets in field content
        (i.e., obs-text) as opaque data.""",
    ),
    "ows": _r(
        "RFC 9112 §5.1",
        MUST,
        """The field line value does not include that leading or trailing whitespace: OWS occurring before the first
        non-whitespace octet of the field line value, or after the last non-whitespace octet of the field line value,
        is excluded by parsers when extracting the field line value from a field line. (RFC 9110 §2.2: the recipient
        MUST be able to parse any value of reasonable length that matches the grammar.)""",
    ),
    "field-names-case": _r(
        "RFC 9110 §5.1",
        MUST,
        """Field names are case-insensitive (RFC 9110 §2.2: the recipient MUST be able to parse what matches the grammar).""",
    ),
    "parse-grammar": _r(
        "RFC 9110 §2.2",
        MUST,
        """If a received protocol element is processed, the recipient MUST be able to parse any value of reasonable
        length that is applicable to the recipient's role and that matches the grammar defined by the ABNF rules.""",
    ),
    "field-too-large": _r(
        "RFC 9110 §5.4",
        MUST,
        """A server that receives a request header field line, field value, or set of fields larger than it wishes to
        process MUST respond with an appropriate 4xx (Client Error) status code.""",
    ),
    "expect-unknown": _r(
        "RFC 9110 §10.1.1",
        MAY,
        """A server that receives an Expect field value containing a member other than 100-continue MAY respond with
        a 417 (Expectation Failed) status code to indicate that the unexpected expectation cannot be met.""",
    ),
    "http10-close": _r(
        "RFC 9112 §9.3",
        SHOULD,
        """If the received protocol is HTTP/1.0, the "keep-alive" connection option is present, ... and the recipient wishes to honor the HTTP/1.0 "keep-alive" mechanism, the connection will persist after the current response; otherwise, the connection will close after the current response.""",
        "said as what happens (`will close`), not with a keyword: read as SHOULD",
    ),
    "persist": _r(
        "RFC 9112 §9.3",
        SHOULD,
        """HTTP/1.1 defaults to the use of "persistent connections", allowing multiple requests and responses to be carried over a single connection.""",
        "said as the default (`defaults to`), not with a keyword: read as SHOULD",
    ),
    "close-option": _r(
        "RFC 9112 §9.6",
        MUST,
        """A server that receives a "close" connection option MUST initiate closure of the connection after it sends
        the final response to the request that contained the "close" connection option. The server SHOULD send a
        "close" connection option in its final response on that connection. The server MUST NOT process any further
        requests received on that connection.""",
    ),
    "close-echo": _r(
        "RFC 9112 §9.6",
        SHOULD,
        """The server SHOULD send a "close" connection option in its final response on that connection.""",
    ),
    "pipeline-order": _r(
        "RFC 9112 §9.3.2",
        MUST,
        """A server MAY process a sequence of pipelined requests in parallel if they all have safe methods, but it MUST
        send the corresponding responses in the same order that the requests were received. (§9.5: A client,
        server, or proxy MAY close the transport connection at any time.)""",
    ),
    "incomplete": _r(
        "RFC 9112 §8",
        MAY,
        """A message that uses a valid Content-Length is incomplete if the size of the message body received (in
        octets) is less than the value given by Content-Length. (§9.5: A client, server, or proxy MAY close the
        transport connection at any time.)""",
    ),
    "invalid-content-length": _r(
        "RFC 9112 §6.3",
        MUST,
        """If a message is received without Transfer-Encoding and with an invalid Content-Length header field, then
        the message framing is invalid and the recipient MUST treat it as an unrecoverable error, unless the field
        value can be successfully parsed as a comma-separated list, all values in the list are valid, and all values
        in the list are the same ... If the unrecoverable error is in a request message, the server MUST respond with
        a 400 (Bad Request) status code and then close the connection.""",
    ),
    "content-length-list": _r(
        "RFC 9110 §8.6",
        MAY,
        """a recipient of a Content-Length header field value consisting of the same decimal value repeated as a
        comma-separated list (e.g, "Content-Length: 42, 42") MAY either reject the message as invalid or replace that
        invalid field value with a single instance of the decimal value""",
    ),
    "content-length-overflow": _r(
        "RFC 9110 §8.6",
        MUST,
        """a recipient MUST anticipate potentially large decimal numerals and prevent parsing errors due to integer
        conversion overflows or precision loss due to integer representation""",
    ),
    "content-length-body": _r(
        "RFC 9112 §6.3",
        MUST,
        """If a valid Content-Length header field is present without Transfer-Encoding, its decimal value defines the
        expected message body length in octets.""",
        "the framing this sentence defines is how a valid message is read: RFC 9110 §2.2's MUST parse applies",
    ),
    "no-length": _r(
        "RFC 9112 §6.3",
        MAY,
        """If this is a request message and none of the above are true, then the message body length is zero (no
        message body is present). ... A server MAY reject a request that contains a message body but not a
        Content-Length by responding with 411 (Length Required).""",
    ),
    "chunked": _r(
        "RFC 9112 §7.1",
        MUST,
        """A recipient MUST be able to parse and decode the chunked transfer coding. (§6.3: A server MAY reject a
        request that contains a message body but not a Content-Length by responding with 411 (Length Required).)""",
    ),
    "chunk-extension": _r(
        "RFC 9112 §7.1.1",
        MUST,
        """A recipient MUST ignore unrecognized chunk extensions. (§6.3: A server MAY reject a request that contains
        a message body but not a Content-Length by responding with 411 (Length Required).)""",
    ),
    "chunk-size-overflow": _r(
        "RFC 9112 §7.1",
        MUST,
        """Recipients MUST anticipate potentially large hexadecimal numerals and prevent parsing errors due to integer
        conversion overflows or precision loss due to integer representation.""",
    ),
    "chunk-grammar": _r(
        "RFC 9112 §7.1",
        MUST,
        """chunk-size = 1*HEXDIG; chunk = chunk-size [ chunk-ext ] CRLF chunk-data CRLF; a recipient MUST be able to parse and decode the chunked transfer coding (a body that does not match cannot be decoded).""",
    ),
    "chunked-not-last": _r(
        "RFC 9112 §6.3",
        MUST,
        """If a Transfer-Encoding header field is present in a request and the chunked transfer coding is not the
        final encoding, the message body length cannot be determined reliably; the server MUST respond with the 400
        (Bad Request) status code and then close the connection. (§6.1: A server that receives a request message
        with a transfer coding it does not understand SHOULD respond with 501 (Not Implemented).)""",
    ),
    "chunked-twice": _r(
        "RFC 9112 §6.1",
        SHOULD,
        """A sender MUST NOT apply the chunked transfer coding more than once to a message body (i.e., chunking an
        already chunked message is not allowed). (The recipient's part is RFC 9112 §2.2's: a message that does not
        match the grammar SHOULD be answered with 400 and the connection closed.)""",
    ),
    "empty-list-element": _r(
        "RFC 9110 §5.6.1",
        MUST,
        """A recipient MUST parse and ignore a reasonable number of empty list elements: enough to handle common
        mistakes by senders that merge values, but not so much that they could be used as a denial-of-service
        mechanism.""",
    ),
    "te-and-cl": _r(
        "RFC 9112 §6.1",
        MUST,
        """A server MAY reject a request that contains both Content-Length and Transfer-Encoding or process such a
        request in accordance with the Transfer-Encoding alone. Regardless, the server MUST close the connection
        after responding to such a request to avoid the potential attacks.""",
    ),
    "te-http10": _r(
        "RFC 9112 §6.1",
        MUST,
        """A server or client that receives an HTTP/1.0 message containing a Transfer-Encoding header field MUST treat
        the message as if the framing is faulty, even if a Content-Length is present, and close the connection after
        processing the message.""",
    ),
    "get-content": _r(
        "RFC 9110 §9.3.1",
        MUST,
        """Although request message framing is independent of the method used, content received in a GET request has
        no generally defined semantics (RFC 9112 §6.3: its Content-Length defines the body's length: the body is
        read, not taken for the next request).""",
        "the body's framing is the method's: RFC 9110 §2.2's MUST parse applies to the Content-Length it sends",
    ),
    "head-no-content": _r(
        "RFC 9110 §9.3.2",
        MUST,
        "The HEAD method is identical to GET except that the server MUST NOT send content in the response.",
    ),
    "head-same-fields": _r(
        "RFC 9110 §9.3.2",
        SHOULD,
        """The server SHOULD send the same header fields in response to a HEAD request as it would have sent if the
        request method had been GET. However, a server MAY omit header fields for which a value is determined only
        while generating the content.""",
    ),
    "date": _r(
        "RFC 9110 §6.6.1",
        MUST,
        """An origin server with a clock MUST generate a Date header field in all 2xx (Successful), 3xx
        (Redirection), and 4xx (Client Error) responses""",
    ),
    "allow-405": _r(
        "RFC 9110 §15.5.6",
        MUST,
        """The origin server MUST generate an Allow header field in a 405 response containing a list of the target
        resource's currently supported methods.""",
    ),
    "no-content-304": _r(
        "RFC 9110 §15.4.5",
        MUST,
        """A 304 response is terminated by the end of the header section; it cannot contain content or trailers.""",
        "a 304 with content frames the next response wrongly: `cannot` is the definition's MUST",
    ),
    "te-to-http10": _r(
        "RFC 9112 §6.1",
        MUST,
        """A server MUST NOT send a response containing Transfer-Encoding unless the corresponding request indicates
        HTTP/1.1 (or later minor revisions).""",
    ),
    "cl-with-te": _r(
        "RFC 9112 §6.2",
        MUST,
        """A sender MUST NOT send a Content-Length header field in any message that contains a Transfer-Encoding
        header field.""",
    ),
    "cl-matches": _r(
        "RFC 9112 §6.3",
        MUST,
        """If a valid Content-Length header field is present without Transfer-Encoding, its decimal value defines the
        expected message body length in octets. (A Content-Length other than the body's length frames the next
        response wrongly.)""",
        "a Content-Length that is not the body's length frames the next response wrongly",
    ),
    "response-version": _r(
        "RFC 9110 §6.2",
        SHOULD,
        """A server SHOULD send a response version equal to the highest version to which the server is conformant
        that has a major version less than or equal to the one received in the request.""",
    ),
}
