"""The plan of a run: which warm-ups (a full one, a JIT's first climb, or none because the same load came just
before), which attempts in what order, and how long each usually takes. Decided here once: the clock adds the plan up
before the run (clock.estimate), the rounds carry it out (scheduler.py), and neither decides anything of its own.

Why a warm-up matches the scenario's own tool and connection pattern: a server warmed with keep-alive requests has not
warmed its accept path (the akka-http family served 935 new connections/s after a keep-alive warm-up, 2,200 after one
of new connections)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.config.manifest import Server
from harness.config.scenarios import LoadRun, Scenario, Settings
from harness.stats.sitting_shape import ATTEMPT_OVERHEAD_S, START_S, Costs

# For the estimate only (clock.py): a start's and a load's costs (START_S, ATTEMPT_OVERHEAD_S, shared with the report's
# duel times); the runs a warm-up takes, which grow as the machine is unsteady (the probe's CV; docs/measuring.md, "Time")
WARMUP_RUNS_STEADY, WARMUP_RUNS_PER_CV = 3.8, 9.0
# what a JVM's first connection-per-request climb makes, as connections a second: the six JVMs' 570,000 connections
# took 128 s and 156 s in those benches (akka, pekko and play ~2,000 a second; finagle, socko and spray 5,000-10,000)
JIT_WARMUP_RPS = 4000.0
# a JVM whose compilers the warm-up waits for (harness/basics/jit.py): runs of 0.8 s a warm-up in the three benches of
# 2 Dec, probe 4-9 % before each: 8.5-9.0 outside its first on new connections (the servers without a JIT 3.8-4.9),
# 26-29 on that first one (low-compute, where the connections above expected 15 s)
JIT_RUNS, JIT_FIRST_RUNS = 8.8, 28.0
ASSUMED_RPS = 5000.0  # a run given by request count (the seed profile) before any rate is known
# What sizes a load, not what it is: two runs that differ only in these are the same load.
SIZING_FIELDS = frozenset({"duration_s", "requests", "calls_per_connection", "timeout_s"})
# what a server was loaded with (tool, path, the load's other fields), and what a warm-up must match
LoadKey = tuple[str, str | None, tuple[tuple[str, Any], ...]]
Pattern = tuple[Any, ...]


@dataclass(frozen=True)
class Job:
    """One server under one run of a scenario: what a warm-up, an attempt and a record are of. `target` is whatever
    stands for the server while it runs (a Target; the estimate, which starts nothing, gives None and reads only
    `server`)."""

    target: object
    server: Server
    scenario: Scenario
    run: LoadRun

    @property
    def name(self) -> str:
        return self.server.name

    @property
    def label(self) -> str:
        return f"{self.scenario.name} {self.run.label}"


@dataclass(frozen=True)
class WarmupStep:
    """The warm-up before a job's attempts: a full one (`first`: the server's first on this connection pattern, which
    also makes its JIT's `connections`), or none where `after` names the load measured just before (its `rate` then
    sizes the attempts)."""

    job: Job
    first: bool = False
    connections: int = 0
    after: str | None = None
    rate: float | None = None

    def seconds(self, settings: Settings, runs: float = WARMUP_RUNS_STEADY) -> float:
        """Its expected length: `runs` runs (a JVM's, as many as its JIT takes to go quiet), or the JIT's connections
        where making them takes longer (the runs go on until both are done)."""
        if self.after is not None:
            return 0.0
        scenario, run = self.job.scenario, self.job.run
        if self.job.server.warmup_connections:  # a JIT that climbs for long (the manifest says how far)
            runs = max(runs, JIT_FIRST_RUNS if self.connections else JIT_RUNS)
        # ab's runs are whole rounds of its connections: at least one round at the assumed rate (long: 19,000)
        one_round = (run.load.get("concurrency") or 0) / ASSUMED_RPS if scenario.warmup_tool == "ab" else 0.0
        usual = warmup_seconds(scenario, settings, runs, one_round)
        return max(usual, self.connections / JIT_WARMUP_RPS)


@dataclass
class History:
    """What each server was last loaded with, and the connection patterns it was warmed on, in this campaign."""

    last_load: dict[str, tuple[LoadKey, str, float | None]] = field(
        default_factory=dict
    )  # name -> (load_key, "scenario run", last req/s)
    warmed: set[tuple[str, Pattern]] = field(default_factory=set)  # (name, pattern)

    def loaded(self, job: Job, rate: float | None) -> None:
        self.last_load[job.name] = (load_key(job.scenario, job.run, job.server), job.label, rate)


def load_key(scenario: Scenario, run: LoadRun, server: Server) -> LoadKey:
    """What a server was last loaded with, for telling whether a warm-up would repeat it: the tool, the path and every
    load field but the sizing ones (quick `long` after `low-compute`: the same ab load at c1000 on /factorial)."""
    fields = tuple(sorted((k, v) for k, v in run.load.items() if k not in SIZING_FIELDS))
    return scenario.tool, scenario.path_for(server), fields


def pattern(scenario: Scenario, run: LoadRun) -> Pattern:
    """What a warm-up must match: the tool, whether connections are kept (ab -k, or not) and the protocol; a scenario
    with a warm-up load of its own is warmed once, before its first run."""
    if scenario.warmup:
        return scenario.warmup.tool, None
    return scenario.tool, bool(run.load.get("keepalive")), scenario.protocol_of(run)


def first_connections(server: Server, scenario: Scenario, run: LoadRun) -> int:
    """The connections a server's first warm-up on this load must make (its manifest's `warmup_connections`, its
    JIT's work on the accept path) where the warm-up load opens one per request (ab without -k); 0 elsewhere."""
    own = scenario.warmup.run if scenario.warmup else run
    return server.warmup_connections if scenario.warmup_tool == "ab" and not own.load.get("keepalive") else 0


def warmed_runs(scenario: Scenario) -> list[LoadRun]:
    """The runs a warm-up precedes: the first, each that changes the connection pattern (backend: close, then
    keep-alive), and each at more connections than its pattern was warmed at (weather: c1, then c256). A JVM warmed on
    one connection is not warm at 256: on 27 Nov, weather c256 measured right after c1 climbed through its eight
    attempts (spray 8.6k to 19.0k req/s, finagle 13.7k to 25.1k). A scenario with a warm-up load of its own is warmed
    once."""
    out: list[LoadRun] = []
    last, warmed_at = None, 0
    for run in scenario.runs:
        connections = 0 if scenario.warmup else int(run.load.get("concurrency") or 0)
        if pattern(scenario, run) != last or connections > warmed_at:
            out.append(run)
            last, warmed_at = pattern(scenario, run), connections
    return out


def warmup_step(job: Job, history: History) -> WarmupStep | None:
    """The warm-up `job` needs before its attempts (None: the run follows one of the same pattern in this scenario);
    `history` notes it."""
    scenario, run = job.scenario, job.run
    if all(run is not r for r in warmed_runs(scenario)):
        return None
    last = history.last_load.get(job.name)
    if last and last[0] == load_key(scenario, run, job.server):
        return WarmupStep(job, after=last[1], rate=last[2])
    key = (job.name, pattern(scenario, run))
    first = key not in history.warmed
    history.warmed.add(key)
    return WarmupStep(job, first=first, connections=first_connections(job.server, scenario, run) if first else 0)


def turns(names: list[str], round_no: int) -> list[tuple[str, tuple[int, int] | None]]:
    """Who takes round `round_no` (from 1) in what order, with (position, of) where several share it: whoever went
    first last round goes later this one."""
    shift = (round_no - 1) % len(names)
    order = names[shift:] + names[:shift]
    return [(name, (i, len(order)) if len(order) > 1 else None) for i, name in enumerate(order, 1)]


def neighbours_by_rate(names: Sequence[str], rates: dict[str, float | None]) -> list[str]:
    """The order of a group's turns from its second round on: by warm-up rate, fastest first, so that the servers
    closest in speed, the pairs hardest to tell apart, take neighbouring turns, where the machine's drift they share
    is largest (docs/noise.md: next turn alike at +0.37 to +0.49, four or more turns apart +0.20 to +0.31), and
    their paired ratio is the narrowest. A server without a rate keeps its place after those with one. The first
    round keeps the warm-up's order: each server's first attempt follows its own warm-up closely."""
    known = sorted((n for n in names if rates.get(n)), key=lambda n: -(rates[n] or 0.0))
    return known + [n for n in names if not rates.get(n)]


def attempt_seconds(run: LoadRun) -> float:
    """How long one attempt of `run` should take: its duration, or its request count at an assumed rate."""
    load = run.load
    if load.get("duration_s"):
        return float(load["duration_s"])
    count = load.get("requests") or load.get("users") or load["concurrency"] * (load.get("calls_per_connection") or 1)
    return float(count) / ASSUMED_RPS


def warmup_run_seconds(scenario: Scenario, settings: Settings) -> float:
    """How long one warm-up run lasts: the scenario's own warm-up load's duration, or the profile's rule."""
    if scenario.warmup:
        return float(scenario.warmup.run.load.get("duration_s", settings.warmup.duration_s))
    return settings.warmup.duration_s


def expected_warmup_runs(unsteadiness: float) -> float:
    """The runs a warm-up is expected to take on a machine whose probe reads a CV of `unsteadiness`."""
    return WARMUP_RUNS_STEADY + WARMUP_RUNS_PER_CV * max(unsteadiness, 0.0)


def warmup_seconds(
    scenario: Scenario, settings: Settings, runs: float = WARMUP_RUNS_STEADY, least_run_s: float = 0.0
) -> float:
    """How long a warm-up of `runs` runs takes, each at least `least_run_s`: the profile's rule, or the scenario's own
    warm-up load and its minimum runs."""
    runs = max(runs, scenario.warmup.min_runs) if scenario.warmup else runs
    return runs * (max(warmup_run_seconds(scenario, settings), least_run_s) + ATTEMPT_OVERHEAD_S)


def sitting_costs(scenario: Scenario, run: LoadRun, settings: Settings) -> Costs:
    """What a start of a paired sitting (make versus, make duel) costs before any was measured: two starts and two
    warm-ups, and a round of two attempts."""
    setup = 2 * (START_S + warmup_seconds(scenario, settings))
    return Costs(setup, 2 * (attempt_seconds(run) + ATTEMPT_OVERHEAD_S))


def remeasure_seconds(run: LoadRun, repeat: int, settings: Settings) -> float:
    """What measuring a record again costs: a further warm-up of `window` runs, then its attempts back to back."""
    return settings.warmup.window * (settings.warmup.duration_s + ATTEMPT_OVERHEAD_S) + repeat * (
        attempt_seconds(run) + ATTEMPT_OVERHEAD_S
    )
