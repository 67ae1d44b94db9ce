"""A campaign's clock: how long each start, warm-up and attempt usually takes here, the whole run's estimate before it
starts, and its remaining time as it goes."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from harness.config.manifest import Server
from harness.config.scenarios import LoadRun, Scenario, Settings
from harness.measuring.attempts import first_connections, load_key, pattern

# For the estimate only: what starting and verifying a server, a tool's start, and a warm-up usually cost here
START_S, ATTEMPT_OVERHEAD_S, WARMUP_RUNS_EXPECTED = 6.0, 0.4, 3.5
# what a JVM's first connection-per-request climb adds, as connections a second (measured: akka ~15 s for its 60,000
# connections beyond the usual warm-up, finagle and socko ~6 s for 130,000 and more)
JIT_WARMUP_RPS = 8000.0
ASSUMED_RPS = 5000.0  # a run given by request count (the seed profile) before any rate is known


def attempt_seconds(run: LoadRun) -> float:
    """How long one attempt of `run` should take: its duration, or its request count at an assumed rate."""
    load = run.load
    if load.get("duration_s"):
        return float(load["duration_s"])
    count = load.get("requests") or load.get("users") or load["concurrency"] * (load.get("calls_per_connection") or 1)
    return count / ASSUMED_RPS


def warmup_seconds(scenario: Scenario, settings: Settings) -> float:
    """How long a warm-up usually takes: the profile's rule, or the scenario's own warm-up load and its minimum runs."""
    if scenario.warmup:
        own = scenario.warmup.run.load.get("duration_s", settings.warmup.duration_s)
        return max(WARMUP_RUNS_EXPECTED, scenario.warmup.min_runs) * (own + ATTEMPT_OVERHEAD_S)
    return WARMUP_RUNS_EXPECTED * (settings.warmup.duration_s + ATTEMPT_OVERHEAD_S)


def jit_warmup_seconds(server: Server, scenario: Scenario, run: LoadRun) -> float:
    """What a server's first warm-up on a connection-per-request load adds to the usual one (measurement.
    first_connections)."""
    return first_connections(server, scenario, run) / JIT_WARMUP_RPS


@dataclass
class Clock:
    """The run's estimated duration before it starts, and its remaining time as it goes (the estimate of what is left,
    scaled by how the estimate fared on what is done)."""

    planned: list[float] = field(default_factory=list)
    done_estimate: float = 0.0
    started: float = field(default_factory=time.monotonic)

    def plan(self, seconds: float) -> None:
        self.planned.append(seconds)

    @property
    def total(self) -> float:
        return sum(self.planned)

    def advance(self, estimated_s: float) -> None:
        self.done_estimate += estimated_s

    def elapsed_s(self) -> float:
        return time.monotonic() - self.started

    def remaining_s(self) -> float:
        left = max(self.total - self.done_estimate, 0.0)
        if self.done_estimate < 30:
            return left
        pace = (time.monotonic() - self.started) / self.done_estimate
        return left * min(max(pace, 0.5), 3.0)

    def status(self) -> str:
        share = self.done_estimate / self.total if self.total else 1.0
        return f"run {share:.0%}, ~{minutes(self.remaining_s())} left"


def minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{math.ceil(seconds):.0f} s"


def estimate(clock: Clock, servers: list[Server], scenarios: list[Scenario], settings: Settings) -> dict:
    """Plans every server start, warm-up and attempt on `clock`; returns the counts for the announcement."""
    repeat_of = {s.name: s.repeat(settings) for s in scenarios}
    counts = {"servers": 0, "records": 0, "attempts": 0, "warmups": 0}
    for server in servers:
        applicable = [s for s in scenarios if s.path_for(server)]
        if not applicable:
            continue
        counts["servers"] += 1
        clock.plan(START_S)
        last_load, patterns = None, set()
        for scenario in applicable:
            warmed = {id(r) for r in warmed_runs(scenario)}
            for run in scenario.runs:
                if id(run) in warmed and load_key(scenario, run, server) != last_load:
                    counts["warmups"] += 1
                    clock.plan(warmup_seconds(scenario, settings))
                    if pattern(scenario, run) not in patterns:  # its first warm-up on this pattern
                        clock.plan(jit_warmup_seconds(server, scenario, run))
                    patterns.add(pattern(scenario, run))
                last_load = load_key(scenario, run, server)
                counts["records"] += 1
                counts["attempts"] += repeat_of[scenario.name]
                clock.plan(repeat_of[scenario.name] * (attempt_seconds(run) + ATTEMPT_OVERHEAD_S))
    return counts


def warmed_runs(scenario: Scenario) -> list[LoadRun]:
    """The runs a warm-up precedes: the first, and each that changes the connection pattern (backend: close, then
    keep-alive)."""
    out, last = [], None
    for run in scenario.runs:
        if pattern(scenario, run) != last:
            out.append(run)
            last = pattern(scenario, run)
    return out
