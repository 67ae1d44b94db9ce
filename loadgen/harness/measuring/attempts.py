"""One server under one load: the warm-up on the scenario's own load, an attempt sized to last the profile's
`duration_s`, and the record that gathers a run's attempts. In which order servers and attempts take their turns is
campaign.py's business, not this module's.

Why the warm-up uses the scenario's own tool and load: a server warmed with keep-alive requests has not warmed its
accept path (the akka-http family served 935 new connections/s after a keep-alive warm-up, 2,200 after one of new
connections), so a connection-per-request scenario must be warmed with connection-per-request load.
Why attempts are sized by time, not by request count: a fixed count lasts 0.4 s on one server and 20 s on another,
and a short attempt measures noise and connection set-up rather than the server. wrk takes a duration; tools that
count (httperf; ab once a rate is known: ab -t drops the requests still under way at its end, and a CPU-bound load
must end on whole rounds) get a count from the rate of the warm-up run just before. Warm-up runs are sized the same
way, so the rate that sizes the attempts was measured like them.

A server that dies is noticed right after the warm-up run or attempt it died in (or, had it died in between, right
before the next): that attempt is recorded as failed with how it ended, the end of its log is kept in its servers
entry (`deaths`), and it is not restarted: its remaining warm-up runs, attempts and scenarios are skipped.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from harness.basics import httpclient, interrupt, trend
from harness.basics.machine import timestamp
from harness.basics.messages import fail, say, warn
from harness.config.manifest import Server
from harness.config.scenarios import LoadRun, Scenario, WarmupRule
from harness.measuring.runner import Beside, Outcome, measure
from harness.measuring.session import Session
from harness.results import records as results
from harness.results.records import Attempt, Record, Sample, SampleSummary, WarmupRun
from harness.results.store import RunStore
from harness.runtime import RunningServer
from harness.tools import TOOLS, LoadSpec
from harness.tools.availability import tool_processes
from harness.tools.load_plan import plan_load
from harness.tools.output import Errors

WARMUP_TIMEOUT_S = 60  # ab scenarios allow 10000 s; wrk sizes its latency histogram by its timeout
PRIMER_REQUESTS = 10
MAX_UNSIZED_S = 8.0  # the longest a warm-up run without a known rate grows to
LOG_LINES = 20  # of a dead server's log, kept and shown
AFTER_DEATH = "its remaining scenarios were skipped (a server that died is not restarted)"


@dataclass
class Target:
    """A server that is up and has passed the contract: what a measurement needs of it."""

    server: Server
    running: RunningServer

    @property
    def name(self) -> str:
        return self.server.name


@dataclass
class Bench:
    """What every measurement of a campaign shares: where to run and record, and who else is up meanwhile."""

    session: Session
    store: RunStore
    round_no: int | None = None  # in a run of rounds (overhead), this campaign's round: its records carry it
    idle_pids: object = None  # callable(name) -> pids of the other servers that are up but idle (interleaved runs)
    status: object = None  # callable() -> text shown beside the progress bar (the run's remaining time)
    turn: object = None  # callable(name): before `name` is loaded, the others go to sleep (campaign.Turns)
    warmed: set = field(default_factory=set)  # (server, connection pattern) warmed up once already in this campaign
    remeasure_left_s: float = 0.0  # what is left of the time for measuring again what was still warming
    budget_left: object = None  # callable() -> seconds the campaign's budget leaves beyond what is still planned
    last_load: dict = field(default_factory=dict)  # name -> (load_key, "scenario run", last attempt's req/s)
    dead: dict = field(default_factory=dict)  # name -> why it died, for the servers that died in this campaign

    @property
    def raw(self) -> Path:
        """Where the tools' outputs go: raw/, or raw/<runtime>-<round>/ in a run of rounds (the same stems recur)."""
        if self.round_no is None:
            return self.store.raw
        return self.store.raw / f"{self.session.runtime.name}-{self.round_no}"

    def load(self, target: Target, tool: str, spec: LoadSpec, stem: str, label: str, what: str,
             expected_rps: float | None) -> Outcome:
        """`what` the load is, for a death's message ("hello c100 attempt 1"); `expected_rps` sets the deadline of a
        counted load. A server found dead before the load is not loaded; one that died during it fails it."""
        if self.died(target, f"before {what}"):
            return Outcome(None, f"not run: the server had died ({self.dead[target.name]})")
        session = self.session
        if self.turn:
            self.turn(target.name)
        idle = (lambda: self.idle_pids(target.name)) if self.idle_pids else None
        plan = plan_load(tool, spec, session.plan.loadgen, tool_processes(tool, spec.concurrency),
                         session.plan.loadgen_processes)
        with session.measuring(target.running):
            beside = Beside(target.running, len(target.running.cpus), idle, self.neighbours(target))
            outcome = measure(session.runtime, plan, self.raw, stem, label, beside,
                              status=self.status() if self.status else "", expected_rps=expected_rps)
        if self.died(target, f"during {what}"):
            outcome.failure = f"the server died during this load: {self.dead[target.name]}"
        return outcome

    def neighbours(self, target: Target) -> tuple[RunningServer, ...]:
        """The servers that run on the load generator's cores while `target` is loaded: the upstream nginx where it
        has no core of its own (and is not the one measured)."""
        session = self.session
        upstream = session.running().get(session.upstream.name) if session.upstream else None
        if upstream is None or upstream.name == target.name or not set(upstream.cpus) & set(session.plan.loadgen):
            return ()
        return (upstream,)

    def died(self, target: Target, when: str) -> bool:
        """Whether `target`'s server is gone. The first time it is found so, its death is announced and recorded in
        its servers entry: `when`, why (its runtime says), the end of its log, and that it is not restarted."""
        if target.name in self.dead:
            return True
        runtime = self.session.runtime
        reason = runtime.death(target.running)
        if reason is None:
            return False
        self.dead[target.name] = reason
        log = runtime.log_tail(target.running, LOG_LINES)
        if self.round_no is not None:
            when += f" ({runtime.name} runtime, round {self.round_no})"
        fail(f"{target.name} died {when} ({reason}); the end of its log:\n{log}\n  {target.name}: {AFTER_DEATH}")
        entry = dict(self.store.run.servers.get(target.name, {}))
        entry["deaths"] = [*entry.get("deaths", []), {"when": when, "reason": reason, "log_tail": log,
                                                      "then": AFTER_DEATH}]
        self.store.set_server(target.name, entry)
        return True


