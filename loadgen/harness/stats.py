"""Statistics over a record's attempts (median, min, max, spread) and a benchstat-like comparison of two records.

Spread is the coefficient of variation: the sample standard deviation of the attempts divided by their mean
(`statistics.stdev / statistics.mean`); it needs two attempts or more and is None with one.

Comparison rule (`compare_metric`): a change between run A and run B is *significant* when
  1. both sides have at least two attempts (otherwise the spread is unknown and the verdict is None), and
  2. the ranges [min, max] of A's and B's attempts do not overlap, and
  3. the relative change of the medians exceeds the larger of the two spreads: |Δ| > max(cv_A, cv_B).
Why not a Mann-Whitney U test as benchstat does: with the default REPEAT=3 per side the smallest two-sided p-value
it can give is 2/C(6,3) = 0.1, so at α = 0.05 no change would ever be significant. The range rule answers the
question a reader asks ("is the difference larger than the noise we measured?") with the samples we have; it is
deliberately conservative: a change inside the noise of either run is reported as not significant.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass


def describe(values: list[float | None]) -> dict | None:
    """median, min, max, cv (None with fewer than two values) and n of the values that are not None."""
    xs = [float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not xs:
        return None
    mean = statistics.fmean(xs)
    cv = statistics.stdev(xs) / mean if len(xs) >= 2 and mean > 0 else None
    return {
        "median": statistics.median(xs),
        "min": min(xs),
        "max": max(xs),
        "cv": round(cv, 4) if cv is not None else None,
        "n": len(xs),
    }


def measured_attempts(record: dict) -> list[dict]:
    """The attempts that produced a measurement (a failed attempt has no rate)."""
    attempts = record.get("attempts")
    if not isinstance(attempts, list):
        return []
    return [a for a in attempts if not a.get("failed") and a.get("rps") is not None]


def summarize(record: dict) -> dict:
    """{"rps": describe(...), "p99": describe(...)} over the record's measured attempts (either may be None)."""
    attempts = measured_attempts(record)
    return {
        "rps": describe([a["rps"] for a in attempts]),
        "p99": describe([(a.get("latency_ms") or {}).get("p99") for a in attempts]),
    }


def summary_of(record: dict) -> dict:
    """The record's stored summary, or one computed now (records written before summaries existed)."""
    return record.get("summary") or summarize(record)


@dataclass(frozen=True)
class Change:
    """How a metric moved from A to B."""

    a: float | None  # medians
    b: float | None
    delta: float | None  # relative change of the medians, (b - a) / a
    significant: bool | None  # None: cannot tell (a side has a single attempt or is missing)
    reason: str

    @property
    def delta_pct(self) -> float | None:
        return None if self.delta is None else self.delta * 100


def compare_metric(a: dict | None, b: dict | None) -> Change:
    """Compare two `describe` results (see the module's docstring for the rule)."""
    if not a or not b:
        return Change(a and a["median"], b and b["median"], None, None, "missing on one side")
    if a["median"] == 0:
        return Change(a["median"], b["median"], None, None, "A is zero")
    delta = (b["median"] - a["median"]) / a["median"]
    if a["n"] < 2 or b["n"] < 2:
        return Change(a["median"], b["median"], delta, None, "one attempt: spread unknown")
    noise = max(a["cv"] or 0.0, b["cv"] or 0.0)
    overlap = a["min"] <= b["max"] and b["min"] <= a["max"]
    if overlap:
        return Change(a["median"], b["median"], delta, False, "ranges overlap")
    if abs(delta) <= noise:
        return Change(a["median"], b["median"], delta, False, f"|Δ| within spread {noise:.1%}")
    return Change(a["median"], b["median"], delta, True, f"ranges apart, |Δ| > spread {noise:.1%}")


def fmt_rate(value: float | None) -> str:
    """A req/s figure for people: 12,345 / 123.4 / 0.52."""
    if value is None:
        return "-"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:,.1f}".rstrip("0").rstrip(".")
    return f"{value:.2f}"


def fmt_ms(value: float | None) -> str:
    """A latency in milliseconds for people: 3 significant digits (0.421, 4.63, 12.3, 1,234)."""
    if value is None:
        return "-"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    if abs(value) >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def geomean_ratio(ratios: list[float]) -> float | None:
    """Geometric mean of B/A ratios (benchstat's summary line)."""
    xs = [r for r in ratios if r and r > 0]
    return statistics.geometric_mean(xs) if xs else None
