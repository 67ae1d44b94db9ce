"""h2spec's malformed-request failures read again (harness.conformance.h2c_replay): the status h2spec does not report
decides between RFC 7540 §8.1.2.6's permitted answer (a refusal that ends the stream) and a request routed as valid."""

from __future__ import annotations

import socket
import threading

import pytest
from ports import H2C_OFFSET

from harness.conformance.h2c import cases as h2spec_cases
from harness.conformance.h2c_replay import MALFORMED, StreamAnswer, answered, replay, requests

UNKNOWN_PSEUDO = "Sends a HEADERS frame that contains a unknown pseudo-header field"
CONNECTION_HEADER = "Sends a HEADERS frame that contains the connection-specific header field"
UPPERCASE = "Sends a HEADERS frame that contains the header field name in uppercase letters"
FAILED = "<failure>Expected: RST_STREAM Frame Actual: DATA Frame (length:157, flags:0x01, stream_id:1)</failure>"


def report(*cases: tuple[str, str, bool]) -> str:
    """An h2spec JUnit report of (section, case, failed) cases."""
    rows = "".join(
        f'<testsuite package="{section}"><testcase package="{section}" classname=\'{name}\'>'
        f"{FAILED if failed else ''}</testcase></testsuite>"
        for section, name, failed in cases
    )
    return f"<testsuites>{rows}</testsuites>"


def test_a_refusal_that_ends_the_stream_passes_and_a_routed_request_fails_saying_its_status():
    found = h2spec_cases(
        report(
            ("http2/8.1.2.1", UNKNOWN_PSEUDO, True),
            ("http2/8.1.2.2", CONNECTION_HEADER, True),
            ("http2/8.1.2", UPPERCASE, False),
            ("http2/6.5", "Sends a SETTINGS frame with ACK", True),
        )
    )
    answers = {":test": StreamAnswer(400, True, None, None), "connection": StreamAnswer(404, True, None, None)}
    asked: list[str] = []

    def fake(steps):
        named = next(name for kind, fields, _ in steps if kind == "headers" for name, _ in fields if name in answers)
        asked.append(named)
        return answers[named]

    judged = answered(found, fake, "127.0.0.1:1")
    assert asked == [":test", "connection"]  # the failures of malformed requests only
    assert [c["verdict"] for c in judged] == ["pass", "fail", "pass", "fail"]
    assert judged[0]["got"].startswith("answered 400, ended the stream when sent again; h2spec: Expected: RST_STREAM")
    assert judged[1]["got"].startswith("answered 404, ended the stream")
    assert judged[2]["requirement"] == MALFORMED and judged[2]["got"] == "as expected"  # passed: not sent again
    assert "requirement" not in judged[3] and judged[3] == found[3]  # not a malformed request's case


@pytest.mark.parametrize(
    "answer",
    [StreamAnswer(400, False, None, None), StreamAnswer(None, False, None, None), StreamAnswer(200, True, None, None)],
    ids=["400-stream-left-open", "no-answer", "200"],
)
def test_anything_but_a_refusal_that_ends_the_stream_stays_failed(answer):
    found = h2spec_cases(report(("http2/8.1.2.1", UNKNOWN_PSEUDO, True)))
    assert answered(found, lambda steps: answer, "127.0.0.1:1")[0]["verdict"] == "fail"


@pytest.mark.parametrize(
    "answer",
    [
        StreamAnswer(None, False, 1, None),
        StreamAnswer(404, True, None, 1),
        StreamAnswer(None, False, None, None, closed=True),
    ],
    ids=["reset-protocol-error", "answered-then-goaway", "connection-closed"],
)
def test_the_stream_error_h2spec_wants_when_sent_again_is_a_failure_not_reproduced(answer):
    """The server's answer raced the malformed part of the request within the suite (rust's hyper answers a POST
    before its bad trailers arrive); sent again, it did what h2spec wants: a skip, as a case that passes alone."""
    found = h2spec_cases(report(("http2/8.1.2.1", UNKNOWN_PSEUDO, True)))
    judged = answered(found, lambda steps: answer, "127.0.0.1:1")[0]
    assert judged["verdict"] == "skip" and judged["got"].startswith(f"not reproduced: {answer.describe()} when sent")


SECOND_HEADERS = "Sends a second HEADERS frame without the END_STREAM flag"


@pytest.mark.parametrize(
    ("section", "name", "verdict"),
    [("http2/8.1", SECOND_HEADERS, "pass"), ("http2/8.1.2.1", UNKNOWN_PSEUDO, "fail")],
    ids=["malformed-after-the-headers", "malformed-headers"],
)
def test_a_response_then_rst_stream_no_error_passes_only_where_the_malformed_part_came_after_it(section, name, verdict):
    """§8.1: answered (404) from valid headers before the request's malformed part came, then asked the client to
    stop sending (RST_STREAM NO_ERROR): nginx's answer to a POST whose DATA belies its content-length."""
    found = h2spec_cases(report((section, name, True)))
    judged = answered(found, lambda steps: StreamAnswer(404, True, 0, None), "127.0.0.1:1")[0]
    assert judged["verdict"] == verdict
    assert (judged["requirement"][-1]["section"] == "RFC 7540 §8.1") == (verdict == "pass")


def test_every_malformed_request_of_h2spec_is_known_by_its_section_and_name():
    """The 17 cases of h2spec v2.2.1's RFC 7540 §8.1 and §8.1.2 groups, as its report names them."""
    asked = requests("127.0.0.1:1")
    assert len(asked) == 17
    assert {section for section, _ in asked} == {f"http2/8.1{s}" for s in ("", ".2", ".2.1", ".2.2", ".2.3", ".2.6")}


@pytest.mark.integration
def test_the_projects_nginx_refuses_some_malformed_requests_and_routes_others(upstream):
    """nginx 1.22 answers a malformed pseudo-header with 400 (ending the stream), routes a request carrying a
    connection-specific field (404: no such file at /), and resets the stream of an uppercase field name."""
    asked = requests(f"127.0.0.1:{upstream + H2C_OFFSET}")
    got = {
        name: replay("127.0.0.1", upstream + H2C_OFFSET, steps)
        for (_, name), steps in asked.items()
        if name in (UNKNOWN_PSEUDO, CONNECTION_HEADER, UPPERCASE)
    }
    assert got[UNKNOWN_PSEUDO] == StreamAnswer(400, True, None, None)
    assert got[CONNECTION_HEADER] == StreamAnswer(404, True, None, None)
    assert got[UPPERCASE] == StreamAnswer(None, False, 1, None)  # RST_STREAM PROTOCOL_ERROR


def test_a_server_that_closes_before_the_handshake_teaches_nothing_and_the_case_keeps_h2specs_words():
    """No SETTINGS came back: replay() says nothing (None), and the failure stays h2spec's, not "no response"."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def close_each() -> None:
        conn, _ = listener.accept()
        conn.close()

    threading.Thread(target=close_each, daemon=True).start()
    try:
        asked = requests(f"127.0.0.1:{port}")
        steps = next(s for (_, name), s in asked.items() if name == UNKNOWN_PSEUDO)
        assert replay("127.0.0.1", port, steps, wait_s=1.0) is None
    finally:
        listener.close()
    found = h2spec_cases(report(("http2/8.1.2.1", UNKNOWN_PSEUDO, True)))
    judged = answered(found, lambda steps: None, "127.0.0.1:1")[0]
    assert judged["verdict"] == "fail" and judged["got"] == found[0]["got"]