# What sizes a load, not what it is: two runs that differ only in these are the same load.
SIZING_FIELDS = frozenset({"duration_s", "requests", "calls_per_connection", "timeout_s"})


def load_key(scenario: Scenario, run: LoadRun, server: Server) -> tuple:
    """What a server was last loaded with, for telling whether a warm-up would repeat it: the tool, the path and every
    load field but the sizing ones (quick `long` after `low-compute`: the same ab load at c1000 on /factorial)."""
    fields = tuple(sorted((k, v) for k, v in run.load.items() if k not in SIZING_FIELDS))
    return scenario.tool, scenario.path_for(server), fields


def warm_from(previous: str, rate: float | None, tool: str) -> results.Warmup:
    """The warm-up of a run whose load is the one the server was measured with just before (`previous`, e.g.
    "low-compute c1000"): none is run; the last attempt's rate sizes the attempts."""
    return results.Warmup(tool=tool, runs=[], steady=True, tolerance=None, max_runs=None,
                          rate=round(rate, 1) if rate else None, after=previous)


def pattern(scenario: Scenario, run: LoadRun) -> tuple:
    """What a warm-up must match: the tool, whether connections are kept (ab -k, or not) and the protocol; a scenario with a
    warm-up load of its own is warmed once, before its first run."""
    if scenario.warmup:
        return scenario.warmup.tool, None
    return scenario.tool, bool(run.load.get("keepalive")), scenario.protocol_of(run)


def first_connections(server: Server, scenario: Scenario, run: LoadRun) -> int:
    """The connections a server's first warm-up on this load must make (its manifest's `warmup_connections`, its
    JIT's work on the accept path) where the warm-up load opens one per request (ab without -k); 0 elsewhere."""
    own = scenario.warmup.run if scenario.warmup else run
    return server.warmup_connections if scenario.warmup_tool == "ab" and not own.load.get("keepalive") else 0


