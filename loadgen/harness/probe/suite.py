"""The HTTP/1.1 suite run against one server: every case of cases_syntax.py and cases_framing.py, each on its own
connection (a few at a time: a case that waits for an answer it should not get costs seconds), judged, and gathered
into the `compliance.<server>` entry of results.json."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from harness.probe import verdicts
from harness.probe.case import Case
from harness.probe.cases_framing import FRAMING
from harness.probe.cases_syntax import SYNTAX
from harness.probe.wire import DEFAULT_TIMING, Timing, exchange

CASES: list[Case] = SYNTAX + FRAMING
AT_ONCE = 8  # connections in flight: the waiting cases overlap, and no server here minds 8 connections
SHOWN_BYTES = 160  # of what a case sends, as results.json keeps it (the rest said by its length)


def run(host: str, port: int, cases: list[Case] | None = None, timing: Timing = DEFAULT_TIMING) -> list[dict[str, Any]]:
    """Every case (default: all of them) against host:port, in the cases' order, each judged."""
    chosen = CASES if cases is None else cases
    with ThreadPoolExecutor(AT_ONCE) as pool:
        outcomes = list(pool.map(lambda case: _outcome(host, port, case, timing), chosen))
    return [judged(case, got) for case, got in zip(chosen, outcomes)]


def _outcome(host: str, port: int, case: Case, timing: Timing) -> str:
    try:
        return exchange(host, port, case.sent, timing).describe()
    except OSError as exc:  # refused: the server is gone (not the case's answer, but what happened)
        return f"error: {exc.strerror or exc}"


def judged(case: Case, got: str) -> dict[str, Any]:
    """A case as results.json holds it."""
    return {
        "id": case.id,
        "category": case.category,
        "rfc": case.rfc,
        "level": case.level,
        "what": case.what,
        "sent": shown(case.sent),
        "expected": verdicts.expected_text(case.passes, case.warns),
        "got": got,
        "verdict": verdicts.verdict(case.passes, case.warns, got),
    }


def shown(sent: bytes) -> str:
    """`sent` readable: CR, LF, tab and other control bytes escaped, cut after SHOWN_BYTES with its length said."""
    text = "".join(_escaped(b) for b in sent[:SHOWN_BYTES])
    return text + (f"… ({len(sent):,} bytes)" if len(sent) > SHOWN_BYTES else "")


def _escaped(byte: int) -> str:
    named = {0x0D: "\\r", 0x0A: "\\n", 0x09: "\\t", 0x5C: "\\\\"}
    if byte in named:
        return named[byte]
    return chr(byte) if 0x20 <= byte < 0x7F else f"\\x{byte:02x}"


def compliance(cases: list[dict[str, Any]], h2c: dict[str, Any] | None = None) -> dict[str, Any]:
    """A server's `compliance` entry: its cases (HTTP/1.1, then h2c's where it speaks it), the counts per category,
    and how the h2c part was probed."""
    everything = cases + (h2c or {}).get("cases", [])
    out: dict[str, Any] = {"cases": everything, "counts": verdicts.counts(everything)}
    if h2c:
        out["h2c"] = {k: v for k, v in h2c.items() if k != "cases"}
    return out
