"""Statistics over a record's typed attempts: which attempts measured something, each one's server CPU per request, the
record's figures (the median of its attempts' req/s and latencies, by harness.stats.intervals.median: the mean of the
middle two of an even count), its whole latency distribution (every measured attempt's histogram added), and its
`Summary` (stats.describe of req/s, p99 and CPU per request), computed once when the record is made (`summarize`) and
completed only for files an older harness wrote (`completed`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.basics.distribution import Distribution
from harness.results.records import Attempt, Record, Summary
from harness.stats import intervals as stats


def measured(attempts: Sequence[Attempt]) -> list[Attempt]:
    """The attempts that produced a measurement (a failed attempt has no rate)."""
    return [a for a in attempts if a.measured]


def attempt_cost_us(attempt: Attempt) -> float | None:
    """The server's CPU per request in one attempt, in µs: its processes' CPU seconds over the requests completed."""
    server = attempt.samples.get("server")
    cpu_s = server.cpu_s if server else None
    if cpu_s is None or not attempt.requests:
        return None
    return round(cpu_s / attempt.requests * 1e6, 2)


def requests_per_connection(tool: str | None, load: dict[str, Any]) -> int | None:
    """How many requests each connection carries, where the load fixes it: 1 for ab without keep-alive, httperf's
    calls per connection; None for keep-alive loads whose connections live as long as the run."""
    if tool == "ab" and not load.get("keepalive"):
        return 1
    if tool == "httperf" and load.get("calls_per_connection"):
        return int(load["calls_per_connection"])
    return None


def median_rps(attempts: Sequence[Attempt]) -> float | None:
    """The median of the measured attempts' req/s (the mean of the middle two of an even count)."""
    rates = [a.rps for a in measured(attempts) if a.rps is not None]
    return stats.median(rates) if rates else None


def median_latency(attempts: Sequence[Attempt]) -> dict[str, float | None]:
    """Each latency figure (p50, p99, max ...) the median of the measured attempts that have it, by the same rule."""
    taken = measured(attempts)
    keys = [k for a in taken for k in a.latency_ms]
    out: dict[str, float | None] = {}
    for key in dict.fromkeys(keys):
        values = [v for a in taken if (v := a.latency_ms.get(key)) is not None]
        out[key] = round(stats.median(values), 4) if values else None
    return out


def middle_attempt(attempts: Sequence[Attempt]) -> Attempt | None:
    """The measured attempt whose req/s is nearest the median (the lower of the middle two of an even count): where
    one attempt must stand for the record (its `details`, its load plan's threads)."""
    taken = sorted(measured(attempts), key=lambda a: a.rps or 0.0)
    return taken[(len(taken) - 1) // 2] if taken else None


def distribution(attempts: Sequence[Attempt]) -> Distribution | None:
    """Every request of the measured attempts, their histograms added (exact); None unless each has one."""
    taken = measured(attempts)
    encoded = [a.latency_histogram for a in taken]
    if not taken or any(e is None for e in encoded):
        return None
    return Distribution.merged(Distribution.decode(e) for e in encoded if e is not None)


def summarize(tool: str | None, load: dict[str, Any], attempts: Sequence[Attempt]) -> Summary:
    """stats.describe over the measured attempts of their req/s, p99, server CPU µs per request, and (one request per
    connection, httperf's calls per connection) per connection; any may be None."""
    taken = measured(attempts)
    costs = [attempt_cost_us(a) for a in taken]
    per_connection = requests_per_connection(tool, load)
    return Summary(
        rps=stats.describe([a.rps for a in taken]),
        p99=stats.describe([a.latency_ms.get("p99") for a in taken]),
        cost_us=stats.describe(costs),
        cost_us_per_connection=stats.describe([c * per_connection if c is not None else None for c in costs])
        if per_connection
        else None,
    )


def completed(record: Record) -> Summary:
    """The record's stored summary as it is; only one an older harness wrote is completed: computed whole where it has
    none, its costs added where it has none, and an interval ("ci") given to each figure that lacks one, from the
    attempts (or, where their count differs from the summary's, the min–max interval of its min, max and n)."""
    stored = record.summary
    if stored is None:
        return summarize(record.tool, record.load, record.attempts)
    figures = {"rps": stored.rps, "p99": stored.p99}
    missing = [name for name, d in figures.items() if d is not None and "ci" not in d]
    # written before costs were summarized, though the attempts sampled the server's CPU
    costs_missing = stored.cost_us is None and any(attempt_cost_us(a) is not None for a in measured(record.attempts))
    if not missing and not costs_missing:
        return stored
    fresh = summarize(record.tool, record.load, record.attempts)
    out = Summary(
        rps=stored.rps, p99=stored.p99, cost_us=stored.cost_us, cost_us_per_connection=stored.cost_us_per_connection
    )
    if costs_missing:
        out.cost_us, out.cost_us_per_connection = fresh.cost_us, fresh.cost_us_per_connection
    for name in missing:
        old: dict[str, Any] = getattr(stored, name)
        new: dict[str, Any] | None = getattr(fresh, name)
        ci = new["ci"] if new and new["n"] == old.get("n") else stats.interval_from_range(old)
        if ci:
            setattr(out, name, dict(old, ci=ci))
    return out
