"""One server under one load, carried out: the campaign's executor (`LoadExecutor`, what scheduler.py's `Executor` names) runs
each warm-up (warmup.py) and attempt, keeps records and evaluates flags. Which warm-ups and attempts, and in which
order, is the plan's (run_plan.py) and the rounds' (scheduler.py), not this module's.

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

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

from harness.basics import interrupt
from harness.basics.machine import timestamp
from harness.basics.messages import fail, say
from harness.config.scenarios import LoadRun, Scenario, WarmupRule
from harness.judging import capacity, flags
from harness.measuring import warmup as warming
from harness.measuring.run_plan import History, Job, WarmupStep
from harness.measuring.tool_processes import Beside, Naming, Outcome, measure
from harness.results import records as results
from harness.results.aggregate import Measured, aggregate
from harness.results.records import Attempt, Marks, Record, Sample
from harness.results.store import RunStore
from harness.runtime import RunningServer
from harness.servers.readiness import Target
from harness.servers.session import Session
from harness.tools import TOOLS, LoadSpec
from harness.tools.availability import tool_processes
from harness.tools.load_plan import plan_load
from harness.tools.output import Errors

LOG_LINES = 20  # of a dead server's log, kept and shown
AFTER_DEATH = "its remaining scenarios were skipped (a server that died is not restarted)"


@dataclass
class LoadExecutor:
    """The campaign's executor: where to run and record, who else is up meanwhile, what each server was loaded with."""

    session: Session
    store: RunStore
    round_no: int | None = None  # in a run of rounds (overhead), this campaign's round: its records carry it
    idle_pids: Callable[[str], list[int]] | None = None  # name -> pids of the servers up but idle (interleaved runs)
    status: Callable[[], str] | None = None  # the text shown beside the progress bar (the run's remaining time)
    turn: Callable[[str], None] | None = None  # before `name` is loaded, the others go to sleep (campaign.Turns)
    history: History = field(default_factory=History)
    dead: dict[str, str] = field(default_factory=dict)  # name -> why it died, for the servers that died
    _neighbours: dict[str, tuple[RunningServer, ...]] = field(default_factory=dict)
    runtime_name: str = field(init=False, default="")  # the session's runtime's, as the rounds record it

    def __post_init__(self) -> None:
        self.runtime_name = self.session.runtime.name

    @property
    def raw(self) -> Path:
        """Where the tools' outputs go: raw/, or raw/<runtime>-<round>/ in a run of rounds (the same stems recur)."""
        if self.round_no is None:
            return self.store.raw
        return self.store.raw / f"{self.session.runtime.name}-{self.round_no}"

    # -- the executor (rounds.Executor) --------------------------------------------------------------------------------
    def warm_up(self, step: WarmupStep, rule: WarmupRule) -> results.Warmup:
        return warming.warm_up(self, step, rule)

    def attempt(
        self, job: Job, n: int, repeat: int, warm_rate: float | None, position: tuple[int, int] | None
    ) -> Attempt:
        return attempt(self, job, n, repeat, warm_rate, position)

    def keep(self, job: Job, attempts: list[Attempt], warmup: results.Warmup, marks: Marks) -> Record:
        record = record_of(job, attempts, warmup, marks, self.runtime_name, self.round_no)
        self.store.put_record(record)
        return record

    def evaluate(self) -> None:
        flags.evaluate_and_save(self.store)

    def record_capacity(self) -> None:
        capacity.record(self.store)

    # -- one load ------------------------------------------------------------------------------------------------------
    def load(
        self, target: Target, tool: str, spec: LoadSpec, stem: str, label: str, what: str, expected_rps: float | None
    ) -> Outcome:
        """`what` the load is, for a death's message ("hello c100 attempt 1"); `expected_rps` sets the deadline of a
        counted load. A server found dead before the load is not loaded; one that died during it fails it."""
        if self.died(target, f"before {what}"):
            return Outcome(None, f"not run: the server had died ({self.dead[target.name]})")
        session = self.session
        if self.turn:
            self.turn(target.name)
        # the servers asleep meanwhile cannot start or end a process: their pids are read once, not at every sample
        # (each read walks /proc, and the harness's threads run on the load generator's cores)
        frozen = self.idle_pids(target.name) if self.idle_pids else None
        idle = (lambda: frozen) if frozen is not None else None
        try:
            plan = plan_load(
                tool,
                spec,
                session.plan.loadgen,
                tool_processes(tool, spec.concurrency),
                spec.processes or session.plan.loadgen_processes,
            )
        except ValueError as exc:  # a load the plan cannot divide: this attempt is not run, and says why
            return Outcome(None, f"not run: {exc}")
        with session.measuring(target.running), session.beside_load(target.running, stem):
            beside = Beside(target.running, len(target.running.cpus), idle, self.neighbours(target))
            naming = Naming(self.raw, stem, label, self.status() if self.status else "")
            outcome = measure(session.runtime, plan, naming, beside, expected_rps)
        if self.died(target, f"during {what}"):
            outcome.failure = f"the server died during this load: {self.dead[target.name]}"
        return outcome

    def neighbours(self, target: Target) -> tuple[RunningServer, ...]:
        """The servers that run on the load generator's cores while `target` is loaded: the upstream nginx where it
        has no core of its own (and is not the one measured). Looked up once per target: the state is read from
        disk, and this is asked before every load."""
        if target.name not in self._neighbours:
            session = self.session
            upstream = session.running().get(session.upstream.name) if session.upstream else None
            shares = upstream is not None and bool(set(upstream.cpus) & set(session.plan.loadgen))
            self._neighbours[target.name] = (upstream,) if upstream and shares and upstream.name != target.name else ()
        return self._neighbours[target.name]

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
        entry["deaths"] = [
            *entry.get("deaths", []),
            {"when": when, "reason": reason, "log_tail": log, "then": AFTER_DEATH},
        ]
        self.store.set_server(target.name, entry)
        return True


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


