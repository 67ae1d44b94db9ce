"""A warm-up: what makes a server warm before its attempts, carried out (whether one is needed, and of which kind, is
the plan's: schedule.warmup_step).

A primer (a few sequential requests), then runs of the scenario's own load, each sized like an attempt to last
`rule.duration_s` (a counting tool's request count from the last run's rate), until the latest half of its runs (at
least `rule.window`, at most five) show no trend beyond the tolerance (harness.stats.trend.settled, judged_window):
a JIT that still climbs is not called warm because two or three short runs happened to agree. A server's first
warm-up on connection-per-request load also runs until its manifest's `warmup_connections` were made. At most
`rule.max_runs` runs and `rule.max_s` seconds. The last run's rate sizes the attempts.

Where the server's JIT can be watched (a HotSpot JVM on this machine: harness.basics.jit), it decides instead of the
connection count: the warm-up ends once the compilers took at most JIT_QUIET of the server's CPU in each of its latest
`window` runs and those runs' rates are settled. While the JIT still compiles no rates end it, however flat: that is
the plateau mid-climb which judging on the latest half (up to five runs) guards against where the JIT is not seen.

Before any rate is known ab runs for its time (-t); a run in which no request completed (ten fibonacci(35) at once
take longer than a second on one core, and ab -t drops the requests still under way) is followed by one twice as long
(at most MAX_UNSIZED_S)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol, cast

from harness.basics import httpclient, interrupt, jit
from harness.basics.messages import say, warn
from harness.config.scenarios import WarmupRule
from harness.measuring.run_plan import Job, WarmupStep
from harness.measuring.tool_processes import Outcome
from harness.results import records as results
from harness.results.records import WarmupRun
from harness.servers.readiness import Target
from harness.stats import trend
from harness.tools import TOOLS, LoadSpec

WARMUP_TIMEOUT_S = 60  # ab scenarios allow 10000 s; wrk sizes its latency histogram by its timeout
PRIMER_REQUESTS = 10
MAX_UNSIZED_S = 8.0  # the longest a warm-up run without a known rate grows to
# a run in which the JIT compilers took at most this share of the server's CPU is quiet: 18-50 % while akka, socko and
# finagle climbed, 0-3 % on their plateau, a recompilation's run 9-17 % (harness/basics/jit.py)
JIT_QUIET = 0.05


class Loader(Protocol):
    """What a warm-up needs of the campaign's executor (executor.LoadExecutor): a load run and recorded, the turn that wakes
    the server measured, the servers that died, and where the tools' outputs go."""

    dead: dict[str, str]
    turn: Callable[[str], None] | None

    @property
    def raw(self) -> Path: ...

    def load(
        self, target: Target, tool: str, spec: LoadSpec, stem: str, label: str, what: str, expected_rps: float | None
    ) -> Outcome: ...


@dataclass
class Progress:
    """The warm-up's runs so far."""

    window: int  # the fewest runs its end is judged on
    connections: int  # new connections its JIT's first warm-up must make
    runs: list[WarmupRun] = field(default_factory=list)
    rate: float | None = None
    made: int = 0  # requests made
    steady: bool = False
    started: float = field(default_factory=time.monotonic)

    @property
    def judged(self) -> int:
        """The latest runs its end is judged on (trend.judged_window)."""
        return trend.judged_window(len(self.runs), self.window)

    @property
    def jit_watched(self) -> bool:
        """Whether the server's JIT was read in any run (harness.basics.jit)."""
        return any(r.jit_share is not None for r in self.runs)

    def jit_quiet(self) -> bool:
        """The JIT took at most JIT_QUIET of the server's CPU in each of the latest `window` runs."""
        latest = [r.jit_share for r in self.runs[-self.window :]]
        return len(latest) == self.window and all(s is not None and s <= JIT_QUIET for s in latest)

    @property
    def settled(self) -> bool:
        """Its rates steady and, where its JIT is watched, the JIT quiet."""
        return self.steady and (self.jit_quiet() or not self.jit_watched)

    def enough(self) -> bool:
        return self.settled and (self.jit_watched or self.made >= self.connections)

    def add(
        self,
        rps: float | None,
        duration_s: float | None,
        requests: int,
        errors: int | None,
        tolerance: float,
        jit_share: float | None = None,
    ) -> None:
        self.made += requests
        self.runs.append(
            WarmupRun(
                rps=round(rps, 1) if rps is not None else None,
                duration_s=duration_s,
                errors=errors,
                jit_share=round(jit_share, 3) if jit_share is not None else None,
            )
        )
        self.rate = rps or self.rate
        latest = [r.rps for r in self.runs[-self.judged :]]
        rates = [r for r in latest if r is not None]
        if not all(latest) or len(self.runs) < self.window:
            self.steady = False
        elif self.jit_watched and self.jit_quiet():  # the JIT done: no plateau mid-climb to guard against
            self.steady = trend.settled(rates[-self.window :], self.window, tolerance)
        else:
            self.steady = trend.settled(rates, self.judged, tolerance)


