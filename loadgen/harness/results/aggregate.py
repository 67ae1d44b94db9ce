"""A record made of its attempts: the counts summed, the median attempt's rate and latencies, the samples' medians
and peaks, every attempt kept."""
from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass

from harness.config.scenarios import LoadRun, Scenario
from harness.results.records import Attempt, Record, SampleSummary, Warmup
from harness.tools.output import Errors


@dataclass(frozen=True)
class Measured:
    """Whose record it is and where it was measured."""

    server: str
    path: str | None
    runtime: str
    round_no: int | None = None  # in a run of rounds (overhead): which round


def _threads(attempt: Attempt | None) -> int | None:
    """The threads the load plan gave a multi-threaded tool's processes together (None: a single-threaded tool's)."""
    if not attempt or not attempt.processes or all(p["threads"] == 1 for p in attempt.processes):
        return None
    threads: int = sum(p["threads"] for p in attempt.processes)
    return threads


def aggregate(of: Measured, scenario: Scenario, run: LoadRun, attempts: list[Attempt], warmup: Warmup) -> Record:
    """One record per (server, scenario, run): sums of counts, the median attempt's rate and latencies, every attempt."""
    measured = [a for a in attempts if a.measured]
    # a measured attempt has a rate
    median_attempt = sorted(measured, key=lambda a: a.rps)[(len(measured) - 1) // 2] if measured else None  # type: ignore[arg-type,return-value]

    def sample(role: str, key: str, pick: Callable[[list[float]], float]) -> float | None:
        values = [getattr(a.samples[role], key) for a in attempts
                  if role in a.samples and getattr(a.samples[role], key) is not None]
        return pick(values) if values else None

    record = Record(
        server=of.server,
        scenario=scenario.name,
        run=run.label,
        runtime=of.runtime,
        round=of.round_no,
        tool=scenario.tool,
        path=of.path,
        concurrency=run.load.get("concurrency"),
        threads=_threads(median_attempt) or run.load.get("threads"),
        load={**run.load, "protocol": scenario.protocol_of(run)} if scenario.protocol_of(run) else run.load,
        requests=sum(a.requests for a in attempts),
        good_requests=sum(a.good_requests for a in attempts),
        errors=sum((a.errors for a in attempts), Errors()),
        duration_s=round(sum(a.duration_s or 0 for a in attempts), 3),
        rps=median_attempt.rps if median_attempt else None,
        latency_ms=median_attempt.latency_ms if median_attempt else {},
        failed=next((f"attempt {a.attempt}: {a.failed}" for a in attempts if a.failed), None),
        attempts=attempts,
        warmup=warmup,
        summary=None,
        samples={role: SampleSummary(cpu_util=sample(role, "cpu_util", statistics.median),
                                     peak_rss_mb=sample(role, "peak_rss_mb", max)) for role in ("server", "loadgen")},
        details=median_attempt.details if median_attempt else {},
    )
    record.summary = record.fresh_summary()
    return record


