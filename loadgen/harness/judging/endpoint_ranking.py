"""A request mix ranked per endpoint (docs/mixes.md), with the same intervals and rules as every record
(harness.judging.ranking): the mix's records rank on the whole by req/s like any record; inside the mix, each path
ranks the servers by its own p99 latency, lower first.

Why p99 and not req/s per path: in a closed loop each path's rate is its share of the whole's (the draw sets the
shares), so a per-path req/s would only repeat the whole's order; in an open model (a fixed rate) every server sends
the same rate. What the blend does to a route shows in its latency.

The figure and its interval: each measured attempt's p99 of the path, read from that attempt's own requests of the
path (its HdrHistogram in the attempt's details, never from other percentiles); their median and its order-statistic
interval (harness.stats.intervals.describe), as a record's req/s is the median of its attempts with its interval.

The rules: a record takes part as it does in the whole's ranking (ranking.takes_part: at least two attempts, none of
the flags that keep a record out), and with at least two attempts that measured the path. B is above A when B's p99
interval lies wholly below A's (touching ends overlap). That order is transitive, so a record's range of places is
1 + the records surely above it to the count minus those surely below, as in ranking.rank: 1–3 is a server that may
be first or third on that path."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.basics.distribution import Distribution
from harness.judging import ranking
from harness.results.records import Record
from harness.stats import intervals as stats

METRIC = "p99"


def attempt_figures(record: Record, path: str, key: str = METRIC) -> list[float | None]:
    """Each measured attempt's `key` latency (ms) on `path`, from that attempt's own requests of the path; None for
    an attempt that has no histogram of it."""
    out: list[float | None] = []
    for attempt in record.attempts:
        if not attempt.measured:
            continue
        endpoint = (attempt.details.get("endpoints") or {}).get(path) or {}
        encoded = endpoint.get("latency_histogram")
        out.append(Distribution.decode(encoded).latency_ms().get(key) if encoded else None)
    return out


def summary(record: Record, path: str) -> dict[str, Any] | None:
    """The median of the attempts' p99 on `path` with its interval (stats.describe), None where none measured it."""
    return stats.describe(attempt_figures(record, path))


@dataclass(frozen=True)
class EndpointStanding:
    """A record's place on one path of its mix: the range of places its p99 interval allows."""

    record: Record
    path: str
    p99: dict[str, Any]  # stats.describe of the attempts' p99 on the path
    rank: int  # 1 + the records whose interval lies wholly below this one's
    worst: int  # the count minus the records whose interval lies wholly above

    @property
    def label(self) -> str:
        """ "2", or "1–3" where the place is a range."""
        return f"{self.rank}–{self.worst}" if self.worst > self.rank else str(self.rank)


def faster(b: dict[str, Any], a: dict[str, Any]) -> bool:
    """B's p99 interval lies wholly below A's: B is above A on the path."""
    ib, ia = stats.interval(b), stats.interval(a)
    return ib is not None and ia is not None and ib[1] < ia[0]


def rank(records: list[Record], path: str) -> list[EndpointStanding]:
    """The standings on `path` of the records (one mix's run) that take part, listed by the middle of their range,
    then by median p99."""
    taking = []
    for record in records:
        found = summary(record, path)
        if ranking.takes_part(record) and found and found["n"] >= 2:
            taking.append((record, found))
    out = [
        EndpointStanding(
            record,
            path,
            figure,
            1 + sum(faster(other, figure) for _, other in taking),
            len(taking) - sum(faster(figure, other) for _, other in taking),
        )
        for record, figure in taking
    ]
    return sorted(out, key=lambda s: (s.rank + s.worst, s.p99["median"]))


def paths(records: list[Record]) -> list[str]:
    """The mix's paths in the order its records list them."""
    out: list[str] = []
    for record in records:
        out += [p for p in record.endpoints or {} if p not in out]
    return out
