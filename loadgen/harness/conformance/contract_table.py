"""CONTRACT.md as one table: every route's requests and what each answer must be, in the order the checks make them.
The HTTP/1.1 checker (verification.py) and the h2c checker (verification_h2c.py) both walk it; each adds only what
belongs to its protocol (HTTP/1.0, pipelining and framing; streams in flight at once)."""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

HELLO = "Hello World"
BACKEND = "<h1>Say hello to akka-http</h1>"
WEATHER = '{"code":500,"temp":14}'
TWEETS = re.compile(r'^\[\{"id":(\d+),"author":"author1","content":"Hello, World!"\}\]$')
TWEET_COUNTER_START = 1_000_000
FIBONACCI = {0: 1, 1: 1, 10: 89, 25: 121393}
FACTORIAL_PARAMS = (0, 1, 20, 100, 5000)
sys.set_int_max_str_digits(0)  # 5000! has 16326 digits
BAD_PARAMS = {"factorial": ("", "abc", "1.5", "-1", "5001"), "fibonacci": ("", "abc", "-1", "46")}
UPSTREAM_FETCHES = 5  # /weather requests whose upstream fetches are counted: each must reach the upstream


@dataclass(frozen=True)
class Expected:
    """What the contract expects of one answer: its status, and where it names them its body (as text, or as exact
    bytes: the upstream's document), media type and charset."""

    status: int
    body: str | None = None
    mtype: str | None = None
    charset: str | None = None
    document: bytes | None = None


class Kind(Enum):
    ANSWER = "one request, its answer as expected"
    COUNTER = "two requests on one connection, the tweet id growing from the counter's start"
    UPSTREAM = "UPSTREAM_FETCHES requests, each reaching the upstream once (it counts the requests it served)"


@dataclass(frozen=True)
class Step:
    path: str
    expected: Expected
    kind: Kind = Kind.ANSWER


def contract_table(
    name: str, routes: tuple[str, ...], upstream_document: bytes | None = None, upstream_counted: bool = False
) -> list[Step]:
    """The steps for a server named `name` serving `routes`. /weather.json is compared with `upstream_document`
    when it is known; the upstream-count step is there when the upstream can say how many requests it served."""
    steps = [Step("/id", Expected(200, name, "text/plain")), Step("/no-such-route", Expected(404))]
    if "hello" in routes:
        steps.append(Step("/hello", Expected(200, HELLO, "text/plain", "utf-8")))
    if "backend" in routes:
        steps.append(Step("/backend", Expected(200, BACKEND, "text/html", "utf-8")))
    if "weather.json" in routes and upstream_document is not None:
        steps.append(Step("/weather.json", Expected(200, None, "application/json", document=upstream_document)))
    if "tweets" in routes:
        steps.append(Step("/v1/tweets", Expected(200, None, "application/json"), Kind.COUNTER))
    if "factorial" in routes:
        steps += [
            Step(f"/factorial?param={n}", Expected(200, str(math.factorial(n)), "text/plain")) for n in FACTORIAL_PARAMS
        ]
    if "fibonacci" in routes:
        steps += [Step(f"/fibonacci?param={n}", Expected(200, str(v), "text/plain")) for n, v in FIBONACCI.items()]
    for route, params in BAD_PARAMS.items():
        if route in routes:
            steps += [Step(f"/{route}", Expected(400)), *(Step(f"/{route}?param={p}", Expected(400)) for p in params)]
    if "weather" in routes:
        steps += [
            Step(f"/weather/{city}", Expected(200, WEATHER, "application/json")) for city in ("Montpellier", "Paris")
        ]
        if upstream_counted:
            steps.append(Step("/weather/Lyon", Expected(200, WEATHER, "application/json"), Kind.UPSTREAM))
    return steps


def fixed_answers(steps: list[Step]) -> dict[str, Expected]:
    """path -> its expected answer, for the steps answered the same every time (a known body): what a checker may
    send several of at once (pipelined, or as streams in flight) and still tell apart."""
    return {s.path: s.expected for s in steps if s.kind is Kind.ANSWER and s.expected.body is not None}


