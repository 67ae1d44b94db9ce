"""How well dividing by the machine's speed works: of each server's day-to-day change in req/s (the log ratio between
consecutive runs of a series, summed over its series as absolute values), the share the division removes.

Two measures of the machine's speed: the steadiness probe's loops per second (where a run kept it), and,
for runs without it, a stand-in read from the runs themselves: the pure-CPU scenario's (`high-compute`) req/s ratio
between the two runs, the median over the other servers (never the server's own, so that a server's own change is
not divided away). The stand-in says what a perfect probe could remove; the probe's figure says what it does."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from harness.history.timeline import ADJUSTED, Series

PURE_CPU = "high-compute"


@dataclass(frozen=True)
class Removed:
    server: str
    raw: float  # the sum of |log ratio| between consecutive runs, over the server's req/s series
    adjusted: float
    steps: int  # consecutive pairs of runs counted

    @property
    def share(self) -> float:
        """The share of the day-to-day change removed (negative: the division added change)."""
        return 1 - self.adjusted / self.raw if self.raw else 0.0


def _steps(series: Series) -> dict[tuple[str, str], float]:
    """(run before, run after) -> log ratio of consecutive points."""
    return {(a.run.run_id, b.run.run_id): math.log(b.value / a.value) for a, b in zip(series.points, series.points[1:])}


def _summed(pairs: list[tuple[str, float, float]]) -> list[Removed]:
    by_server: dict[str, list[tuple[float, float]]] = {}
    for server, raw, adjusted in pairs:
        by_server.setdefault(server, []).append((raw, adjusted))
    return [
        Removed(s, sum(abs(r) for r, _ in v), sum(abs(a) for _, a in v), len(v)) for s, v in sorted(by_server.items())
    ]


def by_probe(series: list[Series]) -> list[Removed]:
    """Per server, over its req/s series that have the probe's adjusted twin."""
    adjusted = {(s.server, s.scenario, s.run, s.conditions): s for s in series if s.metric == "rps" + ADJUSTED}
    pairs = []
    for s in series:
        twin = adjusted.get((s.server, s.scenario, s.run, s.conditions)) if s.metric == "rps" else None
        if twin:
            raw, adj = _steps(s), _steps(twin)
            pairs += [(s.server, raw[k], adj[k]) for k in raw if k in adj]
    return _summed(pairs)


def by_pure_cpu_stand_in(series: list[Series]) -> list[Removed]:
    """Per server, over its req/s series but the pure-CPU scenario's, each step divided by the median pure-CPU
    step of the other servers across the same two runs."""
    pure = {s.server: _steps(s) for s in series if s.metric == "rps" and s.scenario == PURE_CPU}
    pairs = []
    for s in series:
        if s.metric != "rps" or s.scenario == PURE_CPU:
            continue
        for step, raw in _steps(s).items():
            others = [steps[step] for server, steps in pure.items() if server != s.server and step in steps]
            if others:
                pairs.append((s.server, raw, raw - statistics.median(others)))
    return _summed(pairs)


def overall(removed: list[Removed]) -> float | None:
    raw = sum(r.raw for r in removed)
    return 1 - sum(r.adjusted for r in removed) / raw if raw else None


@dataclass(frozen=True)
class RunToRun:
    """One server's req/s from one run to the next (the median ratio over its series), beside the machine's."""

    before: str
    after: str
    server: str
    ratio: float
    machine: float  # the pure-CPU scenario's median ratio over the other servers (the stand-in)

    @property
    def beyond_machine(self) -> float:
        return self.ratio / self.machine


def day_steps(series: list[Series]) -> list[RunToRun]:
    """Every consecutive pair of runs that the pure-CPU stand-in covers: what each server's req/s did, and what is
    left once the machine's part is divided out; a short history's reading where change points cannot be tested."""
    pure = {s.server: _steps(s) for s in series if s.metric == "rps" and s.scenario == PURE_CPU}
    ratios: dict[tuple[tuple[str, str], str], list[float]] = {}
    for s in series:
        if s.metric == "rps" and s.scenario != PURE_CPU:
            for step, log_ratio in _steps(s).items():
                ratios.setdefault((step, s.server), []).append(log_ratio)
    out = []
    for (step, server), logs in sorted(ratios.items()):
        others = [steps[step] for name, steps in pure.items() if name != server and step in steps]
        if others:
            out.append(
                RunToRun(
                    step[0], step[1], server, math.exp(statistics.median(logs)), math.exp(statistics.median(others))
                )
            )
    return out
