"""The one result format every load tool adapter parses its output into (results.json's types: harness.results.records)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from harness.basics.distribution import Distribution


@dataclass
class Errors:
    """Failed requests by cause. `non_2xx` are answered requests with a status outside 2xx (3xx for httperf)."""

    connect: int = 0
    read: int = 0
    write: int = 0
    timeout: int = 0
    non_2xx: int = 0
    length: int = 0  # ab: body length differs from the first response's
    other: int = 0

    @property
    def total(self) -> int:
        return self.connect + self.read + self.write + self.timeout + self.non_2xx + self.length + self.other

    def __add__(self, other: Errors) -> Errors:
        return Errors(**{k: getattr(self, k) + getattr(other, k) for k in asdict(self)})

    def to_dict(self) -> dict[str, int]:
        return {**asdict(self), "total": self.total}

    @classmethod
    def from_dict(cls, d: Mapping[str, int]) -> Errors:
        """From to_dict's form (its `total` is recomputed); causes a file lacks count as 0."""
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})


LATENCY_KEYS = ("p50", "p90", "p99", "max")


@dataclass
class Measurement:
    """What one tool process (or several merged) measured."""

    requests: int  # responses the tool counted as completed (good or not)
    errors: Errors
    duration_s: float
    rps: float  # throughput as the tool reports it: completed responses per second
    latency_ms: dict[str, float | None] = field(default_factory=lambda: dict.fromkeys(LATENCY_KEYS))
    # (percent, ms) points of the latency distribution, for merging parts; not every tool gives them
    quantiles: list[tuple[float, float]] = field(default_factory=list)
    # what only some tools measure, kept as they say it, under the tool's name (each adapter's TypedDict says what):
    # oha's percentiles, h2load's counts, httperf's pace, Gatling's distribution; written as such to results.json
    details: dict[str, Any] = field(default_factory=dict)
    # every request's latency, where the tool gives per-request data (h2load's log, wrk's histogram, ab's -e slices and -g)
    distribution: Distribution | None = None

    @property
    def good_requests(self) -> int:
        """Completed requests that were not errors: a lower bound, since tools count some failed requests as
        completed (ab) and others not (connect errors): every error is assumed to have cost a counted request."""
        return max(self.requests - self.errors.total, 0)


def percentile_of_pooled(parts: list[Measurement], pct: float) -> float | None:
    """The pct-th percentile of several parts' pooled distributions, each part weighted by its request count.

    Each part's quantile points stand for equal slices of its requests; the pooled points are sorted and
    the percentile read off the cumulative weight. Exact up to the parts' quantile resolution (1 % for ab and wrk).
    """
    points: list[tuple[float, float]] = []  # (latency, weight)
    for part in parts:
        if not part.quantiles or part.requests <= 0:
            return None
        slice_weight = part.requests / len(part.quantiles)
        points.extend((ms, slice_weight) for _, ms in part.quantiles)
    points.sort()
    total = sum(w for _, w in points)
    target = total * pct / 100.0
    running = 0.0
    for ms, weight in points:
        running += weight
        if running >= target - 1e-9:
            return ms
    return points[-1][0]


def _pooled_latency(parts: list[Measurement], requests: int) -> dict[str, float | None]:
    """p50/p90/p99 of parts without whole distributions, read off their pooled quantile points (exact to one slice of
    a part); the largest max; the mean weighted by requests."""
    latency = {key: percentile_of_pooled(parts, float(key[1:])) for key in ("p50", "p90", "p99")}
    maxima = [p.latency_ms.get("max") for p in parts]
    latency["max"] = max(m for m in maxima if m is not None) if all(m is not None for m in maxima) else None
    means = [(p.latency_ms.get("mean"), p.requests) for p in parts]
    if requests and all(m is not None for m, _ in means):
        latency["mean"] = round(sum(m * n for m, n in means if m is not None) / requests, 3)
    return latency


def merge(parts: list[Measurement], started_s: list[float] | None = None) -> Measurement:
    """Parts run by several tool processes, merged into one measurement: the rate is theirs together, all requests over
    the time all parts ran (from the first one's start to the last one's end, each part `started_s` after the first on
    the harness's clock, running for its own duration: parts started one after another are never read as simultaneous),
    the errors their sum. Where every part has its whole distribution (`distribution`), the merged one is their exact
    sum and p50/p90/p99/p99.9, max and mean are read off it; otherwise p50/p90/p99 come from the pooled quantile points
    (exact to one slice of a part, no p99.9), and a tool with neither (httperf) has no merged percentiles."""
    if len(parts) == 1:
        return parts[0]
    requests = sum(p.requests for p in parts)
    duration = span_s(parts, started_s)
    errors = Errors()
    for p in parts:
        errors = errors + p.errors
    distributions = [p.distribution for p in parts if p.distribution is not None]
    whole = Distribution.merged(distributions) if len(distributions) == len(parts) else None
    latency = whole.latency_ms() if whole else _pooled_latency(parts, requests)
    # a figure a part lacks stays unknown: an ab part without its -g file holds no p99.9 (its top slice is its max)
    latency = {k: v for k, v in latency.items() if all(p.latency_ms.get(k) is not None for p in parts)}
    return Measurement(
        requests=requests,
        errors=errors,
        duration_s=duration,
        rps=requests / duration if duration > 0 else 0.0,
        latency_ms=latency,
        distribution=whole,
    )


def span_s(parts: list[Measurement], started_s: list[float] | None = None) -> float:
    """From the first part's start to the last part's end: each part `started_s` after the first (none: all at once)."""
    starts = started_s or [0.0] * len(parts)
    first = min(starts)
    return max(start - first + p.duration_s for p, start in zip(parts, starts))
