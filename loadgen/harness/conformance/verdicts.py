"""A case's verdict: its outcome (wire.Reply, described) against what the RFC allows, written as short patterns:

- `400`, `4xx`, `200 200`: the final responses' statuses in order (`handled`: the request was parsed and routed:
  2xx, 3xx, 404 or 405, whatever the server does with that method; `refused`: any other 4xx or 5xx);
- a suffix `+close` (the server then closed the connection) or `+open` (it kept it open); without one, either;
- `close` (no answer, closed), `none` (no answer, still open when the probe gave up), `not-http`, `bad-framing`,
  `too-big`, `too-many` (what the server sent could not be read as HTTP/1.x responses, or never ended).

Four verdicts: `pass` where a pattern of the case's `passes` matches (what the RFC requires, or prefers where it
leaves a choice); `warn-strict` where one of its `strict` does (refused where the RFC asks or permits acceptance:
it fails closed); `warn-lenient` where one of its `lenient` does (a MAY or SHOULD, or the permissive side of a
MUST's either/or, taken the permissive way); `fail` otherwise, for a MUST. A SHOULD or MAY cannot be failed: an
outcome its patterns do not name warns, strict when it refused (an error status, or a close), lenient when it went
on. A response that cannot be read, and a smuggled request answered (a two-step case's `[smuggled]`), fail any case."""

from __future__ import annotations

from collections import Counter
from typing import Any

HANDLED = ("2", "3", "404", "405")
VERDICTS = ("pass", "warn-lenient", "warn-strict", "fail", "skip")  # skip: an h2spec case whose precondition was unmet
BROKEN = ("not-http", "bad-framing", "too-big", "too-many")
WORDS = ("close", "none", *BROKEN)
SMUGGLED = "[smuggled]"


def matches(pattern: str, got: str) -> bool:
    """Whether the outcome `got` (wire.Reply.describe) is one `pattern` allows."""
    got = got.replace(SMUGGLED, "")
    if pattern in WORDS or got in WORDS:
        return pattern == got
    statuses, _, connection = got.partition("+")
    wanted, _, wanted_connection = pattern.partition("+")
    if wanted_connection and wanted_connection != connection:
        return False
    got_codes, wanted_codes = statuses.split(), wanted.split()
    return len(got_codes) == len(wanted_codes) and all(map(_status_matches, wanted_codes, got_codes))


def _status_matches(wanted: str, got: str) -> bool:
    if wanted == "handled":
        return got.startswith(HANDLED[:2]) or got in HANDLED[2:]
    if wanted == "refused":
        return got.startswith(("4", "5")) and got not in HANDLED[2:]
    if wanted.endswith("xx"):
        return got[0] == wanted[0]
    return got == wanted


def refused(got: str) -> bool:
    """Whether an outcome turned the request away: no answer and closed, or a first answer that is an error."""
    first = got.split("+")[0].split(" ")[0]
    return got == "close" or _status_matches("refused", first)


def verdict(level: str, patterns: tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]], got: str) -> str:
    """The verdict on `got` for a case of `level` with (passes, lenient, strict) patterns; see the module's doc."""
    passes, lenient, strict = patterns
    if SMUGGLED in got or got.startswith("error"):
        return "fail"
    if any(matches(p, got) for p in passes):
        return "pass"
    if any(matches(p, got) for p in strict):
        return "warn-strict"
    if any(matches(p, got) for p in lenient):
        return "warn-lenient"
    if level == "MUST" or got in BROKEN:
        return "fail"
    return "warn-strict" if refused(got) else "warn-lenient"


def expected_text(passes: tuple[str, ...], lenient: tuple[str, ...], strict: tuple[str, ...]) -> str:
    """What a case expects, as results.json and the report say it: `400+close | lenient: 200 | strict: close`."""
    text = " or ".join(passes)
    text += f" | lenient: {' or '.join(lenient)}" if lenient else ""
    return text + (f" | strict: {' or '.join(strict)}" if strict else "")


def is_h2c(category: str) -> bool:
    return category.startswith("h2c")


def counts(cases: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Per category, over HTTP/1.1's cases (`all`) and over h2c's (`h2c`): the cases of each verdict, `warn` (both
    kinds), the MUST failures, and the cases."""
    by: dict[str, Counter[str]] = {}
    musts: Counter[str] = Counter()
    for case in cases:
        for key in (case["category"], "h2c" if is_h2c(case["category"]) else "all"):
            by.setdefault(key, Counter())[case["verdict"]] += 1
            musts[key] += case["verdict"] == "fail" and case["level"] == "MUST"
    return {
        key: {v: t[v] for v in VERDICTS}
        | {"warn": t["warn-lenient"] + t["warn-strict"], "must_fail": musts[key], "cases": t.total()}
        for key, t in by.items()
    }


def share_passed(counts_of: dict[str, int] | None) -> float | None:
    """The share of cases passed outright, 0 to 1; None when nothing was probed."""
    if not counts_of or not counts_of.get("cases"):
        return None
    return float(counts_of["pass"]) / float(counts_of["cases"])


def score(compliance: dict[str, Any]) -> float | None:
    """The HTTP/1.1 share passed (`share_passed` of `all`), the same case set for every server."""
    return share_passed((compliance.get("counts") or {}).get("all"))


def must_failures(compliance: dict[str, Any]) -> list[dict[str, Any]]:
    """The HTTP/1.1 cases failed whose requirement is a MUST: what the report names one by one."""
    return [
        c
        for c in compliance.get("cases") or []
        if c["verdict"] == "fail" and c["level"] == "MUST" and not is_h2c(c["category"])
    ]
