"""A case's verdict: its outcome (wire.Reply, described) against what the RFC allows, written as short patterns:

- `400`, `4xx`, `200 200`: the final responses' statuses in order (`handled`: the request was parsed and routed:
  2xx, 3xx, 404 or 405, whatever the server does with that method; `refused`: any other 4xx or 5xx);
- a suffix `+close` (the server then closed the connection) or `+open` (it kept it open); without one, either;
- `close` (no answer, closed), `none` (no answer, still open when the probe gave up), `not-http`.

`pass` where a pattern of the case's `passes` matches, `warn` where one of its `warns` does (an answer the RFC
permits but that is lenient), `fail` otherwise."""

from __future__ import annotations

from collections import Counter
from typing import Any

HANDLED = ("2", "3", "404", "405")
VERDICTS = ("pass", "warn", "fail")


def matches(pattern: str, got: str) -> bool:
    """Whether the outcome `got` (wire.Reply.describe) is one `pattern` allows."""
    if pattern in ("close", "none", "not-http") or got in ("close", "none", "not-http"):
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


def verdict(passes: tuple[str, ...], warns: tuple[str, ...], got: str) -> str:
    if any(matches(p, got) for p in passes):
        return "pass"
    return "warn" if any(matches(w, got) for w in warns) else "fail"


def expected_text(passes: tuple[str, ...], warns: tuple[str, ...]) -> str:
    """What a case expects, as results.json and the report say it: `400+close | warn: 200`."""
    return " or ".join(passes) + (f" | warn: {' or '.join(warns)}" if warns else "")


def counts(cases: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Passed, warned and failed cases per category, and over all of them (`all`)."""
    by: dict[str, Counter[str]] = {}
    for case in cases:
        for key in (case["category"], "all"):
            by.setdefault(key, Counter())[case["verdict"]] += 1
    return {key: {v: tally[v] for v in VERDICTS} | {"cases": sum(tally.values())} for key, tally in by.items()}


def score(compliance: dict[str, Any]) -> float | None:
    """The share of cases passed or warned (what the RFC permits), 0 to 1; None when nothing was probed."""
    total = (compliance.get("counts") or {}).get("all") or {}
    if not total.get("cases"):
        return None
    return float(total["pass"] + total["warn"]) / float(total["cases"])


def must_failures(compliance: dict[str, Any]) -> list[dict[str, Any]]:
    """The failed cases whose requirement is a MUST: what the report names one by one."""
    return [c for c in compliance.get("cases") or [] if c["verdict"] == "fail" and c["level"] == "MUST"]
