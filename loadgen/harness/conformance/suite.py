"""The HTTP/1.1 suite run against one server: every case of cases_syntax.py, cases_framing.py, cases_desync.py and
cases_response.py, each on its own connection (a few at a time: a case that waits for an answer it should not get
costs seconds), judged, and gathered into the `compliance.<server>` entry of results.json. Ctrl-C stops it within
a poll of the reader (wire.Timing.poll_s): every connection looks at one stop event."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from harness.conformance import checks, verdicts
from harness.conformance.case import Case
from harness.conformance.cases_desync import SMUGGLED_BODY, TWO_STEP
from harness.conformance.cases_framing import FRAMING
from harness.conformance.cases_response import CHECKED
from harness.conformance.cases_syntax import SYNTAX
from harness.conformance.wire import DEFAULT_TIMING, Reply, Timing, exchange

CASES: list[Case] = SYNTAX + FRAMING + TWO_STEP + CHECKED
AT_ONCE = 16  # connections in flight: the waiting cases overlap (a server that never finishes costs 2 s a round), and no server here minds 16
SHOWN_BYTES = 160  # of what a case sends, as results.json keeps it (the rest said by its length)


def run(host: str, port: int, cases: list[Case] | None = None, timing: Timing = DEFAULT_TIMING) -> list[dict[str, Any]]:
    """Every case (default: all of them) against host:port, in the cases' order, each judged. On Ctrl-C the cases
    in flight are told to stop and the interrupt goes on at once (their threads end within `timing.poll_s`)."""
    chosen = CASES if cases is None else cases
    stop = threading.Event()
    pool = ThreadPoolExecutor(AT_ONCE, thread_name_prefix="probe")
    try:
        outcomes = list(pool.map(lambda case: outcome(host, port, case, timing, stop), chosen))
    except BaseException:
        stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    return [judged(case, got) for case, got in zip(chosen, outcomes)]


def outcome(host: str, port: int, case: Case, timing: Timing, stop: threading.Event | None = None) -> str:
    """What the server did with `case`, in verdicts.py's words (a response check's own words for a checked case)."""
    try:
        reply = exchange(host, port, case.sent, timing, then=case.then, head_requests=case.heads, stop=stop)
    except OSError as exc:  # refused: the server is gone (not the case's answer, but what happened)
        return f"error: {exc.strerror or exc}"
    if case.check:
        return checks.CHECKS[case.check](reply)
    return described(reply)


def described(reply: Reply) -> str:
    """reply.describe(), each response carrying the smuggled request's body marked `[smuggled]`."""
    return reply.describe(lambda r: verdicts.SMUGGLED if r.body == SMUGGLED_BODY else "")


def judge(case: Case, got: str) -> str:
    if case.check:
        if got == "checked" or got.startswith("n/a"):
            return "pass"
        return "fail" if case.level == "MUST" else "warn-lenient"
    return verdicts.verdict(case.level, (case.passes, case.lenient, case.strict), got)


def judged(case: Case, got: str) -> dict[str, Any]:
    """A case as results.json holds it."""
    return {
        "id": case.id,
        "category": case.category,
        "rfc": case.rfc,
        "level": case.level,
        "what": case.what,
        "requirement": case.quotes(),
        "sent": shown(case.sent) + (f" then {shown(case.then)}" if case.then else ""),
        "expected": "the responses as the requirement says" if case.check else _expected(case),
        "got": got,
        "verdict": judge(case, got),
    }


def _expected(case: Case) -> str:
    return verdicts.expected_text(case.passes, case.lenient, case.strict)


def shown(sent: bytes) -> str:
    """`sent` readable: CR, LF, tab and other control bytes escaped, cut after SHOWN_BYTES with its length said."""
    text = "".join(_escaped(b) for b in sent[:SHOWN_BYTES])
    return text + (f"… ({len(sent):,} bytes)" if len(sent) > SHOWN_BYTES else "")


def _escaped(byte: int) -> str:
    named = {0x0D: "\\r", 0x0A: "\\n", 0x09: "\\t", 0x5C: "\\\\"}
    if byte in named:
        return named[byte]
    return chr(byte) if 0x20 <= byte < 0x7F else f"\\x{byte:02x}"


def compliance(cases: list[dict[str, Any]], h2c: dict[str, Any] | None = None, version: str = "") -> dict[str, Any]:
    """A server's `compliance` entry: its cases (HTTP/1.1, then h2c's where it speaks it), the counts per category,
    over HTTP/1.1 (`all`) and over h2c (`h2c`) apart, how the h2c part was probed, and the version probed."""
    everything = cases + (h2c or {}).get("cases", [])
    out: dict[str, Any] = {"cases": everything, "counts": verdicts.counts(everything), "version": version or "unknown"}
    if h2c:
        out["h2c"] = {k: v for k, v in h2c.items() if k != "cases"}
    return out