def warm_up(bench: Bench, target: Target, scenario: Scenario, run: LoadRun, rule: WarmupRule,
            first: bool = False) -> results.Warmup:
    """A primer (a few sequential requests), then runs of the scenario's own load, each sized like an attempt to last
    `rule.duration_s` (a counting tool's request count from the last run's rate), until the latest `rule.window` runs
    show no trend beyond the tolerance (harness.basics.trend.settled): a JIT that still climbs is not called warm because two
    short runs happened to agree. A server's `first` warm-up on connection-per-request load also runs until its
    manifest's `warmup_connections` were made. At most `rule.max_runs` runs and `rule.max_s` seconds. The last run's
    rate sizes the attempts.

    Before any rate is known ab runs for its time (-t); a run in which no request completed (ten fibonacci(35) at once
    take longer than a second on one core, and ab -t drops the requests still under way) is followed by one twice as
    long (at most MAX_UNSIZED_S)."""
    path = scenario.path_for(target.server)
    if bench.turn:  # in interleaved rounds the server may be asleep (SIGSTOP): the primer would wait out its timeout
        bench.turn(target.name)
    for _ in range(PRIMER_REQUESTS):
        interrupt.check()
        try:
            httpclient.get(target.running.host, target.running.port, path, timeout=60)
        except (OSError, httpclient.HttpError):
            break
    tool_name = scenario.warmup_tool
    tool = TOOLS[tool_name]
    own = scenario.warmup.run if scenario.warmup else run
    base = own.spec(target.running.url(scenario.protocol_of(own)) + path)
    base = replace(base, timeout_s=min(base.timeout_s or WARMUP_TIMEOUT_S, WARMUP_TIMEOUT_S))
    run_s = own.load.get("duration_s", rule.duration_s) if scenario.warmup else rule.duration_s
    runs, steady, rate, made = [], False, None, 0
    unsized_s = run_s  # a run's length while no rate is known
    window = max(2, rule.window, scenario.warmup.min_runs if scenario.warmup else 2)
    connections = first_connections(target.server, scenario, run) if first else 0
    max_runs = max(rule.max_runs, window)
    started = time.monotonic()

    def enough() -> bool:
        return steady and made >= connections

    while (len(runs) < max_runs and not enough() and target.name not in bench.dead
           and (len(runs) < window or time.monotonic() - started < rule.max_s)):
        interrupt.check()
        n = len(runs) + 1
        spec = tool.sized(base, run_s if rate else unsized_s, rate)
        outcome = bench.load(target, tool_name, spec, f"warmup/{target.name}-{scenario.name}-{run.label}-{n}",
                             f"{target.name} {scenario.name} warm-up {n}",
                             f"{scenario.name} {run.label} warm-up run {n}", rate)
        m = outcome.measurement
        rps = m.rps if m and not outcome.failure and m.requests else None
        made += m.requests if m else 0
        runs.append(WarmupRun(rps=round(rps, 1) if rps is not None else None, duration_s=m.duration_s if m else None,
                              errors=m.errors.total if m else None))
        if rps is None and rate is None:
            unsized_s = min(unsized_s * 2, MAX_UNSIZED_S)
        rate = rps or rate
        latest = [r.rps for r in runs[-window:]]
        steady = all(latest) and trend.settled(latest, window, rule.tolerance)
    if rate is None and target.name not in bench.dead:
        warn(f"{target.name} {scenario.name}: every warm-up run failed (see {bench.raw / 'warmup'}); the "
             "attempts are sized without a rate and taken on a server that may not be warm")
    rates = ", ".join(f"{r.rps:,.0f}" if r.rps else "failed" for r in runs)
    verdict = (f"steady (the latest {window} within {rule.tolerance:.0%})" if steady
               else f"NOT steady within {rule.tolerance:.0%} after {len(runs)} runs, {time.monotonic() - started:.0f} s")
    say(f"  {target.name} {scenario.name} {run.label} warm-up ({tool_name}): {len(runs)} run(s) of about "
        f"{run_s:g} s, {made:,} requests" + (f" (at least {connections:,} new connections: its JIT's first)"
                                              if connections else "") + f", {verdict} ({rates} req/s)")
    return results.Warmup(tool=tool_name, runs=runs, steady=steady, tolerance=rule.tolerance,
                          max_runs=max_runs, rate=round(rate, 1) if rate else None)


def attempt_spec(scenario: Scenario, run: LoadRun, url: str, warm_rate: float | None) -> LoadSpec:
    """The run's load; where the profile gives a duration, sized to it from the warm-up's rate (see the docstring)."""
    spec = run.spec(url)
    if run.rate_share:
        if not warm_rate:
            raise ValueError(f"{scenario.name} {run.label}: no warm-up rate to take {run.rate_share:.0%} of")
        spec = replace(spec, rate=round(run.rate_share * warm_rate, 1))
    if run.load.get("duration_s"):
        spec = TOOLS[scenario.tool].sized(spec, run.load["duration_s"], warm_rate)
    return spec


