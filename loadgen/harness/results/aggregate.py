"""A record made of its attempts: the counts summed, the medians of their rates and latencies (harness.results.summary),
their latency histograms added, the samples' medians and peaks, every attempt kept, its summary computed once."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from harness.config.scenarios import LoadRun, Scenario
from harness.results import mix
from harness.results import summary as summaries
from harness.results.records import Attempt, Record, SampleSummary, Warmup
from harness.stats import intervals as stats
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
    return sum(int(p["threads"]) for p in attempt.processes)


def aggregate(of: Measured, scenario: Scenario, run: LoadRun, attempts: list[Attempt], warmup: Warmup) -> Record:
    """One record per (server, scenario, run): sums of counts, the medians of the attempts' rates and latencies, their
    whole distribution, every attempt."""
    middle = summaries.middle_attempt(attempts)
    whole = summaries.distribution(attempts)

    def sample(role: str, key: str, pick: Callable[[list[float]], float]) -> float | None:
        values: list[float] = [
            getattr(a.samples[role], key)
            for a in attempts
            if role in a.samples and getattr(a.samples[role], key) is not None
        ]
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
        threads=_threads(middle) or run.load.get("threads"),
        load={**run.load, "protocol": scenario.protocol_of(run)} if scenario.protocol_of(run) else run.load,
        requests=sum(a.requests for a in attempts),
        good_requests=sum(a.good_requests for a in attempts),
        errors=sum((a.errors for a in attempts), Errors()),
        duration_s=round(sum(a.duration_s or 0 for a in attempts), 3),
        rps=summaries.median_rps(attempts),
        latency_ms=summaries.median_latency(attempts),
        failed=next((f"attempt {a.attempt}: {a.failed}" for a in attempts if a.failed), None),
        attempts=attempts,
        warmup=warmup,
        summary=None,
        samples={
            role: SampleSummary(
                cpu_util=sample(role, "cpu_util", stats.median), peak_rss_mb=sample(role, "peak_rss_mb", max)
            )
            for role in ("server", "loadgen")
        },
        # a mix's per-attempt endpoints stay with their attempts: the record's own are pooled (`endpoints` below)
        details={k: v for k, v in middle.details.items() if k != "endpoints"} if middle else {},
        latency_histogram=whole.encode() if whole else None,
    )
    record.summary = summaries.summarize(record.tool, record.load, attempts)
    if scenario.mix:
        record.endpoints = mix.endpoints(attempts, [(t.path, t.weight) for t in scenario.mix])
    return record
