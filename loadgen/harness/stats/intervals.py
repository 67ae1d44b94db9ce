"""Statistics of a few numbers (a record's attempts' figures): the median, min, max, spread and a confidence interval
of the median, and which of two intervals lies above the other. Pure numbers: what the numbers are (a record's
attempts, their costs) is harness.results.summary's, how they are printed harness.basics.formats'.

The median of an even count is the mean of the middle two (`median`, statistics.median), everywhere: a record's
figures, its summary, `make compare`.

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

These intervals are what each record shows. Two records of one run are not ordered by them but by their attempts'
ranks or their paired rounds (harness.stats.attempt_ranks, harness.judging.round_pairs; docs/statistics.md).

Between two runs (`make compare`, harness.history.compare.compare_metric) a change is *significant* when
  1. both sides have at least two attempts (otherwise nothing is known of their uncertainty and the verdict is None), and
  2. the two medians' intervals do not overlap (touching ends count as overlapping).
Otherwise the two are a tie ("="), whatever the size of the change of the medians. Two runs are two sittings, whose
machines differ by more than their attempts show; the intervals' rule is the stricter one, and `make history` weighs
that difference between runs itself (harness.history.confirm).
"""

from __future__ import annotations

import math
import statistics
from typing import Any

CI_LEVEL = 0.95  # the coverage sought for a median's interval (reached from n = 6 attempts on)
CI_METHOD = "order-statistic"  # [x_(k), x_(n+1-k)] with the largest k whose coverage is >= CI_LEVEL
CI_MIN_MAX = "min-max"  # too few attempts to reach CI_LEVEL: the attempts' min–max, at the level it has
CI_SINGLE = "single-attempt"  # one attempt: an interval of one point, level 0


def coverage(k: int, n: int) -> float:
    """The probability that [x_(k), x_(n+1-k)] of n independent attempts contains the true median:
    1 − 2·BinomCDF(k−1; n, ½), exact (a multiple of 2^-n)."""
    if n < 1 or not 1 <= k <= (n + 1) // 2:
        raise ValueError(f"no interval x_({k})..x_({n + 1 - k}) among {n} attempts")
    below = sum(math.comb(n, i) for i in range(k))  # 2^n · BinomCDF(k−1; n, ½)
    return float((2**n - 2 * below) / 2**n)


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
    return {
        "low": s["min"],
        "high": s["max"],
        "level": coverage(1, n),
        "method": CI_SINGLE if n == 1 else CI_METHOD if coverage(1, n) >= CI_LEVEL else CI_MIN_MAX,
        "k": 1,
    }


def cv(xs: list[float]) -> float | None:
    """The coefficient of variation, `statistics.stdev / statistics.mean` rounded to 4 places; None with fewer than two
    values or a mean that is not positive."""
    if len(xs) < 2 or statistics.fmean(xs) <= 0:
        return None
    return round(statistics.stdev(xs) / statistics.fmean(xs), 4)


def median(values: list[float]) -> float:
    """The median: the middle value, or the mean of the middle two of an even count (the one rule everywhere)."""
    return float(statistics.median(values))


def describe(values: list[float | None]) -> dict[str, Any] | None:
    """median, min, max, cv (None with fewer than two values), n, and ci (`median_interval`) of the values that are not
    None."""
    xs = [float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not xs:
        return None
    return {
        "median": median(xs),
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


def geomean_ratio(ratios: list[float]) -> float | None:
    """Geometric mean of B/A ratios (benchstat's summary line)."""
    xs = [r for r in ratios if r and r > 0]
    return float(statistics.geometric_mean(xs)) if xs else None