def attempt(bench: Bench, target: Target, scenario: Scenario, run: LoadRun, n: int, repeat: int, warm_rate: float | None,
            round_position: tuple[int, int] | None = None) -> Attempt:
    """One measured attempt, recorded; `round_position` = (position, servers) in an interleaved round."""
    interrupt.check()
    url = target.running.url(scenario.protocol_of(run)) + scenario.path_for(target.server)
    label = f"{target.name} {scenario.name} {run.label}" + (f" #{n}" if repeat > 1 else "")
    started = time.time()
    try:
        spec = attempt_spec(scenario, run, url, warm_rate)
    except ValueError as exc:  # a rate share of a warm-up that measured nothing
        spec, outcome = None, Outcome(None, f"not run: {exc}")
    else:
        outcome = bench.load(target, scenario.tool, spec, f"{target.name}-{scenario.name}-{run.label}-{n}", label,
                             f"{scenario.name} {run.label} attempt {n}", warm_rate)
    entry = attempt_record(n, outcome, bench.store, started)
    if spec is not None:
        entry.sized_from_rps = spec.sized_from_rps
        if run.rate_share:  # what was offered, beside what the server achieved (rps)
            entry.details = {"offered_rps": spec.rate, **entry.details}
    entry.round_position = round_position
    say(_line(label, entry))
    return entry


def attempt_record(attempt_no: int, outcome: Outcome, store: RunStore, started: float) -> Attempt:
    m = outcome.measurement
    return Attempt(
        attempt=attempt_no,
        started_at=timestamp(started),
        tool_processes=len(outcome.commands),
        processes=_processes(outcome),
        loadgen_note=outcome.plan.note if outcome.plan else None,
        commands=[" ".join(c) for c in outcome.commands],
        raw=[str(p.relative_to(store.dir)) for p in outcome.raw],
        failed=outcome.failure,
        samples={role: Sample.from_dict(s) for role, s in outcome.samples.items()},
        requests=m.requests if m else 0,
        good_requests=m.good_requests if m else 0,
        errors=m.errors if m else Errors(),
        duration_s=round(m.duration_s, 3) if m else None,
        rps=round(m.rps, 2) if m else None,
        latency_ms=m.latency_ms if m else {},
        stopped=outcome.stopped,
        details=m.details if m else {},
    )


def _processes(outcome: Outcome) -> list[dict]:
    """Each tool process of the attempt: its cores, threads, the cores it can keep busy, and its CPU seconds."""
    if not outcome.plan or not outcome.commands:
        return []
    parts = outcome.plan.describe()[:len(outcome.commands)]
    for part, cpu_s in zip(parts, outcome.parts_cpu_s or [None] * len(parts)):
        part["cpu_s"] = cpu_s
    return parts


def _threads(attempt: Attempt | None) -> int | None:
    """The threads the load plan gave a multi-threaded tool's processes together (None: a single-threaded tool's)."""
    if not attempt or not attempt.processes or all(p["threads"] == 1 for p in attempt.processes):
        return None
    return sum(p["threads"] for p in attempt.processes)


def aggregate(server: Server, scenario: Scenario, run: LoadRun, path: str, attempts: list[Attempt], warmup: results.Warmup,
              runtime: str, round_no: int | None = None) -> Record:
    """One record per (server, scenario, run): sums of counts, the median attempt's rate and latencies, every attempt."""
    measured = [a for a in attempts if a.measured]
    median_attempt = sorted(measured, key=lambda a: a.rps)[(len(measured) - 1) // 2] if measured else None

    def sample(role: str, key: str, pick):
        values = [getattr(a.samples[role], key) for a in attempts
                  if role in a.samples and getattr(a.samples[role], key) is not None]
        return pick(values) if values else None

    record = Record(
        server=server.name,
        scenario=scenario.name,
        run=run.label,
        runtime=runtime,
        round=round_no,
        tool=scenario.tool,
        path=path,
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


def _line(label: str, a: Attempt) -> str:
    if a.failed:
        return f"  {label}: FAILED ({a.failed})"
    p99 = a.latency_ms.get("p99")
    return (f"  {label}: {a.rps:,.0f} req/s, {a.requests:,} requests in {a.duration_s:.1f} s"
            + (f", p99 {p99:.2f} ms" if p99 is not None else "")
            + (f", {a.errors.total:,} ERRORS" if a.errors.total else ", 0 errors")
            + (f"; {a.stopped}" if a.stopped else ""))