def attempt(
    bench: LoadExecutor,
    job: Job,
    n: int,
    repeat: int,
    warm_rate: float | None,
    round_position: tuple[int, int] | None = None,
) -> Attempt:
    """One measured attempt, recorded; `round_position` = (position, servers) in an interleaved round."""
    interrupt.check()
    target, scenario, run = cast(Target, job.target), job.scenario, job.run
    url = target.running.url(scenario.protocol_of(run)) + (scenario.path_for(job.server) or "")  # a job has a path
    label = f"{job.name} {job.label}" + (f" #{n}" if repeat > 1 else "")
    started = time.time()
    spec: LoadSpec | None
    try:
        spec = attempt_spec(scenario, run, url, warm_rate)
    except ValueError as exc:  # a rate share of a warm-up that measured nothing
        spec, outcome = None, Outcome(None, f"not run: {exc}")
    else:
        outcome = bench.load(
            target,
            scenario.tool,
            spec,
            f"{job.name}-{scenario.name}-{run.label}-{n}",
            label,
            f"{job.label} attempt {n}",
            warm_rate,
        )
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
        latency_histogram=m.distribution.encode() if m and m.distribution else None,
    )


def _processes(outcome: Outcome) -> list[dict[str, Any]]:
    """Each tool process of the attempt: its cores, threads, the cores it can keep busy, its CPU seconds, and where it
    was split, its start after the first's and its own duration (one clock: the harness's)."""
    if not outcome.plan or not outcome.commands:
        return []
    parts = outcome.plan.describe()[: len(outcome.commands)]
    cpus: list[float | None] = [*outcome.parts_cpu_s] if outcome.parts_cpu_s else [None] * len(parts)
    for part, cpu_s in zip(parts, cpus):
        part["cpu_s"] = cpu_s
    if len(parts) > 1 and len(outcome.parts_duration_s) == len(parts):
        for part, started, duration in zip(parts, outcome.parts_started_s, outcome.parts_duration_s):
            part.update(started_s=started, duration_s=round(duration, 4))
    return parts


def _line(label: str, a: Attempt) -> str:
    if a.failed:
        return f"  {label}: FAILED ({a.failed})"
    p99 = a.latency_ms.get("p99")
    return (
        f"  {label}: {a.rps:,.0f} req/s, {a.requests:,} requests in {a.duration_s:.1f} s"
        + (f", p99 {p99:.2f} ms" if p99 is not None else "")
        + (f", {a.errors.total:,} ERRORS" if a.errors.total else ", 0 errors")
        + (f"; {a.stopped}" if a.stopped else "")
    )


def record_of(
    job: Job, attempts: list[Attempt], warmup: results.Warmup, marks: Marks, runtime: str, round_no: int | None
) -> Record:
    """`job`'s record made of its attempts so far (results/aggregate.py), with what the rounds say of it."""
    of = Measured(job.name, job.scenario.path_for(job.server), runtime, round_no)
    return marks.put_on(aggregate(of, job.scenario, job.run, attempts, warmup))