def warm_up(bench: Loader, step: WarmupStep, rule: WarmupRule) -> results.Warmup:
    """`step`'s warm-up (see the module's docstring), its loads run by `bench`."""
    job = step.job
    scenario, target = job.scenario, cast(Target, job.target)
    _prime(bench, target, scenario.path_for(job.server) or "")  # a job has a path
    tool_name, base, run_s = _load(job, rule)
    window = max(2, rule.window, scenario.warmup.min_runs if scenario.warmup else 2)
    done = Progress(window, step.connections)
    max_runs = max(rule.max_runs, window)
    unsized_s = run_s  # a run's length while no rate is known
    while (
        len(done.runs) < max_runs
        and not done.enough()
        and job.name not in bench.dead
        and (len(done.runs) < window or time.monotonic() - done.started < rule.max_s)
    ):
        interrupt.check()
        n = len(done.runs) + 1
        spec = TOOLS[tool_name].sized(base, run_s if done.rate else unsized_s, done.rate)
        before = _jit_time(target)
        outcome = bench.load(
            target,
            tool_name,
            spec,
            f"warmup/{job.name}-{scenario.name}-{job.run.label}-{n}",
            f"{job.name} {scenario.name} warm-up {n}",
            f"{job.label} warm-up run {n}",
            done.rate,
        )
        m = outcome.measurement
        rps = m.rps if m and not outcome.failure and m.requests else None
        if rps is None and done.rate is None:
            unsized_s = min(unsized_s * 2, MAX_UNSIZED_S)
        requests, errors = (m.requests, m.errors.total) if m else (0, None)
        share = jit.share(before, _jit_time(target))
        done.add(rps, m.duration_s if m else None, requests, errors, rule.tolerance, share)
    if done.rate is None and job.name not in bench.dead:
        warn(
            f"{job.name} {scenario.name}: every warm-up run failed (see {bench.raw / 'warmup'}); the "
            "attempts are sized without a rate and taken on a server that may not be warm"
        )
    _announce(step, tool_name, run_s, done, rule)
    return results.Warmup(
        tool=tool_name,
        runs=done.runs,
        steady=done.settled,
        tolerance=rule.tolerance,
        max_runs=max_runs,
        rate=round(done.rate, 1) if done.rate else None,
        window=done.judged,
    )


def _load(job: Job, rule: WarmupRule) -> tuple[str, LoadSpec, float]:
    """A warm-up run's tool, load and length: the scenario's own warm-up load where it names one, else its run's."""
    scenario, target = job.scenario, cast(Target, job.target)
    own = scenario.warmup.run if scenario.warmup else job.run
    base = own.spec(target.running.url(scenario.protocol_of(own)) + (scenario.path_for(job.server) or ""))
    base = replace(base, timeout_s=min(base.timeout_s or WARMUP_TIMEOUT_S, WARMUP_TIMEOUT_S))
    run_s = own.load.get("duration_s", rule.duration_s) if scenario.warmup else rule.duration_s
    return scenario.warmup_tool, base, run_s


def _jit_time(target: Target) -> jit.CpuTime | None:
    """The server's JIT and total CPU time (harness.basics.jit); None for one on another machine (no kernel start
    recorded: a remote Docker host) or without a HotSpot JIT."""
    running = target.running
    return jit.read(running.pid) if running.pid and running.pid_start is not None else None


def _prime(bench: Loader, target: Target, path: str) -> None:
    """A few sequential requests first; in interleaved rounds the server may be asleep (SIGSTOP): it is woken first,
    or the primer would wait out its timeout."""
    if bench.turn:
        bench.turn(target.name)
    for _ in range(PRIMER_REQUESTS):
        interrupt.check()
        try:
            httpclient.get(target.running.host, target.running.port, path, timeout=60)
        except (OSError, httpclient.HttpError):
            break


def _announce(step: WarmupStep, tool_name: str, run_s: float, done: Progress, rule: WarmupRule) -> None:
    job = step.job
    rates = ", ".join(f"{r.rps:,.0f}" if r.rps else "failed" for r in done.runs)
    verdict = (
        f"steady (the latest {done.window if done.jit_watched else done.judged} within {rule.tolerance:.0%})"
        if done.settled
        else f"NOT steady within {rule.tolerance:.0%} after {len(done.runs)} runs, "
        f"{time.monotonic() - done.started:.0f} s"
    )
    if done.jit_watched:
        shares = ", ".join("?" if r.jit_share is None else f"{r.jit_share:.0%}" for r in done.runs[-done.window :])
        quiet = "quiet" if done.jit_quiet() else "still compiling"
        first = f" (its JIT {quiet}: {shares} of its CPU in the latest runs)"
    elif step.connections:
        first = f" (at least {step.connections:,} new connections: its JIT's first)"
    else:
        first = ""
    say(
        f"  {job.name} {job.label} warm-up ({tool_name}): {len(done.runs)} run(s) of about {run_s:g} s, "
        f"{done.made:,} requests{first}, {verdict} ({rates} req/s)"
    )
