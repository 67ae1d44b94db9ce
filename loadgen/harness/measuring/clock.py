"""A campaign's clock: the whole run's estimate before it starts (the plan of schedule.py added up), and its remaining
time as it goes."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from harness.config.manifest import Server
from harness.config.scenarios import Scenario, Settings
from harness.measuring.schedule import (
    ATTEMPT_OVERHEAD_S,
    START_S,
    History,
    Job,
    attempt_seconds,
    warmup_step,
)


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
    """Plans every server start, warm-up and attempt on `clock`, as the plan (schedule.py) has them; returns the
    counts for the announcement."""
    counts = {"servers": 0, "records": 0, "attempts": 0, "warmups": 0}
    for server in servers:
        applicable = [s for s in scenarios if s.path_for(server)]
        if not applicable:
            continue
        counts["servers"] += 1
        clock.plan(START_S)
        history = History()
        for scenario in applicable:
            repeat = scenario.repeat(settings)
            for run in scenario.runs:
                job = Job(None, server, scenario, run)
                step = warmup_step(job, history)
                if step is not None and step.after is None:
                    counts["warmups"] += 1
                    clock.plan(step.seconds(settings))
                history.loaded(job, None)
                counts["records"] += 1
                counts["attempts"] += repeat
                clock.plan(repeat * (attempt_seconds(run) + ATTEMPT_OVERHEAD_S))
    return counts