@dataclass
class Report:
    server: str
    failures: list[str] = field(default_factory=list)
    checks: int = 0

    @property
    def ok(self) -> bool:
        return not self.failures

    def expect(self, condition: bool, what: str) -> bool:
        self.checks += 1
        if not condition:
            self.failures.append(what)
        return condition


class Answer(Protocol):
    """An answer as both checkers read it (HTTP/1.1's Response, h2c's H2Response)."""

    @property
    def status(self) -> int | None: ...

    @property
    def body(self) -> bytes: ...

    @property
    def text(self) -> str: ...

    def header(self, name: str) -> str | None: ...


def media_type(value: str | None) -> tuple[str, str | None]:
    """'text/plain; charset=UTF-8' -> ('text/plain', 'utf-8')"""
    if not value:
        return "", None
    parts = [p.strip() for p in value.split(";")]
    charset = next(
        (p.split("=", 1)[1].strip().strip('"').lower() for p in parts[1:] if p.lower().startswith("charset=")), None
    )
    return parts[0].lower(), charset


def expect_answer(
    report: Report,
    path: str,
    r: Answer,
    expected: Expected,
    names: tuple[str, str, str] = ("Content-Type", "Date", "Server"),
) -> None:
    """The checks every answer gets, whatever its protocol: status, body, media type (and charset where the contract
    names one), a date and a server header. `names`: the headers as the protocol writes them, for the messages
    (HTTP/2: lower case)."""
    content_type, date, server = names
    status, body, mtype, charset = expected.status, expected.body, expected.mtype, expected.charset
    report.expect(r.status == status, f"GET {path}: status {r.status}, expected {status}")
    if body is not None:
        report.expect(r.text == body, f"GET {path}: body {r.text[:80]!r}, expected {body[:80]!r}")
    if mtype is not None:
        got_type, got_charset = media_type(r.header("content-type"))
        report.expect(got_type == mtype, f"GET {path}: {content_type} {r.header('content-type')!r}, expected {mtype}")
        if charset:
            report.expect(
                got_charset == charset,
                f"GET {path}: {content_type} {r.header('content-type')!r} lacks charset={charset}",
            )
    report.expect(r.header("date") is not None, f"GET {path}: no {date} header")
    report.expect(r.header("server") is not None, f"GET {path}: no {server} header")
    if expected.document is not None:
        report.expect(r.body == expected.document, f"GET {path}: not the seed document")


def tweet_id(report: Report, r: Answer | None) -> int | None:
    """The id of a tweet answer, or None (reported) when its body is not the compact tweet list."""
    found = TWEETS.match(r.text) if r else None
    if not report.expect(
        found is not None, f"GET /v1/tweets: body {r.text[:100] if r else ''!r} is not the compact tweet list"
    ):
        return None
    assert found is not None
    return int(found.group(1))


def expect_tweet_ids(report: Report, ids: list[int]) -> None:
    """Two tweet answers' ids: the counter starts at 1000000 and grows."""
    report.expect(
        ids[0] >= TWEET_COUNTER_START, f"GET /v1/tweets: id {ids[0]} below the counter's start {TWEET_COUNTER_START}"
    )
    report.expect(ids[1] > ids[0], f"GET /v1/tweets: id did not grow on the next request ({ids[0]} then {ids[1]})")


UpstreamCount = Callable[[], int]  # the requests the upstream has served so far (its count's own reads left out)


def expect_upstream_fetches(report: Report, step: Step, count: UpstreamCount, ask: Callable[[], Answer | None]) -> None:
    """UPSTREAM_FETCHES requests of `step.path` (each through `ask`, which checks its answer), counted by the
    upstream: each must reach it once. A server that caches the upstream's answer fails."""
    try:
        before = count()
        for _ in range(UPSTREAM_FETCHES):
            if ask() is None:
                return  # reported
        served = count() - before
    except (OSError, ValueError) as exc:
        report.expect(False, f"GET {step.path}: the upstream's count of requests served could not be read: {exc}")
        return
    report.expect(
        served == UPSTREAM_FETCHES,
        f"GET {step.path} {UPSTREAM_FETCHES} times: the upstream served {served} request(s) meanwhile, "
        f"not {UPSTREAM_FETCHES}; each /weather request must fetch the upstream's document (no cached answer)",
    )
