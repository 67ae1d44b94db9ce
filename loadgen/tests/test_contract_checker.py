"""The contract check (`make ping`, harness/conformance/verification.py walking contract_table.py) reports what is
broken, one rule at a time: a server of the test's own (tests/responders/contract_server.py) keeps CONTRACT.md for its
routes, or breaks exactly one rule (--break), and the check must pass the first and name the broken rule in each of
the others. Its /weather is checked against the project's real upstream (nginx/run.sh), whose count of requests
served shows a server that caches the upstream's answer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from ports import free_port

from harness.basics.machine import port_owner, wait_until
from harness.basics.paths import REPO
from harness.config.manifest import UPSTREAM_COUNT_PATH, UPSTREAM_PATH
from harness.conformance import verification as contract
from harness.conformance.contract_table import UPSTREAM_FETCHES

pytestmark = pytest.mark.integration  # real servers, load tools or the harness's command line on loopback

RESPONDER = Path(__file__).parent / "responders" / "contract_server.py"
PORT = free_port()  # the operating system's choice (ports.py)
ROUTES = ("id", "hello", "backend", "tweets", "factorial", "fibonacci")


def check(broken: str | None) -> contract.Report:
    proc = subprocess.Popen(
        [sys.executable, str(RESPONDER), str(PORT), "probe", *(["--break", broken] if broken else [])]
    )
    try:
        assert wait_until(lambda: port_owner("127.0.0.1", PORT) is not None, 10), "the responder did not listen"
        return contract.verify("probe", "127.0.0.1", PORT, ROUTES)
    finally:
        proc.terminate()
        proc.wait(5)


def test_a_server_that_keeps_the_contract_passes_every_check():
    report = check(None)
    assert report.ok and report.failures == [] and report.checks > 100


@pytest.mark.parametrize(
    "broken, failures",
    [
        (
            "body-byte",
            [
                "GET /hello: body 'Hello Worle', expected 'Hello World'",
                "pipelining ['/id', '/hello', '/backend', '/id']: answered ['probe', 'Hello Worle', "
                "'<h1>Say hello to akka-http</h1>', 'probe']",
            ],
        ),
        ("content-type", ["GET /hello: Content-Type 'text/html; charset=utf-8', expected text/plain"]),
        ("http10-open", ["HTTP/1.0 without keep-alive: the server kept the connection open"]),
        (
            "pipeline-order",
            [
                "pipelining ['/id', '/hello', '/backend', '/id']: answered ['probe', "
                "'<h1>Say hello to akka-http</h1>', 'Hello World', 'probe']"
            ],
        ),
        ("tweet-counter", ["GET /v1/tweets: id did not grow on the next request (1000000 then 1000000)"]),
    ],
)
def test_each_broken_rule_is_reported_and_nothing_else(broken, failures):
    report = check(broken)
    assert not report.ok and report.failures == failures


def test_a_missing_date_header_is_reported_on_every_response():
    report = check("no-date")
    assert report.failures and all(f.endswith(": no Date header") for f in report.failures)
    assert {
        "GET /id: no Date header",
        "GET /hello: no Date header",
        "GET /v1/tweets: no Date header",
        "GET /no-such-route: no Date header",
        "GET /factorial?param=abc: no Date header",
    } <= set(report.failures)


@pytest.mark.parametrize(
    "broken, failure",
    [
        ("bad-length", "GET /hello: Content-Length 'eleven' is not a number of bytes"),
        ("bad-chunk", "GET /hello: chunk size b'zz' is not a hexadecimal number"),
    ],
)
def test_a_response_whose_framing_cannot_be_read_fails_the_contract(broken, failure, capsys):
    """A bad Content-Length or chunk size is that server failing the contract (`make ping` says so and goes on), not
    a ValueError that ends the whole run."""
    report = check(broken)
    assert not report.ok and failure in report.failures, report.failures


def check_weather(upstream_port: int, broken: str | None) -> contract.Report:
    """contract_server.py serving /weather/{city} from the real upstream, checked with the upstream's own count."""
    port = free_port()
    url = upstream_url_of(upstream_port)
    proc = subprocess.Popen(
        [
            sys.executable,
            str(RESPONDER),
            str(port),
            "probe",
            "--upstream",
            url,
            *(["--break", broken] if broken else []),
        ]
    )
    try:
        assert wait_until(lambda: port_owner("127.0.0.1", port) is not None, 10), "the responder did not listen"
        count = contract.StubStatus("127.0.0.1", upstream_port, UPSTREAM_COUNT_PATH)
        document = (REPO / "nginx" / "static" / "weather.json").read_bytes()
        return contract.verify("probe", "127.0.0.1", port, (*ROUTES, "weather"), document, count)
    finally:
        proc.terminate()
        proc.wait(5)


def upstream_url_of(port: int) -> str:
    return f"http://127.0.0.1:{port}{UPSTREAM_PATH}"


def test_each_weather_request_reaches_the_upstream_once(upstream):
    report = check_weather(upstream, None)
    assert report.ok, report.failures
    assert "GET /weather/Lyon" not in " ".join(report.failures)


def test_a_server_caching_the_upstreams_answer_fails_the_contract(upstream):
    """Its answers are right byte for byte; only the upstream's count of requests served shows the cache."""
    report = check_weather(upstream, "weather-cache")
    assert report.failures == [
        f"GET /weather/Lyon {UPSTREAM_FETCHES} times: the upstream served 0 request(s) meanwhile, not "
        f"{UPSTREAM_FETCHES}; each /weather request must fetch the upstream's document (no cached answer)"
    ]


def test_an_upstream_that_cannot_count_is_a_failure_that_says_so(upstream):
    report = contract.verify(
        "nginx", "127.0.0.1", upstream, ("id", "weather"), None, contract.StubStatus("127.0.0.1", upstream, "/hello")
    )
    assert (
        f"GET /weather/Lyon: the upstream's count of requests served could not be read: http://127.0.0.1:{upstream}"
        "/hello answered 200 'Hello World', not nginx's stub_status" in report.failures
    )
