"""Statistics over a record's attempts (median, min, max, spread, a confidence interval of the median) and the
comparison of two records.

Spread is the coefficient of variation: the sample standard deviation of the attempts divided by their mean
(`statistics.stdev / statistics.mean`); it needs two attempts or more and is None with one.

Uncertainty of a median: a distribution-free order-statistic interval (`median_interval`).
For n attempts sorted x_(1) ≤ … ≤ x_(n), the interval [x_(k), x_(n+1-k)] contains the true median with probability
    coverage(k, n) = 1 − 2·BinomCDF(k−1; n, ½)
whatever the distribution of the attempts (each attempt falls below the true median with probability ½, so the number
below it is Binomial(n, ½)). We take the narrowest interval (the largest k) whose coverage is ≥ 95 %. With n ≤ 5 no
interval reaches 95 %; then it is the widest there is, the attempts' min–max (k = 1), with coverage 1 − 2^(1−n):
75 % at n = 3, 87.5 % at n = 4, 93.75 % at n = 5; n = 6 reaches 96.9 % with min–max, n = 10 gives [x_(2), x_(9)] at
97.9 %. The level actually reached is recorded beside the interval, never rounded up to 95 %. A single attempt gives
an interval of one point at level 0: nothing is known about its uncertainty.
Why not a bootstrap: with the 3–5 attempts a run makes, a bootstrap of the median is degenerate. A resample's
median can only be one of the attempts (with n = 3: the smallest or the largest in 7/27 of resamples each, the middle
one in 13/27), so its "95 %" percentile interval is just the attempts' min–max, labelled 95 % where its true coverage
is 75 %. The order-statistic interval is exact for any n, assumes nothing about the distribution, and says honestly
how little 3 attempts can tell.

Ranking (harness.results.ranking.rank) and comparison use the intervals: two figures are told apart only when their
intervals do not overlap.

Comparison rule (`compare_metric`): a change between run A and run B is *significant* when
  1. both sides have at least two attempts (otherwise nothing is known of their uncertainty and the verdict is None), and
  2. the two medians' intervals do not overlap (touching ends count as overlapping).
Otherwise the two are a tie ("="), whatever the size of the change of the medians. Why not a Mann-Whitney U test as
benchstat does: with the default REPEAT=3 per side the smallest two-sided p-value it can give is 2/C(6,3) = 0.1, so
at α = 0.05 no change would ever be significant.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

CI_LEVEL = 0.95  # the coverage sought for a median's interval (reached from n = 6 attempts on)
CI_METHOD = "order-statistic"  # [x_(k), x_(n+1-k)] with the largest k whose coverage is >= CI_LEVEL
CI_MIN_MAX = "min-max"  # too few attempts to reach CI_LEVEL: the attempts' min–max, at the level it has
CI_SINGLE = "single-attempt"  # one attempt: an interval of one point, level 0

INTERVAL_NOTE = (
    "The interval beside a median is a distribution-free confidence interval of the median from order statistics: "
    "for n attempts, [x(k), x(n+1-k)] contains the true median with probability 1 − 2·BinomCDF(k−1; n, ½). The "
    "narrowest one reaching 95 % is used; with 5 attempts or fewer none does, and it is the attempts' min–max at the "
    "level it has (75 % with 3 attempts, 87.5 % with 4, 93.75 % with 5). The level shown is the one reached. Not a "
    "bootstrap: with 3–5 attempts a bootstrap of the median only ever draws the attempts themselves and labels their "
    "min–max 95 % where it covers 75 %.")


def coverage(k: int, n: int) -> float:
    """The probability that [x_(k), x_(n+1-k)] of n independent attempts contains the true median:
    1 − 2·BinomCDF(k−1; n, ½), exact (a multiple of 2^-n)."""
    if n < 1 or not 1 <= k <= (n + 1) // 2:
        raise ValueError(f"no interval x_({k})..x_({n + 1 - k}) among {n} attempts")
    below = sum(math.comb(n, i) for i in range(k))  # 2^n · BinomCDF(k−1; n, ½)
    return float((2 ** n - 2 * below) / 2 ** n)


def interval_k(n: int, level: float = CI_LEVEL) -> int:
    """The largest k (the narrowest interval) whose coverage is >= level; 1 (min–max) when none reaches it."""
    best = 1
    for k in range(2, (n + 1) // 2 + 1):
        if coverage(k, n) < level:
            break
        best = k
    return best


def median_interval(values: list[float], level: float = CI_LEVEL) -> dict[str, Any] | None:
    """{"low", "high", "level", "method", "k"}: the order-statistic confidence interval of the median of `values`
    (see the module's docstring); "level" is the coverage actually reached, which is below `level` with few values."""
    xs = sorted(values)
    n = len(xs)
    if not n:
        return None
    k = interval_k(n, level)
    reached = coverage(k, n)
    method = CI_SINGLE if n == 1 else CI_METHOD if reached >= level else CI_MIN_MAX
    return {"low": xs[k - 1], "high": xs[n - k], "level": reached, "method": method, "k": k}


def interval_from_range(s: dict[str, Any]) -> dict[str, Any] | None:
    """The min–max interval of a stored summary that has no "ci" and whose attempts are gone: [x_(1), x_(n)] covers the
    median with probability 1 − 2^(1−n) for any n (the widest order-statistic interval)."""
    n = s.get("n")
    if not n or s.get("min") is None or s.get("max") is None:
        return None
    return {"low": s["min"], "high": s["max"], "level": coverage(1, n),
            "method": CI_SINGLE if n == 1 else CI_METHOD if coverage(1, n) >= CI_LEVEL else CI_MIN_MAX, "k": 1}


def cv(xs: list[float]) -> float | None:
    """The coefficient of variation, `statistics.stdev / statistics.mean` rounded to 4 places; None with fewer than two
    values or a mean that is not positive."""
    if len(xs) < 2 or statistics.fmean(xs) <= 0:
        return None
    return round(statistics.stdev(xs) / statistics.fmean(xs), 4)


def describe(values: list[float | None]) -> dict[str, Any] | None:
    """median, min, max, cv (None with fewer than two values), n, and ci (`median_interval`) of the values that are not
    None."""
    xs = [float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not xs:
        return None
    return {
        "median": statistics.median(xs),
        "min": min(xs),
        "max": max(xs),
        "cv": cv(xs),
        "n": len(xs),
        "ci": median_interval(xs),
    }


def interval(s: dict[str, Any] | None) -> tuple[float, float] | None:
    """(low, high) of a `describe` result: its ci, or its median as a point when it has none."""
    if not s:
        return None
    ci = s.get("ci")
    if ci:
        return ci["low"], ci["high"]
    return (s["median"], s["median"]) if s.get("median") is not None else None


def above(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    """True when a's interval lies entirely above b's (touching ends are an overlap, not above)."""
    ia, ib = interval(a), interval(b)
    return ia is not None and ib is not None and ia[0] > ib[1]


def overlap(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    return not above(a, b) and not above(b, a)


def measured_attempts(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The attempts that produced a measurement (a failed attempt has no rate)."""
    attempts = record.get("attempts")
    if not isinstance(attempts, list):
        return []
    return [a for a in attempts if not a.get("failed") and a.get("rps") is not None]


def attempt_cost_us(attempt: dict[str, Any]) -> float | None:
    """The server's CPU per request in one attempt, in µs: its processes' CPU seconds over the requests completed."""
    cpu_s = ((attempt.get("samples") or {}).get("server") or {}).get("cpu_s")
    requests = attempt.get("requests")
    if cpu_s is None or not requests:
        return None
    return round(float(cpu_s) / float(requests) * 1e6, 2)


def requests_per_connection(record: dict[str, Any]) -> int | None:
    """How many requests each connection carries, where the load fixes it: 1 for ab without keep-alive, httperf's
    calls per connection; None for keep-alive loads whose connections live as long as the run."""
    load = record.get("load") or {}
    if record.get("tool") == "ab" and not load.get("keepalive"):
        return 1
    if record.get("tool") == "httperf" and load.get("calls_per_connection"):
        return int(load["calls_per_connection"])
    return None


def summarize(record: dict[str, Any]) -> dict[str, Any]:
    """{"rps", "p99", "cost_us", "cost_us_per_connection"}: `describe` over the record's measured attempts of their
    req/s, p99, server CPU µs per request, and (one-request-per-connection loads, httperf's calls per connection) per
    connection; any may be None."""
    attempts = measured_attempts(record)
    costs = [attempt_cost_us(a) for a in attempts]
    per_connection = requests_per_connection(record)
    return {
        "rps": describe([a["rps"] for a in attempts]),
        "p99": describe([(a.get("latency_ms") or {}).get("p99") for a in attempts]),
        "cost_us": describe(costs),
        "cost_us_per_connection": describe([c * per_connection if c is not None else None for c in costs])
        if per_connection else None,
    }


def summary_of(record: dict[str, Any]) -> dict[str, Any]:
    """The record's stored summary, or one computed now (records written before summaries existed). A stored summary
    written before intervals existed gets its "ci" computed from the record's attempts (or, without them, the min–max
    interval of its min, max and n); the record itself is not changed."""
    stored: dict[str, Any] | None = record.get("summary")
    if not stored:
        return summarize(record)
    missing = [m for m, d in stored.items() if isinstance(d, dict) and "ci" not in d]
    costs_missing = stored.get("cost_us") is None  # written before costs were summarized (or none was sampled)
    if not missing and not costs_missing:
        return stored
    fresh = summarize(record)
    out = dict(stored)
    if costs_missing:
        out.update(cost_us=fresh["cost_us"], cost_us_per_connection=fresh["cost_us_per_connection"])
    for metric in missing:
        d = stored[metric]
        f = fresh.get(metric)
        ci = f["ci"] if f and f["n"] == d.get("n") else interval_from_range(d)
        if ci:
            out[metric] = dict(d, ci=ci)
    return out


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


def compare_metric(a: dict[str, Any] | None, b: dict[str, Any] | None) -> Change:
    """Compare two `describe` results (see the module's docstring for the rule)."""
    if not a or not b:
        return Change(a["median"] if a else None, b["median"] if b else None, None, None, "missing on one side")
    if a["median"] == 0:
        return Change(a["median"], b["median"], None, None, "A is zero")
    delta = (b["median"] - a["median"]) / a["median"]
    if a["n"] < 2 or b["n"] < 2:
        return Change(a["median"], b["median"], delta, None, "one attempt: uncertainty unknown")
    if overlap(a, b):
        return Change(a["median"], b["median"], delta, False, f"intervals overlap: {interval_text(a)} and {interval_text(b)}")
    return Change(a["median"], b["median"], delta, True, f"intervals apart: {interval_text(a)} and {interval_text(b)}")


def fmt_level(level: float | None) -> str:
    """A coverage for people: 75 %, 87.5 %, 96.9 %."""
    if level is None:
        return "-"
    return f"{level * 100:.1f}".rstrip("0").rstrip(".") + " %"


def interval_text(s: dict[str, Any] | None, fmt: Callable[[float], str] | None = None) -> str:
    """'35,266 – 40,867 (75 %)' for a `describe` result; '-' without an interval, the point with one attempt."""
    fmt = fmt or fmt_rate
    ci = (s or {}).get("ci")
    if not ci:
        return "-"
    if ci["low"] == ci["high"] and (s or {}).get("n", 0) < 2:
        return f"{fmt(ci['low'])} (one attempt)"
    return f"{fmt(ci['low'])} – {fmt(ci['high'])} ({fmt_level(ci['level'])})"


def fmt_rate(value: float | None) -> str:
    """A req/s figure for people: 12,345 / 123.4 / 0.52."""
    if value is None:
        return "-"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:,.1f}".rstrip("0").rstrip(".")
    return f"{value:.2f}"


def fmt_us(value: float | None) -> str:
    """A CPU cost in microseconds for people: 24.5, 125, 20,556."""
    if value is None:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.1f}"


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
